/*
 * early-events: a program whose events begin before main (tests/startup_test.py).
 * Its constructor emits early:ctor and the first line of main early:main (each
 * with the pid). Given N, it then prints "ready PID", waits for a line on
 * stdin, emits N early:late (i = 0..N-1), prints "done N" and exits.
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

TRACERY_EVENT(early, ctor, TRACERY_U32(pid))
TRACERY_EVENT(early, main, TRACERY_U32(pid))
TRACERY_EVENT(early, late, TRACERY_U32(i))

/* Defined after the header's constructor, which registers this file's events: it runs after it. */
__attribute__((constructor)) static void early_constructor(void) { TRACERY_EMIT(early, ctor, (uint32_t)getpid()); }

int main(int argc, char **argv)
{
	TRACERY_EMIT(early, main, (uint32_t)getpid());
	if (argc < 2)
		return 0;
	const uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	for (uint32_t i = 0; i < n; i++)
		TRACERY_EMIT(early, late, i);
	printf("done %u\n", n);
	return 0;
}
