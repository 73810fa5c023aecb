/*
 * threaded-calls: the program of preload_func_test and the function section
 * of bench/preload-helpers, built by them with -finstrument-functions (it
 * links no libtracery: the function helpers trace it from LD_PRELOAD).
 *   threaded-calls N     four threads (the main one and three more); thread
 *                      t calls leaf() N * (t + 1) times and fib(12)
 *                      (recursive: 465 calls) once; prints the sum
 * Every function here is instrumented: main, worker, leaf, fib.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static long sink; /* added to by every thread at once: atomically */

static long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static void leaf(long i) { __atomic_fetch_add(&sink, i, __ATOMIC_RELAXED); }

static void *worker(void *arg)
{
	const long n = (long)arg;
	for (long i = 0; i < n; i++)
		leaf(i);
	__atomic_fetch_add(&sink, fib(12), __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: instrumented-calls N\n");
		return 2;
	}
	const long n = atol(argv[1]);
	pthread_t threads[THREADS - 1];
	for (long t = 1; t < THREADS; t++)
		if (pthread_create(&threads[t - 1], NULL, worker, (void *)(n * (t + 1))) != 0) {
			perror("pthread_create");
			return 1;
		}
	worker((void *)n);
	for (int t = 1; t < THREADS; t++)
		pthread_join(threads[t - 1], NULL);
	printf("%ld\n", __atomic_load_n(&sink, __ATOMIC_RELAXED));
	return 0;
}
