/*
 * tracery/runtime_event.h — events defined while the program runs.
 *
 * The C API for code that learns its events at run time: a language agent
 * (Python, Java), a plug-in host, any language with a C FFI. An event is
 * defined once from a provider, a name and a list of typed fields, then
 * emitted with an array of values, one per field:
 *
 *     static const struct tracery_event_field fields[] = {
 *         {.name = "id", .type = TRACERY_TYPE_U64},
 *         {.name = "path", .type = TRACERY_TYPE_STRING},
 *     };
 *     struct tracery_runtime_event *ev = tracery_event_define("app", "request", fields, 2);
 *     if (!ev)
 *         fprintf(stderr, "%s\n", tracery_last_error());
 *     ...
 *     if (tracery_event_enabled(ev)) {
 *         struct tracery_value v[2];
 *         v[0].v.u64 = id;
 *         v[1].v.ptr = path;
 *         v[1].len = TRACERY_VALUE_NUL_TERMINATED;
 *         tracery_event_emit(ev, v, 2);
 *     }
 *
 * A defined event is a descriptor of tracery/internal/event_desc.h built on
 * the heap and registered as the macros' events are: sessions list, enable,
 * filter and record it exactly as a compiled event (`list -u`, patterns,
 * filters on its fields, the metadata growing when it appears mid-session).
 * Thread-safe; usable in a forked child; handles are never freed.
 */
#ifndef TRACERY_RUNTIME_EVENT_H
#define TRACERY_RUNTIME_EVENT_H

#include <stdint.h>

#include <tracery/internal/entry.h>
#include <tracery/internal/event_desc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Limits ---- */

#define TRACERY_EVENT_MAX_FIELDS 16         /* fields per event, as the macros */
#define TRACERY_EVENT_MAX_PROVIDER 64       /* bytes of a provider name */
#define TRACERY_EVENT_MAX_NAME 200          /* bytes of an event name */
#define TRACERY_EVENT_MAX_FIELD_NAME 64     /* bytes of a field name */
#define TRACERY_EVENT_MAX_ENUM_ENTRIES 1024 /* labels of one enumeration */
#define TRACERY_EVENT_MAX_ENUM_LABEL 255    /* bytes of one label */
#define TRACERY_EVENT_MAX_PAYLOAD 65536     /* bytes of one record's fields */
#define TRACERY_EVENT_MAX_DEFINED 65536     /* events defined per process */

/* ---- Defining ---- */

/* One field of an event, in the order of the values emitted.
 *   type       enum tracery_field_type: TRACERY_TYPE_U8 ... TRACERY_TYPE_BLOB
 *   elem_type  ENUM: an integer type U8..S64; ARRAY, SEQUENCE: any scalar
 *              type (U8..S64, FLOAT, DOUBLE, BOOL); otherwise 0
 *   flags      0, or TRACERY_EVENT_FIELD_HEX on an integer field (U8..S64):
 *              shown in base 16, as an address (TRACERY_FIELD_HEX of
 *              event_desc.h); other bits are refused
 *   length     ARRAY: the element count, 1 or more; otherwise 0
 *   enum_entries, nr_enum_entries
 *              ENUM: 1..TRACERY_EVENT_MAX_ENUM_ENTRIES labelled ranges
 *              {label, start, end} (inclusive, start <= end, within the
 *              range of elem_type; a U64 enumeration reads start and end as
 *              uint64_t bit patterns); otherwise NULL and 0
 * The definition is copied: nothing it points to is used after it returns. */
struct tracery_event_field {
	const char *name; /* [A-Za-z_][A-Za-z0-9_]*, unique in the event */
	uint8_t type;
	uint8_t elem_type;
	uint16_t flags;
	uint32_t length;
	const struct tracery_enum_entry *enum_entries;
	uint32_t nr_enum_entries;
};

/* tracery_event_field.flags: the integer is shown in base 16. */
#define TRACERY_EVENT_FIELD_HEX 0x1

/* A defined event. `desc` is its registered descriptor (read it, never write
 * it); the runtime's own data follows. Never allocate, copy or free one. */
struct tracery_runtime_event {
	struct tracery_event_desc desc;
};

