/* A program built with -finstrument-functions and linked with no libtracery:
   the function tracing helpers record its every call from LD_PRELOAD. Two
   threads and main make recursive and nested calls whose counts follow from
   the argument (tests/instrumented_calls.py counts them), so that `tracery
   analyze calls` can be checked against uftrace's report of the same binary
   and bench/preload-helpers can divide a time by them; each worker adds its
   sum under a mutex, a lock call site in a named function for `tracery
   analyze locks --symbols`. Built by tests/CMakeLists.txt (without PIE, -O2),
   by preload_func_test (PIE, -O0) and by the bench (-O2). Usage:
   instrumented-calls [ROUNDS] (default 20). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static long leaf(long x) { return x * 3 + 1; }

__attribute__((noinline)) static long fib(long n) { return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2); }

__attribute__((noinline)) static long inner(long i) { return leaf(i) + leaf(i + 1); }

__attribute__((noinline)) static long outer(long i) { return inner(i) + fib(5); }

static void *worker(void *arg)
{
	const long rounds = *(const long *)arg;
	long sum = 0;
	for (long i = 0; i < rounds; ++i)
		sum += fib(10) + outer(i);
	pthread_mutex_lock(&sink_lock);
	sink += sum;
	pthread_mutex_unlock(&sink_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
	if (rounds < 0 || rounds > 100000) {
		fprintf(stderr, "instrumented-calls: ROUNDS must be 0..100000\n");
		return 2;
	}
	pthread_t threads[2];
	for (int t = 0; t < 2; ++t)
		if (pthread_create(&threads[t], NULL, worker, &rounds) != 0) {
			fprintf(stderr, "instrumented-calls: pthread_create failed\n");
			return 1;
		}
	long sum = fib(12) + outer(rounds);
	for (int t = 0; t < 2; ++t)
		pthread_join(threads[t], NULL);
	printf("%ld %ld\n", sum, (long)sink);
	return 0;
}
