/*
 * request-app: a server's requests as the trigger tests see them
 * (tests/triggers_test.py): each emits app:request with its number (id, from
 * 0), its duration in milliseconds (ms) and its path ("/r<id>"). Prints
 * "ready PID" first, then waits for a line on stdin before each burst.
 *   request-app MS,MS,... [MS,...]...   a burst per argument, one request per
 *                                        MS; prints "burst K" after the K-th
 *   request-app flood N                  one burst of N requests of 1 ms, as
 *                                        fast as it can; prints "burst 1"
 * After the last burst it waits for the end of stdin, then exits 0: its
 * buffers and its link to the daemon stay while the test looks.
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TRACERY_EVENT(app, request, TRACERY_U64(id), TRACERY_U32(ms), TRACERY_STRING(path))

static uint64_t next_id;

static void request(uint32_t ms)
{
	char path[32];
	snprintf(path, sizeof path, "/r%llu", (unsigned long long)next_id);
	TRACERY_EMIT(app, request, next_id, ms, path);
	next_id++;
}

static int wait_line(void)
{
	char line[64];
	return fgets(line, sizeof line, stdin) != NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: request-app MS,MS,... [MS,...]... | flood N\n");
		return 2;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (strcmp(argv[1], "flood") == 0) {
		const unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
		if (!wait_line())
			return 1;
		for (unsigned long i = 0; i < n; i++)
			request(1);
		printf("burst 1\n");
		fflush(stdout);
	} else {
		for (int k = 1; k < argc; k++) {
			if (!wait_line())
				return 1;
			for (char *p = argv[k]; *p;) {
				char *end;
				const unsigned long ms = strtoul(p, &end, 10);
				if (end == p)
					return 2;
				request((uint32_t)ms);
				p = *end == ',' ? end + 1 : end;
			}
			printf("burst %d\n", k);
			fflush(stdout);
		}
	}
	while (wait_line())
		;
	return 0;
}
