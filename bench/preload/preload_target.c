/*
 * preload-target: the unmodified program that bench/preload-helpers runs with
 * no helper, with Tracery's and with LTTng-UST's: N times one operation, timed
 * with CLOCK_MONOTONIC around the loop, after N/10 uncounted ones.
 *
 *   preload-target malloc N    malloc(64) then free, N pairs
 *   preload-target mutex N     pthread_mutex_lock then unlock, N pairs
 *
 * Prints "ns_per_pair X". Built with -fno-builtin so that GCC keeps every
 * malloc and free (it may drop a pair whose block is never used).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
	void (*pairs)(long) = NULL;
	if (argc == 3 && strcmp(argv[1], "malloc") == 0)
		pairs = malloc_pairs;
	else if (argc == 3 && strcmp(argv[1], "mutex") == 0)
		pairs = mutex_pairs;
	if (!pairs || n <= 0) {
		fprintf(stderr, "usage: preload-target malloc|mutex N\n");
		return 2;
	}
	pairs(n / 10);
	double start = now_ns();
	pairs(n);
	printf("ns_per_pair %.3f\n", (now_ns() - start) / (double)n);
	return 0;
}
