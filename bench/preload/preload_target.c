/*
 * preload-target: the unmodified program that bench/preload-helpers runs with
 * no helper, with Tracery's and with LTTng-UST's: N times one operation after
 * N/10 uncounted ones, timed with CLOCK_MONOTONIC in batches of 100,000 (about
 * a millisecond each).
 *
 *   preload-target malloc N    malloc(64) then free, N pairs
 *   preload-target mutex N     pthread_mutex_lock then unlock, N pairs
 *
 * Prints "ns_per_pair X", X the median batch's time per pair: on a machine
 * shared with other work, the batches in which the scheduler ran something
 * else are the slow ones, and the median leaves them out where a mean over
 * the whole run would count them. Built with -fno-builtin so that GCC keeps
 * every malloc and free (it may drop a pair whose block is never used).
 *
 * A second thread, idle, runs from the start in every run: glibc gives a
 * process with one thread mutexes without atomic instructions, and takes
 * them back once any thread starts, a tracer's control thread included
 * (libtracery's, LTTng-UST's listeners). The program measured is one with
 * threads, as one whose locks are worth tracing is, so that the rows differ
 * by the helper alone (docs/performance.md gives the single thread's cost).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static void malloc_pairs(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(64);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
}

static void mutex_pairs(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&mutex);
		pthread_mutex_unlock(&mutex);
	}
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

enum { BATCH = 100000, MAX_BATCHES = 10000 };

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	void (*pairs)(long) = NULL;
	if (argc == 3 && strcmp(argv[1], "malloc") == 0)
		pairs = malloc_pairs;
	else if (argc == 3 && strcmp(argv[1], "mutex") == 0)
		pairs = mutex_pairs;
	if (!pairs || n <= 0 || n > (long)BATCH * MAX_BATCHES) {
		fprintf(stderr, "usage: preload-target malloc|mutex N (N from 1 to %ld)\n", (long)BATCH * MAX_BATCHES);
		return 2;
	}
	pthread_t idler;
	if (pthread_create(&idler, NULL, idle, NULL) != 0) {
		fprintf(stderr, "preload-target: pthread_create failed\n");
		return 1;
	}
	static double per_pair[MAX_BATCHES];
	pairs(n / 10);
	size_t batches = 0;
	for (long done = 0; done < n; done += BATCH) {
		long count = n - done < BATCH ? n - done : BATCH;
		double start = now_ns();
		pairs(count);
		per_pair[batches++] = (now_ns() - start) / (double)count;
	}
	qsort(per_pair, batches, sizeof per_pair[0], by_value);
	printf("ns_per_pair %.3f\n", per_pair[batches / 2]);
	return 0;
}
