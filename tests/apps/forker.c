/*
 * forker: emits events before and after fork() in the parent and in the
 * child (tests/daemonless_test.py checks each process's events by vpid).
 * Usage: forker N  (each phase emits N events)
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

TRACERY_EVENT(fork, tick, TRACERY_S32(phase), TRACERY_U64(i))

static void emit(int phase, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		TRACERY_EMIT(fork, tick, phase, i);
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
	emit(0, n); /* parent, before fork */
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		emit(1, n); /* child */
		return 0;
	}
	emit(2, n); /* parent, after fork */
	int status = 0;
	waitpid(child, &status, 0);
	printf("parent %d child %d\n", getpid(), child);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
