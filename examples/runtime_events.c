/*
 * runtime-events-c: events defined while the program runs, through the C API
 * of tracery/runtime_event.h (see its README section), as a language agent or
 * a plug-in host would define them from names it learns at run time.
 * Run it traced without a daemon:
 *     TRACERY_OUTPUT=/tmp/rt-trace ./runtime-events-c [EVENT-NAME]
 *     babeltrace2 /tmp/rt-trace
 */
#include <tracery/runtime_event.h>

#include <stdio.h>
#include <string.h>

static const struct tracery_enum_entry outcome_labels[] = {{"ok", 0, 0}, {"retry", 1, 1}, {"failed", 2, 9}};

/* One field of each kind a language usually needs. */
static const struct tracery_event_field request_fields[] = {
	{.name = "id", .type = TRACERY_TYPE_U64},
	{.name = "path", .type = TRACERY_TYPE_STRING},
	{.name = "ms", .type = TRACERY_TYPE_DOUBLE},
	{.name = "cached", .type = TRACERY_TYPE_BOOL},
	{.name = "outcome",
         .type = TRACERY_TYPE_ENUM,
         .elem_type = TRACERY_TYPE_U8,
         .enum_entries = outcome_labels,
         .nr_enum_entries = 3},
	{.name = "sizes", .type = TRACERY_TYPE_SEQUENCE, .elem_type = TRACERY_TYPE_U32},
	{.name = "digest", .type = TRACERY_TYPE_BLOB},
};
#define NR_FIELDS (sizeof request_fields / sizeof request_fields[0])

int main(int argc, char **argv)
{
	/* The name comes from outside: a bad one is refused with a reason. */
	const char *name = argc > 1 ? argv[1] : "request";
	struct tracery_runtime_event *ev = tracery_event_define("example", name, request_fields, NR_FIELDS);
	if (!ev) {
		fprintf(stderr, "runtime-events-c: %s\n", tracery_last_error());
		return 1;
	}
	for (uint64_t i = 0; i < 4; i++) {
		/* Disabled, this is one load and a branch: no value is built. */
		if (!tracery_event_enabled(ev))
			continue;
		const uint32_t sizes[3] = {(uint32_t)i, 512, 4096};
		const unsigned char digest[4] = {0xde, 0xad, 0xbe, (unsigned char)i};
		struct tracery_value v[NR_FIELDS];
		memset(v, 0, sizeof v);
		v[0].v.u64 = i;
		v[1].v.ptr = "/index.html";
		v[1].len = TRACERY_VALUE_NUL_TERMINATED;
		v[2].v.f64 = 1.5 * (double)i;
		v[3].v.u64 = i % 2;
		v[4].v.u64 = i < 3 ? i : 7;
		v[5].v.ptr = sizes;
		v[5].len = 3;
		v[6].v.ptr = digest;
		v[6].len = sizeof digest;
		int err = tracery_event_emit(ev, v, NR_FIELDS);
		if (err) {
			fprintf(stderr, "runtime-events-c: %s\n", tracery_last_error());
			return 1;
		}
	}
	printf("runtime-events-c: example:%s defined, 4 events emitted\n", name);
	return 0;
}
