/*
 * signal-stress: several threads emit numbered events at full speed while a
 * timer signal interrupts them and its handler emits numbered events too, on
 * the same per-CPU buffers (tests/stress_test.py checks that each event is
 * read back exactly once or counted as lost).
 * Usage: signal-stress THREADS EVENTS_PER_THREAD
 * Prints: emitted THREAD_EVENTS SIGNAL_EVENTS
 */
#define _GNU_SOURCE
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

TRACERY_EVENT(stress, thread, TRACERY_U32(source), TRACERY_U64(seq))
TRACERY_EVENT(stress, signal, TRACERY_U64(seq))

static atomic_uint_fast64_t signal_seq;
static uint64_t events_per_thread;
static pthread_barrier_t ready;

static void on_timer(int sig)
{
	(void)sig;
	/* One counter for all handlers: each number is emitted exactly once. */
	uint64_t seq = atomic_fetch_add(&signal_seq, 1);
	TRACERY_EMIT(stress, signal, seq);
}

static void *worker(void *arg)
{
	uint32_t source = (uint32_t)(uintptr_t)arg;
	TRACERY_EMIT(stress, thread, source, 0); /* first event outside the handler */
	pthread_barrier_wait(&ready);
	/* Not before the timer has fired once: a main thread preempted before
	 * setitimer() would otherwise let the threads finish without a signal. */
	while (atomic_load(&signal_seq) == 0)
		sched_yield();
	for (uint64_t i = 1; i < events_per_thread; i++)
		TRACERY_EMIT(stress, thread, source, i);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: signal-stress THREADS EVENTS_PER_THREAD\n");
		return 2;
	}
	unsigned threads = (unsigned)strtoul(argv[1], NULL, 10);
	events_per_thread = strtoull(argv[2], NULL, 10);
	if (threads == 0 || threads > 64 || events_per_thread == 0) {
		fprintf(stderr, "signal-stress: need 1..64 threads and at least one event\n");
		return 2;
	}
	struct sigaction sa = {.sa_handler = on_timer, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	pthread_barrier_init(&ready, NULL, threads + 1);
	pthread_t t[64];
	for (unsigned i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	pthread_barrier_wait(&ready);
	struct itimerval every = {{0, 200}, {0, 200}}; /* 200 us */
	setitimer(ITIMER_REAL, &every, NULL);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("emitted %llu %llu\n", (unsigned long long)(threads * events_per_thread),
	       (unsigned long long)atomic_load(&signal_seq));
	return 0;
}
