/*
 * late-tracery-host: a program without libtracery that dlopens a library
 * linked with it (late-plugin) while a thread it started before runs. That
 * thread, whose thread-local storage predates libtracery's, then emits COUNT
 * events (who = 1) and one from a signal handler (who = 2); the main thread
 * emits COUNT (who = 0).
 * Usage: late-tracery-host PATH_TO_PLUGIN COUNT
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static void (*late_emit)(unsigned who, unsigned count);
static unsigned count;
static pthread_barrier_t started, loaded;

static void on_signal(int sig)
{
	(void)sig;
	late_emit(2, 1);
}

static void *early_thread(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&loaded);
	late_emit(1, count);
	raise(SIGUSR1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	count = (unsigned)strtoul(argv[2], NULL, 10);
	signal(SIGUSR1, on_signal);
	pthread_barrier_init(&started, NULL, 2);
	pthread_barrier_init(&loaded, NULL, 2);
	pthread_t early;
	pthread_create(&early, NULL, early_thread, NULL);
	pthread_barrier_wait(&started);
	void *plugin = dlopen(argv[1], RTLD_NOW);
	if (!plugin) {
		fprintf(stderr, "late-tracery-host: %s\n", dlerror());
		return 1;
	}
	*(void **)&late_emit = dlsym(plugin, "late_emit");
	pthread_barrier_wait(&loaded);
	pthread_join(early, NULL);
	late_emit(0, count);
	return 0;
}
