/*
 * daemon-emitter: an instrumented program driven by the session daemon tests
 * (tests/daemon_test.py). Every mode prints "ready PID" first.
 *   daemon-emitter count N [wait]   emits N emit:tick and N emit:other (tag "fizz"
 *                                   when i % 3 == 0, else "buzz"; after a
 *                                   line on stdin if "wait"), prints "done N", exits
 *   daemon-emitter hold N           emits N emit:tick, prints "done N", then
 *                                   sleeps until killed (SIGKILL test)
 *   daemon-emitter rounds N         for each line on stdin, a round: emits N
 *                                   emit:tick whose value is the round's number
 *                                   (1, 2, ...), then prints "round R"; exits 0
 *                                   at the end of stdin
 *   daemon-emitter spin SECONDS     emits emit:tick at full speed for SECONDS,
 *                                   prints "done COUNT", exits 0
 *   daemon-emitter exec PROG ARGS   emits one emit:tick, then execs PROG
 *   daemon-emitter scribble SEED SECONDS
 *                                   a hostile program: emits emit:tick at full
 *                                   speed from a thread while the main thread
 *                                   writes random bytes (xorshift, SEED) over
 *                                   its ring buffer mappings for SECONDS, half
 *                                   of them into the first 8 KiB (headers and
 *                                   control words); prints "scribbling
 *                                   MAPPINGS" when it starts, "done SCRIBBLES"
 *   daemon-emitter truncate         a hostile program: emits one emit:tick, then
 *                                   tries to shrink each ring buffer file the
 *                                   daemon sent to 0 bytes and to grow it (a
 *                                   shrink would make the daemon's next access
 *                                   to its mapping a SIGBUS); prints "refused
 *                                   REFUSED of ATTEMPTS", exits
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static volatile int g_stop;

static void *emit_until_stopped(void *arg)
{
	(void)arg;
	uint64_t n = 0;
	while (!g_stop)
		TRACERY_EMIT(emit, tick, n++);
	return NULL;
}

struct region {
	uint8_t *lo;
	size_t size;
};

/* The writable mappings of the ring buffers the daemon sent (memfds named "tracery-CHANNEL"). */
static int find_buffers(struct region *out, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	char line[512];
	int n = 0;
	while (n < max && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w' &&
		    strstr(line, "memfd:tracery-")) {
			out[n].lo = (uint8_t *)lo;
			out[n].size = hi - lo;
			n++;
		}
	}
	fclose(f);
	return n;
}

static int scribble(uint64_t seed, double seconds)
{
	pthread_t emitter;
	if (pthread_create(&emitter, NULL, emit_until_stopped, NULL) != 0)
		return 1;
	struct region regions[16];
	int n = 0;
	for (double give_up = now_s() + 10; n == 0 && now_s() < give_up; usleep(10000))
		n = find_buffers(regions, 16);
	printf("scribbling %d\n", n);
	fflush(stdout);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1, scribbles = 0;
	for (double end = now_s() + seconds; n > 0 && now_s() < end; usleep(50)) {
		for (int r = 0; r < n; r++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			const size_t span = (x & 1) || regions[r].size < 8192 ? regions[r].size : 8192;
			const size_t at = (x >> 8) % span;
			size_t len = 1 + (x >> 40) % 16;
			if (len > regions[r].size - at)
				len = regions[r].size - at;
			for (size_t b = 0; b < len; b++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				regions[r].lo[at + b] = (uint8_t)x;
			}
			scribbles++;
		}
	}
	g_stop = 1;
	pthread_join(emitter, NULL);
	printf("done %llu\n", (unsigned long long)scribbles);
	return n > 0 ? 0 : 3;
}

/* The descriptors of the ring buffer files the daemon sent, as find_buffers finds their mappings. */
static int find_buffer_fds(int *out, int max)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while (n < max && (e = readdir(d))) {
		char link[300], target[256];
		snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
		const ssize_t len = readlink(link, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (strstr(target, "memfd:tracery-"))
			out[n++] = atoi(e->d_name);
	}
	closedir(d);
	return n;
}

static int truncate_buffers(void)
{
	TRACERY_EMIT(emit, tick, 0);
	int fds[16], n = 0;
	for (double give_up = now_s() + 10; n == 0 && now_s() < give_up; usleep(10000))
		n = find_buffer_fds(fds, 16);
	int attempts = 0, refused = 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (fstat(fds[i], &st) != 0)
			continue;
		const off_t sizes[] = {0, st.st_size + 4096};
		for (int k = 0; k < 2; k++, attempts++)
			if (ftruncate(fds[i], sizes[k]) != 0 && errno == EPERM)
				refused++;
	}
	printf("refused %d of %d\n", refused, attempts);
	fflush(stdout);
	return n > 0 ? 0 : 3;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "truncate")) {
		printf("ready %d\n", getpid());
		fflush(stdout);
		return truncate_buffers();
	}
	if (argc < 3) {
		fprintf(stderr,
		        "usage: daemon-emitter count N [wait] | hold N | rounds N | spin SECONDS | exec PROG ARGS... | scribble SEED "
		        "SECONDS "
		        "| truncate\n");
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
	if (!strcmp(mode, "scribble"))
		return argc > 3 ? scribble(strtoull(argv[2], NULL, 10), atof(argv[3])) : 2;
	if (!strcmp(mode, "rounds")) {
		const uint64_t per_round = strtoull(argv[2], NULL, 10);
		char line[16];
		for (uint64_t round = 1; fgets(line, sizeof line, stdin); round++) {
			for (uint64_t i = 0; i < per_round; i++)
				TRACERY_EMIT(emit, tick, round);
			printf("round %llu\n", (unsigned long long)round);
			fflush(stdout);
		}
		return 0;
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