/* Defines event provider:name with nr_fields fields (0 to
 * TRACERY_EVENT_MAX_FIELDS) and registers it, so that the sessions already
 * tracing the program see it before this returns (as a library dlopen'ed
 * then). Returns its handle, valid until the process exits, or NULL with
 * errno set and tracery_last_error() saying why:
 *   EINVAL  a bad provider (not [A-Za-z_][A-Za-z0-9_]*, 1 to
 *           TRACERY_EVENT_MAX_PROVIDER bytes) or name (1 to
 *           TRACERY_EVENT_MAX_NAME bytes of [A-Za-z0-9_.$-], beginning with
 *           a letter or '_'), too many fields, a bad or repeated field name,
 *           an unknown type or elem_type, bad flags, a bad length or
 *           enumeration, a fixed part larger than TRACERY_EVENT_MAX_PAYLOAD;
 *   EEXIST  provider:name is already defined (by this API) with other
 *           fields;
 *   ENOSPC  TRACERY_EVENT_MAX_DEFINED events are defined already;
 *   ENOMEM  out of memory.
 * Defining an event again with identical fields (names, types, lengths,
 * labels) returns the same handle, also when threads race to define it.
 * Not async-signal-safe. */
TRACERY_API struct tracery_runtime_event *tracery_event_define(const char *provider, const char *name,
                                                               const struct tracery_event_field *fields,
                                                               uint32_t nr_fields);

/* ---- Emitting ---- */

/* One value, for the field of the same index.
 *   U8..U64, BOOL, ENUM of an unsigned type  v.u64 (BOOL: 0 false, else true)
 *   S8..S64, ENUM of a signed type           v.i64
 *   FLOAT, DOUBLE                            v.f64 (FLOAT: rounded to float)
 *   STRING   v.ptr: UTF-8 bytes (NULL records ""); len: their count, or
 *            TRACERY_VALUE_NUL_TERMINATED to measure up to the NUL. Invalid
 *            UTF-8 and NUL bytes within len are recorded as '?'.
 *   ARRAY    v.ptr: the field's `length` elements of elem_type, in the C
 *            layout (bool: 1 byte); len: that length
 *   SEQUENCE v.ptr: len elements of elem_type (NULL only when len is 0)
 *   BLOB     v.ptr: len bytes (NULL only when len is 0)
 * Integers must fit the field's type (an S8 field takes -128..127). */
struct tracery_value {
	union {
		uint64_t u64;
		int64_t i64;
		double f64;
		const void *ptr;
	} v;
	uint32_t len;
};

#define TRACERY_VALUE_NUL_TERMINATED UINT32_MAX

/* Non-zero while at least one session records the event: one relaxed load
 * and a branch. Test it before building the values. */
static inline int tracery_event_enabled(const struct tracery_runtime_event *ev)
{
	return __builtin_expect(__atomic_load_n(&ev->desc.enabled, __ATOMIC_RELAXED), 0);
}

/* The same, as a function of libtracery, for callers that cannot use a static
 * inline function (an FFI such as ctypes). */
TRACERY_API int tracery_event_is_enabled(const struct tracery_runtime_event *ev);

/* Records the event with nr_values values (exactly its field count) in every
 * session that enables it and whose filter accepts them, as TRACERY_EMIT
 * records a compiled event; the `ip` context is the address this is called
 * from. Returns 0 (also when no session records the event), or:
 *   -EINVAL    ev is NULL, nr_values is not the field count, a pointer or a
 *              length does not fit its field (ARRAY: len differs from the
 *              field's length; SEQUENCE, BLOB: NULL with a non-zero len);
 *   -ERANGE    an integer does not fit its field's type;
 *   -EMSGSIZE  the fields would take more than TRACERY_EVENT_MAX_PAYLOAD
 *              bytes (a NUL-terminated string is measured up to that bound).
 * Nothing is recorded then, and tracery_last_error() says which field is
 * wrong. While the event is disabled only the count is checked. Safe in a
 * signal handler and in any thread. */
TRACERY_API int tracery_event_emit(struct tracery_runtime_event *ev, const struct tracery_value *values,
                                   uint32_t nr_values);

/* ---- Errors ---- */

/* Why this thread's last failing tracery_event_define() or
 * tracery_event_emit() failed (static or thread-local text, valid until the
 * thread's next failing call); "" if none has failed. */
TRACERY_API const char *tracery_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TRACERY_RUNTIME_EVENT_H */
