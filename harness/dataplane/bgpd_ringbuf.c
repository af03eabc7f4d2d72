/* bgpd's receive rings without their pages: FRR 8.4's ringbuf_wipe, same result, fewer pages.
 *
 * FRR 8.4 (Debian 12) gives every BGP peer a 640 KiB receive ring and wipes it with memset in
 * bgp_stop (each failed connection attempt) and when an accepted connection takes over a peer:
 * every page of every ring becomes resident, all zeros (1.3 GB of bgpd's 2.2 GB at xlarge).
 * Preloaded into bgpd, this ringbuf_wipe gives the ring's whole pages back to the kernel
 * (madvise MADV_DONTNEED: a private anonymous page then reads as zero, as after memset) and
 * clears only the partial pages at its ends, then resets the ring as FRR's own does.
 * The layout is FRR's lib/ringbuf.h, unchanged from 3.0 to 10.x. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

struct ringbuf {
	size_t size;
	ssize_t start;
	ssize_t end;
	bool empty;
	uint8_t *data;
};

void ringbuf_wipe(struct ringbuf *buf)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)buf->data, hi = lo + buf->size;
	uintptr_t first = (lo + page - 1) & ~(page - 1), last = hi & ~(page - 1);

	/* A private anonymous page dropped reads as zeros; a shared one would keep its bytes, so
	 * a byte made non-zero first says which this was. */
	if (last > first) {
		*(volatile uint8_t *)first = 1;
		if (madvise((void *)first, last - first, MADV_DONTNEED) == 0 && *(volatile uint8_t *)first == 0) {
			memset(buf->data, 0, first - lo);
			memset((void *)last, 0, hi - last);
			goto reset;
		}
	}
	memset(buf->data, 0, buf->size);
reset:
	buf->start = 0;
	buf->end = 0;
	buf->empty = true;
}
