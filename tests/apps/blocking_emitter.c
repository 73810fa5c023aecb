/*
 * blocking-emitter: the traced program of tests/blocking_test.py, for
 * channels whose emitters wait for space (--blocking-timeout). Prints
 * "ready PID" first, "done" at the end.
 *   blocking-emitter threads T N   T threads each emit N blocking:seq
 *                                  (thread = 0..T-1, i = 0..N-1) at full speed
 *   blocking-emitter signal N      a SIGUSR1 handler emits N blocking:seq
 *                                  (thread 0), raised once: a signal handler,
 *                                  which never waits
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TRACERY_EVENT(blocking, seq, TRACERY_U32(thread), TRACERY_U64(i))

static uint64_t g_count;

static void *emit_all(void *arg)
{
	const uint32_t thread = (uint32_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < g_count; i++)
		TRACERY_EMIT(blocking, seq, thread, i);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	emit_all(NULL);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: blocking-emitter threads T N | signal N\n");
		return 2;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (!strcmp(argv[1], "signal")) {
		g_count = strtoull(argv[2], NULL, 10);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_usr1;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL) != 0 || raise(SIGUSR1) != 0)
			return 1;
	} else if (!strcmp(argv[1], "threads") && argc == 4) {
		const unsigned threads = (unsigned)strtoul(argv[2], NULL, 10);
		g_count = strtoull(argv[3], NULL, 10);
		pthread_t tids[64];
		if (threads == 0 || threads > 64)
			return 2;
		for (unsigned t = 0; t < threads; t++)
			if (pthread_create(&tids[t], NULL, emit_all, (void *)(uintptr_t)t) != 0)
				return 1;
		for (unsigned t = 0; t < threads; t++)
			pthread_join(tids[t], NULL);
	} else {
		return 2;
	}
	printf("done\n");
	fflush(stdout);
	return 0;
}
