/* The heap an FRR daemon has freed handed back to the kernel while it runs.
 *
 * glibc gives freed memory back to the kernel only from the top of a heap; what is freed below
 * a chunk still in use stays resident. zebra allocates per route and per dataplane update as a
 * burst of routes arrives and frees most of it once they are in the kernel: on xlarge a leaf's
 * zebra held 24 MB resident of which 18 MB were free heap, 14 MB of it given back by one
 * malloc_trim(0) (measured with gdb on a converged lab), about 1 GB over the lab's zebras.
 *
 * Preloaded into an FRR daemon, this starts one thread that every TRIM_EVERY_S seconds calls
 * malloc_trim(0) if the heap holds TRIM_FREE_BYTES free (mallinfo2) and, since the last trim,
 * either the free heap or the process's resident memory grew by as much from its lowest: a
 * burst allocated and freed between two looks is seen, a heap already trimmed is not walked
 * again. The thread blocks every signal (the
 * daemon's own threads take them, as FRR expects) and touches nothing of FRR's.
 * It starts only in the programs named in FABLAB_TRIM (comma-separated), so the `nice` and
 * `nsenter` that exec the daemon with the same environment start nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRIM_EVERY_S 1
#define TRIM_FREE_BYTES (2L << 20)

extern char *program_invocation_short_name;

static long resident_pages(void)
{
	long size = 0, resident = -1;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &resident) != 2)
			resident = -1;
		fclose(f);
	}
	return resident;
}

static void *trimmer(void *unused)
{
	long page = sysconf(_SC_PAGESIZE), rss_low = resident_pages();
	size_t free_low = mallinfo2().fordblks;
	struct timespec every;

	(void)unused;
	for (;;) {
		struct mallinfo2 m = mallinfo2();
		long rss = resident_pages();

		if (rss >= 0 && rss < rss_low)
			rss_low = rss;
		if (m.fordblks < free_low)
			free_low = m.fordblks;
		/* more of the heap free than at its lowest since the last trim (what was freed is
		 * resident), or resident memory grown while the heap holds that much free (a burst
		 * allocated and freed between two looks) */
		if (m.fordblks >= TRIM_FREE_BYTES
		    && (m.fordblks - free_low >= TRIM_FREE_BYTES || (rss - rss_low) * page >= TRIM_FREE_BYTES)) {
			malloc_trim(0);
			rss_low = resident_pages();
			free_low = mallinfo2().fordblks;
		}
		every.tv_sec = TRIM_EVERY_S;
		every.tv_nsec = 0;
		while (nanosleep(&every, &every) != 0 && errno == EINTR)
			;
	}
	return NULL;
}

static int wanted(void)
{
	const char *names = getenv("FABLAB_TRIM");
	size_t len = strlen(program_invocation_short_name);

	for (const char *p = names; p && *p;) {
		const char *end = strchrnul(p, ',');

		if ((size_t)(end - p) == len && strncmp(p, program_invocation_short_name, len) == 0)
			return 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

__attribute__((constructor)) static void start(void)
{
	pthread_attr_t attr;
	pthread_t thread;
	sigset_t all, before;

	if (!wanted())
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &before); /* the thread inherits a mask that blocks all */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (pthread_create(&thread, &attr, trimmer, NULL) == 0)
		pthread_setname_np(thread, "fablab-trim");
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
}
