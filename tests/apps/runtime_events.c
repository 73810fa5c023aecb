/*
 * runtime-events-app: events defined at run time (tracery/runtime_event.h),
 * traced by tests/runtime_events_test.py in daemonless mode and through the
 * session daemon.
 *   runtime-events-app now    defines rt:all (one field of every kind) and
 *                             emits 3 of it, emits the compiled rt:compiled,
 *                             then defines rt:late and emits 4 of it; exits
 *   runtime-events-app wait   prints "ready PID", waits for a line on stdin,
 *                             does what "now" does, prints "defined", waits
 *                             for another line, exits
 *   runtime-events-app fork N forks N children while a thread defines events
 *                             rt:t0, rt:t1...; each child defines rt:child and
 *                             emits it once with n = its index; exits 0 once
 *                             every child did (a child that inherited a lock
 *                             taken would hang)
 * The values are functions of the event's index i, which the test computes
 * the same way (see the test's expected_all and expected_late).
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/runtime_event.h>
#include <tracery/tracepoint.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TRACERY_EVENT(rt, compiled, TRACERY_U32(n))

static const struct tracery_enum_entry level_labels[] = {{"low", -5, -1}, {"zero", 0, 0}, {"high", 1, 100}};

static const struct tracery_event_field all_fields[] = {
	{.name = "u8", .type = TRACERY_TYPE_U8},
	{.name = "u16", .type = TRACERY_TYPE_U16},
	{.name = "u32", .type = TRACERY_TYPE_U32},
	{.name = "u64", .type = TRACERY_TYPE_U64},
	{.name = "s8", .type = TRACERY_TYPE_S8},
	{.name = "s16", .type = TRACERY_TYPE_S16},
	{.name = "s32", .type = TRACERY_TYPE_S32},
	{.name = "s64", .type = TRACERY_TYPE_S64},
	{.name = "f32", .type = TRACERY_TYPE_FLOAT},
	{.name = "f64", .type = TRACERY_TYPE_DOUBLE},
	{.name = "flag", .type = TRACERY_TYPE_BOOL},
	{.name = "level",
         .type = TRACERY_TYPE_ENUM,
         .elem_type = TRACERY_TYPE_S16,
         .enum_entries = level_labels,
         .nr_enum_entries = 3},
	{.name = "text", .type = TRACERY_TYPE_STRING},
	{.name = "triple", .type = TRACERY_TYPE_ARRAY, .elem_type = TRACERY_TYPE_S32, .length = 3},
	{.name = "seq", .type = TRACERY_TYPE_SEQUENCE, .elem_type = TRACERY_TYPE_U16},
	{.name = "bytes", .type = TRACERY_TYPE_BLOB},
};

static const struct tracery_event_field late_fields[] = {
	{.name = "n", .type = TRACERY_TYPE_U32},
	{.name = "word", .type = TRACERY_TYPE_STRING},
	{.name = "reals", .type = TRACERY_TYPE_SEQUENCE, .elem_type = TRACERY_TYPE_DOUBLE},
	{.name = "addr", .type = TRACERY_TYPE_U64, .flags = TRACERY_EVENT_FIELD_HEX},
};

static struct tracery_runtime_event *define(const char *name, const struct tracery_event_field *fields, uint32_t n)
{
	struct tracery_runtime_event *ev = tracery_event_define("rt", name, fields, n);
	if (!ev) {
		fprintf(stderr, "runtime-events-app: %s\n", tracery_last_error());
		exit(1);
	}
	return ev;
}

static void emit(struct tracery_runtime_event *ev, const struct tracery_value *v, uint32_t n)
{
	if (tracery_event_emit(ev, v, n) != 0) {
		fprintf(stderr, "runtime-events-app: %s\n", tracery_last_error());
		exit(1);
	}
}

static void emit_all(struct tracery_runtime_event *ev, int i)
{
	static const char *const texts[] = {"h\xc3\xa9llo w\xc3\xb6rld", NULL, "abcdef"};
	const int32_t triple[3] = {-1, 0, i};
	uint16_t seq[2] = {100, 101};
	unsigned char bytes[3] = {0xff, 0xfe, 0xfd};
	struct tracery_value v[16];
	memset(v, 0, sizeof v);
	v[0].v.u64 = 255 - i;
	v[1].v.u64 = 65535 - i;
	v[2].v.u64 = 4294967295u - i;
	v[3].v.u64 = UINT64_MAX - i;
	v[4].v.i64 = -128 + i;
	v[5].v.i64 = -32768 + i;
	v[6].v.i64 = INT32_MIN + i;
	v[7].v.i64 = INT64_MIN + i;
	v[8].v.f64 = 0.5 + i;
	v[9].v.f64 = -1234.25 * (i + 1);
	v[10].v.u64 = i % 2;
	v[11].v.i64 = (i - 1) * 5;
	v[12].v.ptr = texts[i];
	/* The first measured to its NUL, the last cut to 3 bytes by its len. */
	v[12].len = i == 2 ? 3 : TRACERY_VALUE_NUL_TERMINATED;
	v[13].v.ptr = triple;
	v[13].len = 3;
	v[14].v.ptr = seq;
	v[14].len = (uint32_t)i;
	v[15].v.ptr = bytes;
	v[15].len = (uint32_t)i + 1;
	emit(ev, v, 16);
}

static void emit_late(struct tracery_runtime_event *ev, int n)
{
	const double reals[3] = {n / 4.0, -n * 2.0, 1e300};
	struct tracery_value v[4];
	memset(v, 0, sizeof v);
	v[0].v.u64 = (uint64_t)n;
	v[1].v.ptr = n % 2 ? "odd" : "even";
	v[1].len = TRACERY_VALUE_NUL_TERMINATED;
	v[2].v.ptr = reals;
	v[2].len = (uint32_t)(n < 3 ? n : 3);
	v[3].v.u64 = 0x7f3a5c000b70u + (uint64_t)n;
	emit(ev, v, 4);
}

static void run(void)
{
	struct tracery_runtime_event *all = define("all", all_fields, 16);
	for (int i = 0; i < 3; i++)
		emit_all(all, i);
	TRACERY_EMIT(rt, compiled, 7);
	struct tracery_runtime_event *late = define("late", late_fields, 4);
	for (int n = 0; n < 4; n++)
		emit_late(late, n);
}

static volatile int forks_done;

static void *define_while_forking(void *arg)
{
	(void)arg;
	for (int i = 0; !forks_done && i < 100000; i++) {
		char name[32];
		snprintf(name, sizeof name, "t%d", i % 1000);
		define(name, late_fields, 4);
	}
	return NULL;
}

static int fork_children(int n)
{
	pthread_t definer;
	if (pthread_create(&definer, NULL, define_while_forking, NULL) != 0)
		return 1;
	for (int i = 0; i < n; i++) {
		const pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			struct tracery_runtime_event *child = define("child", late_fields, 4);
			emit_late(child, i);
			exit(0); /* its destructors write its trace out */
		}
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return 1;
	}
	forks_done = 1;
	pthread_join(definer, NULL);
	return 0;
}

static void wait_line(void)
{
	char line[64];
	if (!fgets(line, sizeof line, stdin))
		exit(2);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "now") == 0) {
		run();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "wait") == 0) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		wait_line();
		run();
		printf("defined\n");
		fflush(stdout);
		wait_line();
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "fork") == 0)
		return fork_children(atoi(argv[2]));
	fprintf(stderr, "usage: runtime-events-app now|wait|fork N\n");
	return 2;
}
