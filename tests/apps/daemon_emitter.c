/*
 * daemon-emitter: an instrumented program driven by the session daemon tests
 * (tests/daemon_test.py). Every mode prints "ready PID" first.
 *   daemon-emitter count N [wait]   emits N emit:tick and N emit:other (tag "fizz"
 *                                   when i % 3 == 0, else "buzz"; after a
 *                                   line on stdin if "wait"), prints "done N", exits
 *   daemon-emitter hold N           emits N emit:tick, prints "done N", then
 *                                   sleeps until killed (SIGKILL test)
 *   daemon-emitter spin SECONDS     emits emit:tick at full speed for SECONDS,
 *                                   prints "done COUNT", exits 0
 *   daemon-emitter exec PROG ARGS   emits one emit:tick, then execs PROG
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TRACERY_EVENT(emit, tick, TRACERY_U64(i))
TRACERY_EVENT(emit, other, TRACERY_U64(i), TRACERY_STRING(tag))

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: daemon-emitter count N [wait] | hold N | spin SECONDS | exec PROG ARGS...\n");
		return 2;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	const char *mode = argv[1];
	if (!strcmp(mode, "exec")) {
		TRACERY_EMIT(emit, tick, 0);
		execv(argv[2], argv + 2);
		perror("execv");
		return 1;
	}
	if (!strcmp(mode, "spin")) {
		double end = now_s() + atof(argv[2]);
		uint64_t n = 0;
		while (now_s() < end)
			for (int k = 0; k < 1000; k++)
				TRACERY_EMIT(emit, tick, n++);
		printf("done %llu\n", (unsigned long long)n);
		return 0;
	}
	uint64_t n = strtoull(argv[2], NULL, 10);
	if (argc > 3 && !strcmp(argv[3], "wait")) {
		char line[16];
		if (!fgets(line, sizeof line, stdin))
			return 1;
	}
	const int hold = !strcmp(mode, "hold");
	for (uint64_t i = 0; i < n; i++) {
		TRACERY_EMIT(emit, tick, i);
		if (!hold)
			TRACERY_EMIT(emit, other, i, i % 3 == 0 ? "fizz" : "buzz");
	}
	printf("done %llu\n", (unsigned long long)n);
	fflush(stdout);
	if (hold)
		for (;;)
			pause();
	return 0;
}
