/*
 * A program that knows nothing of Tracery, for preload_test under the libc
 * helper: it allocates in the main thread, in a second thread, in a signal
 * handler, and in a fork child (in its handler too), and prints each block it
 * keeps track of as "KIND PID ADDRESS" (KIND: main, thread, handler, child,
 * child-handler), so that the test finds the block's malloc and free in the
 * trace. It ends with its own memory map (lines "map ...") for the test's
 * check of the recorded callers. Exits 0 when every step worked.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile handler_block;

/* Allocates and frees a block in the handler (nothing else of the program
 * runs malloc at that moment: raise() is called outside of it). */
static void on_signal(int sig)
{
	(void)sig;
	void *p = malloc(200);
	if (p)
		memset(p, 1, 200);
	handler_block = p;
	free(p);
}

static void print_block(const char *kind, void *p)
{
	printf("%s %d %lu\n", kind, (int)getpid(), (unsigned long)p);
	fflush(stdout);
}

static void *thread_main(void *arg)
{
	(void)arg;
	void *p = calloc(3, 100);
	print_block("thread", p);
	free(p);
	return NULL;
}

/* The handler's allocation; 0 if it failed. */
static int allocate_in_handler(const char *kind)
{
	handler_block = NULL;
	if (raise(SIGUSR1) != 0 || !handler_block)
		return 0;
	print_block(kind, handler_block);
	return 1;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;

	char *p = malloc(100);
	if (!p)
		return 1;
	print_block("main", p);
	p = realloc(p, 5000);
	if (!p)
		return 1;
	free(p);

	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	if (!allocate_in_handler("handler"))
		return 1;

	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		void *c = malloc(300);
		print_block("child", c);
		free(c);
		_exit(allocate_in_handler("child-handler") ? 0 : 1);
	}
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;

	FILE *maps = fopen("/proc/self/maps", "r");
	if (!maps)
		return 1;
	char line[512];
	while (fgets(line, sizeof line, maps))
		printf("map %s", line);
	fclose(maps);
	return 0;
}
