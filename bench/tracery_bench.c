/*
 * tracery-bench <events_per_thread> <threads> <ev|str|none>
 *
 * Emits bench:ev (a = loop counter, b = 42) or bench:str (s = "hello tracer",
 * b = 42) in a tight loop on each thread, or runs the empty loop (none). Each
 * thread times its own loop with CLOCK_MONOTONIC after a common barrier and
 * prints one line; the last line sums up the run:
 *   TOTAL threads T events N wall_ns W ns_per_event_mean M ns_per_event_max X events_per_s E maxrss_kb R
 * Whether events are recorded is decided outside: TRACERY_OUTPUT (daemonless
 * mode) or a session of the daemon.
 */
#define _GNU_SOURCE
#define TRACERY_CREATE_EVENTS
#include "bench_events.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum mode { MODE_EV, MODE_STR, MODE_NONE };

struct worker {
	pthread_t thread;
	int index;
	uint64_t events;
	enum mode mode;
	pthread_barrier_t *barrier;
	uint64_t start_ns, end_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	pthread_barrier_wait(w->barrier);
	w->start_ns = now_ns();
	switch (w->mode) {
	case MODE_EV:
		for (uint64_t i = 0; i < w->events; i++)
			TRACERY_EMIT(bench, ev, i, 42);
		break;
	case MODE_STR:
		for (uint64_t i = 0; i < w->events; i++)
			TRACERY_EMIT(bench, str, "hello tracer", 42);
		break;
	case MODE_NONE:
		for (uint64_t i = 0; i < w->events; i++)
			__asm__ volatile("" ::: "memory");
		break;
	}
	w->end_ns = now_ns();
	return NULL;
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-' || end == s)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t events, threads;
	enum mode mode;
	if (argc != 4) {
		fprintf(stderr, "usage: tracery-bench <events_per_thread> <threads> <ev|str|none>\n");
		return 2;
	}
	if (parse_count(argv[1], &events)) {
		fprintf(stderr, "tracery-bench: events_per_thread '%s' is not a number: give a count such as 1000000\n", argv[1]);
		return 2;
	}
	if (parse_count(argv[2], &threads) || threads == 0 || threads > 1024) {
		fprintf(stderr, "tracery-bench: threads '%s' is not valid: give 1 to 1024\n", argv[2]);
		return 2;
	}
	if (!strcmp(argv[3], "ev"))
		mode = MODE_EV;
	else if (!strcmp(argv[3], "str"))
		mode = MODE_STR;
	else if (!strcmp(argv[3], "none"))
		mode = MODE_NONE;
	else {
		fprintf(stderr, "tracery-bench: event kind '%s' is not valid: use ev, str or none\n", argv[3]);
		return 2;
	}

	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, (unsigned)threads);
	struct worker *w = calloc(threads, sizeof *w);
	if (!w)
		return 1;
	for (uint64_t t = 0; t < threads; t++) {
		w[t] = (struct worker){.index = (int)t, .events = events, .mode = mode, .barrier = &barrier};
		if (pthread_create(&w[t].thread, NULL, run, &w[t])) {
			fprintf(stderr, "tracery-bench: cannot start thread %d\n", (int)t);
			return 1;
		}
	}
	uint64_t first = UINT64_MAX, last = 0;
	double sum_ns_per_event = 0, max_ns_per_event = 0;
	for (uint64_t t = 0; t < threads; t++) {
		pthread_join(w[t].thread, NULL);
		uint64_t ns = w[t].end_ns - w[t].start_ns;
		double per = events ? (double)ns / (double)events : 0.0;
		printf("thread %d events %llu ns %llu ns_per_event %.2f\n", w[t].index, (unsigned long long)events,
		       (unsigned long long)ns, per);
		sum_ns_per_event += per;
		if (per > max_ns_per_event)
			max_ns_per_event = per;
		if (w[t].start_ns < first)
			first = w[t].start_ns;
		if (w[t].end_ns > last)
			last = w[t].end_ns;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	uint64_t total = events * threads;
	uint64_t wall = last - first;
	printf("TOTAL threads %llu events %llu wall_ns %llu ns_per_event_mean %.2f ns_per_event_max %.2f "
	       "events_per_s %.0f maxrss_kb %ld\n",
	       (unsigned long long)threads, (unsigned long long)total, (unsigned long long)wall,
	       sum_ns_per_event / (double)threads, max_ns_per_event,
	       wall ? (double)total * 1e9 / (double)wall : 0.0, ru.ru_maxrss);
	free(w);
	pthread_barrier_destroy(&barrier);
	return 0;
}
