/* zebra's route processing, when its dataplane queue is full, looks again every 10 ms, not 1 ms.
 *
 * zebra hands route updates to its dataplane thread through a queue of at most 200. Once that is
 * full its route work queue ("route_node processing") returns WQ_QUEUE_BLOCKED and libfrr
 * schedules it again after spec.retry ms, which FRR 8.4 sets to 1 (ZEBRA_RIB_PROCESS_RETRY_TIME):
 * on a busy machine the timer has always expired when zebra next runs, so it never sleeps. While
 * xlarge converged about 60 leaves' zebras did so at once (1.4 cores for 15 s, in ppoll, almost no
 * voluntary context switches) and the kernel route inserts they were waiting for starved.
 *
 * Preloaded into zebra, this work_queue_new (zebra calls libfrr's through its dynamic symbols)
 * remembers that queue; a short-lived thread then waits for zebra to fill in its spec and sets
 * retry to RETRY_MS, only if the spec is FRR 8.4's as expected (retry 1, hold 10, max_retries 3,
 * the queue's name): FRR's lib/workqueue.h calls the spec public, "may be modified at will".
 * It says what it did on stderr (the daemon's daemons.out). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUE "route_node processing"
#define RETRY_MS 10
#define WAIT_S 10

/* FRR's struct work_queue (lib/workqueue.h, unchanged from 7.2 to 8.5) up to spec.retry */
struct work_queue_head {
	void *master, *thread;
	char *name;
	struct {
		void *data, *workfunc, *errorfunc, *del_item_data, *completion_func;
		unsigned int max_retries, hold;
		unsigned long yield;
		uint32_t retry;
	} spec;
};

static struct work_queue_head *volatile ribq;

static int as_expected(const struct work_queue_head *q)
{
	return q->spec.retry == 1 && q->spec.hold == 10 && q->spec.max_retries == 3 && q->name
	       && strcmp(q->name, QUEUE) == 0;
}

static void *set_retry(void *unused)
{
	struct timespec step = {0, 10 * 1000 * 1000};
	const char *v = getenv("FABLAB_RIBQ_RETRY_MS");
	uint32_t ms = v && atoi(v) > 0 ? (uint32_t)atoi(v) : RETRY_MS;

	(void)unused;
	for (int i = 0; i < WAIT_S * 100; i++) {
		if (as_expected(ribq)) {
			__atomic_store_n(&ribq->spec.retry, ms, __ATOMIC_RELAXED);
			fprintf(stderr, "fablab: zebra's route queue, when blocked, retried every %u ms (was 1)\n", ms);
			return NULL;
		}
		nanosleep(&step, NULL);
	}
	fprintf(stderr, "fablab: zebra's route queue is not FRR 8.4's as expected: its retry left as it was\n");
	return NULL;
}

void *work_queue_new(void *master, const char *name)
{
	static void *(*real)(void *, const char *);
	void *wq;

	if (!real)
		real = (void *(*)(void *, const char *))dlsym(RTLD_NEXT, "work_queue_new");
	wq = real(master, name);
	if (wq && name && strcmp(name, QUEUE) == 0 && !ribq) {
		pthread_t thread;
		sigset_t all, before;

		ribq = wq;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &before); /* the thread takes none of zebra's signals */
		if (pthread_create(&thread, NULL, set_retry, NULL) == 0)
			pthread_detach(thread);
		pthread_sigmask(SIG_SETMASK, &before, NULL);
	}
	return wq;
}
