/*
 * context-probe: emits events whose user-space contexts tests/context_test.py
 * checks against what this program sees of itself. Usage: context-probe N
 *
 * The main thread emits ctx:step N times from emit_step(), touching 16 new
 * pages before each (so a page-fault counter grows by at least 16 between
 * two events), then a second thread emits ctx:step once. Printed on stdout:
 *   emit_step ADDRESS          the function's run-time address
 *   thread TID PTHREAD_ID      once per emitting thread
 *   perf_fds N                 the perf counter fds open once the second
 *                              thread is gone (its own are closed)
 */
#define _GNU_SOURCE
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

TRACERY_EVENT(ctx, step, TRACERY_U64(i))

enum { kPagesPerStep = 16 };

static __attribute__((noinline)) void emit_step(uint64_t i) { TRACERY_EMIT(ctx, step, i); }

static void say_thread(void) { printf("thread %d %llu\n", (int)gettid(), (unsigned long long)pthread_self()); }

static void *second_thread(void *arg)
{
	(void)arg;
	say_thread();
	emit_step(1000000);
	return NULL;
}

static int count_perf_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char target[64];
		const ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strcmp(target, "anon_inode:[perf_event]") == 0;
		}
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	const uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *pages =
		mmap(NULL, page * kPagesPerStep * (n + 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		return 1;
	printf("emit_step %llu\n", (unsigned long long)(uintptr_t)&emit_step);
	say_thread();
	for (uint64_t i = 0; i < n; i++) {
		for (size_t p = 0; p < kPagesPerStep; p++)
			pages[(i * kPagesPerStep + p) * page] = 1; /* a new page: one fault */
		emit_step(i);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, second_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	printf("perf_fds %d\n", count_perf_fds());
	return 0;
}
