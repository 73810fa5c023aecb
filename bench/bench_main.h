/*
 * bench_main.h — the harness shared by the whole-tracer benchmarks
 * (tracery-bench and its LTTng-UST twin lttng-bench): arguments, threads,
 * barrier, timing and the report. Only the emitting loop differs.
 *
 *   PROG <events_per_thread> <threads> <ev|str|none> [<events_per_second_per_thread>]
 *
 * With a rate, each thread is paced: it emits bursts of BENCH_BURST events and
 * after each waits (sleeping, then spinning the last 50 us) until the schedule
 * start + emitted / rate; a thread that falls behind does not wait. Without
 * one, the loop runs at full speed.
 *
 * The includer defines, before or after including this header,
 *
 *   static void bench_loop(enum bench_kind kind, uint64_t events);
 *
 * which emits `events` events of kind BENCH_EV (a = loop counter, b = 42) or
 * BENCH_STR (s = "hello tracer", b = 42) in a tight loop; BENCH_NONE (the empty
 * loop) is run here. main() is then `return bench_main("PROG", argc, argv);`.
 *
 * Each thread times its own loop with CLOCK_MONOTONIC after a common barrier
 * and prints one line; the last line sums up the run:
 *   TOTAL threads T events N wall_ns W ns_per_event_mean M ns_per_event_max X events_per_s E maxrss_kb R
 * Whether events are recorded is decided outside (environment or a session).
 *
 * Include once, in the program's main translation unit (everything is static);
 * C or C++ (floor-bench, bench/floor_bench.cpp).
 */
#ifndef TRACERY_BENCH_MAIN_H
#define TRACERY_BENCH_MAIN_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum bench_kind { BENCH_EV, BENCH_STR, BENCH_NONE };

/* Defined by the includer; always inlined into the timed region. */
static inline __attribute__((always_inline)) void bench_loop(enum bench_kind kind, uint64_t events);

struct bench_worker {
	pthread_t thread;
	int index;
	uint64_t events;
	enum bench_kind kind;
	uint64_t rate; /* events per second, 0: full speed */
	pthread_barrier_t *barrier;
	uint64_t start_ns, end_ns;
};

static uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum { BENCH_BURST = 1000 };

/* Emits w->events events in bursts, each burst due at start + emitted / rate. */
static void bench_paced(struct bench_worker *w)
{
	for (uint64_t done = 0; done < w->events;) {
		uint64_t n = w->events - done < (uint64_t)BENCH_BURST ? w->events - done : (uint64_t)BENCH_BURST;
		bench_loop(w->kind, n);
		done += n;
		uint64_t due = w->start_ns + (uint64_t)((double)done * 1e9 / (double)w->rate);
		uint64_t now = bench_now_ns();
		if (due > now + 50000) {
			struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(due - now - 50000)};
			while (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			nanosleep(&ts, NULL);
		}
		while (bench_now_ns() < due)
			__asm__ volatile("pause");
	}
}

static void *bench_run(void *arg)
{
	struct bench_worker *w = (struct bench_worker *)arg;
	pthread_barrier_wait(w->barrier);
	w->start_ns = bench_now_ns();
	if (w->rate && w->kind != BENCH_NONE) {
		bench_paced(w);
	} else if (w->kind == BENCH_NONE) {
		for (uint64_t i = 0; i < w->events; i++)
			__asm__ volatile("" ::: "memory");
	} else {
		bench_loop(w->kind, w->events);
	}
	w->end_ns = bench_now_ns();
	return NULL;
}

static int bench_parse_count(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-' || end == s)
		return -1;
	*out = v;
	return 0;
}

static int bench_main(const char *prog, int argc, char **argv)
{
	uint64_t events, threads, rate = 0;
	enum bench_kind kind;
	if (argc != 4 && argc != 5) {
		fprintf(stderr,
		        "usage: %s <events_per_thread> <threads> <ev|str|none> [<events_per_second_per_thread>]\n",
		        prog);
		return 2;
	}
	if (argc == 5 && (bench_parse_count(argv[4], &rate) || rate == 0)) {
		fprintf(stderr, "%s: rate '%s' is not valid: give events per second per thread, such as 2000000\n",
		        prog, argv[4]);
		return 2;
	}
	if (bench_parse_count(argv[1], &events)) {
		fprintf(stderr, "%s: events_per_thread '%s' is not a number: give a count such as 1000000\n", prog,
		        argv[1]);
		return 2;
	}
	if (bench_parse_count(argv[2], &threads) || threads == 0 || threads > 1024) {
		fprintf(stderr, "%s: threads '%s' is not valid: give 1 to 1024\n", prog, argv[2]);
		return 2;
	}
	if (!strcmp(argv[3], "ev"))
		kind = BENCH_EV;
	else if (!strcmp(argv[3], "str"))
		kind = BENCH_STR;
	else if (!strcmp(argv[3], "none"))
		kind = BENCH_NONE;
	else {
		fprintf(stderr, "%s: event kind '%s' is not valid: use ev, str or none\n", prog, argv[3]);
		return 2;
	}

	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, (unsigned)threads);
	struct bench_worker *w = (struct bench_worker *)calloc(threads, sizeof *w);
	if (!w)
		return 1;
	for (uint64_t t = 0; t < threads; t++) {
		w[t].index = (int)t;
		w[t].events = events;
		w[t].kind = kind;
		w[t].rate = rate;
		w[t].barrier = &barrier;
		if (pthread_create(&w[t].thread, NULL, bench_run, &w[t])) {
			fprintf(stderr, "%s: cannot start thread %d\n", prog, (int)t);
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
	       sum_ns_per_event / (double)threads, max_ns_per_event, wall ? (double)total * 1e9 / (double)wall : 0.0,
	       ru.ru_maxrss);
	free(w);
	pthread_barrier_destroy(&barrier);
	return 0;
}

#endif /* TRACERY_BENCH_MAIN_H */
