/*
 * kernel-workload: the traced program of the kernel session test
 * (src/kernel/kernel_session_test.cpp). Prints "ready PID", waits for a line
 * on stdin, then makes N getpid system calls, each right after an emitted
 * kw:before_getpid event, and M round trips between two threads named
 * "kw-ping" and "kw-pong" through two pipes (each one a context switch);
 * prints "done" and exits.
 * Usage: kernel-workload N M
 */
#define _GNU_SOURCE
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

TRACERY_EVENT(kw, before_getpid, TRACERY_U64(i))

static int g_to_pong[2], g_to_ping[2];
static long g_rounds;

static void *pong(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "kw-pong");
	char c;
	for (long i = 0; i < g_rounds; ++i)
		if (read(g_to_pong[0], &c, 1) != 1 || write(g_to_ping[1], &c, 1) != 1)
			exit(3);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	const long calls = atol(argv[1]);
	g_rounds = atol(argv[2]);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 2;
	for (long i = 0; i < calls; ++i) {
		TRACERY_EMIT(kw, before_getpid, (uint64_t)i);
		syscall(SYS_getpid);
	}
	if (pipe(g_to_pong) != 0 || pipe(g_to_ping) != 0)
		return 3;
	pthread_setname_np(pthread_self(), "kw-ping");
	pthread_t t;
	if (pthread_create(&t, NULL, pong, NULL) != 0)
		return 3;
	char c = 'x';
	for (long i = 0; i < g_rounds; ++i)
		if (write(g_to_pong[1], &c, 1) != 1 || read(g_to_ping[0], &c, 1) != 1)
			return 3;
	pthread_join(t, NULL);
	printf("done\n");
	return 0;
}
