/*
 * tracery/internal/event_desc.h — the event descriptor ABI.
 *
 * The layout of the descriptors that instrumented programs build (through
 * tracepoint.h and tracepoint.hpp) and libtracery reads: an event's fields,
 * their types and enumeration labels, its enabled byte and gate, and the
 * argument array an emitter passes. Plain data and typedefs: no functions,
 * and including it registers nothing, so code that only reads descriptors
 * (the CTF writer, filters, the control protocol) includes this instead of
 * tracepoint.h. Part of the ABI of libtracery.so.0: changes only add.
 */
#ifndef TRACERY_INTERNAL_EVENT_DESC_H
#define TRACERY_INTERNAL_EVENT_DESC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* clang-format off */
enum tracery_field_type {
	TRACERY_TYPE_U8, TRACERY_TYPE_U16, TRACERY_TYPE_U32, TRACERY_TYPE_U64,
	TRACERY_TYPE_S8, TRACERY_TYPE_S16, TRACERY_TYPE_S32, TRACERY_TYPE_S64,
	TRACERY_TYPE_FLOAT, TRACERY_TYPE_DOUBLE, TRACERY_TYPE_BOOL,
	TRACERY_TYPE_ENUM,     /* integer of elem_type, labelled by enum_desc */
	TRACERY_TYPE_STRING,   /* bytes then NUL */
	TRACERY_TYPE_ARRAY,    /* length elements of elem_type */
	TRACERY_TYPE_SEQUENCE, /* uint32 count then count elements of elem_type */
	TRACERY_TYPE_BLOB      /* uint32 count then count bytes */
};
/* clang-format on */

struct tracery_enum_entry {
	const char *label;
	int64_t start; /* inclusive range of values carrying this label */
	int64_t end;
};

struct tracery_enum_desc {
	const char *name;
	const struct tracery_enum_entry *entries;
	uint32_t nr_entries;
};

struct tracery_field_desc {
	const char *name;
	uint8_t type;      /* enum tracery_field_type */
	uint8_t elem_type; /* ENUM, ARRAY, SEQUENCE: an integer type; U8..S64: 0 or TRACERY_FIELD_HEX */
	uint32_t length;   /* ARRAY: element count */
	const struct tracery_enum_desc *enum_desc; /* ENUM only */
};

/* An integer field (U8..S64) shown in base 16, as an address is: its
 * elem_type, a byte that integer types had no use for (and that programs
 * built before this value existed leave 0, decimal), holds TRACERY_FIELD_HEX.
 * The CTF metadata then declares it with `base = 16`, so that readers print
 * it as 0x7F3A5C000B70, as LTTng-UST's ctf_integer_hex. It changes nothing
 * of what is recorded. Other types take no display hint: an array of bytes
 * to show in hex is a BLOB. */
#define TRACERY_FIELD_HEX 0x80

/* How an event's emitter calls its gate (see tracery_gate_fn). */
enum tracery_gate_call {
	TRACERY_GATE_ARGS = 0,  /* int gate(const struct tracery_arg *args, const void *reserved) */
	TRACERY_GATE_PARAMS = 1 /* int gate(<the event's fields as the emitter's own parameters>) */
};

/* An event's gate: a filter the runtime installs while exactly one session
 * records the event, through a single filter that reads no context field.
 * The emitter calls it before tracery_fire(); 0 means that session does not
 * want this event, so a rejected event costs neither the probe call nor the
 * RCU read side. It is called in the form desc->gate_call says: events whose
 * fields are all scalars pass their values in registers, as the emitter
 * received them (no argument array is built for a rejected event); others
 * pass the argument array and NULL. Its code is never freed, so an emitter
 * may still be in it after the session is gone. */
struct tracery_arg;
typedef void (*tracery_gate_fn)(void);
typedef int (*tracery_args_gate_fn)(const struct tracery_arg *args, const void *reserved);

struct tracery_event_desc {
	const char *provider;
	const char *name;
	const struct tracery_field_desc *fields;
	uint32_t nr_fields;
	/* Hot-path byte: non-zero while at least one probe is attached. */
	uint8_t enabled;
	/* Owned by the runtime: RCU-published probe array, registration state. */
	void *probes;
	void *runtime;
	/* Owned by the runtime: the gate, or NULL. */
	tracery_gate_fn gate;
	/* enum tracery_gate_call, fixed by the declaration. */
	uint8_t gate_call;
};

/* One emitted value. Scalars: ptr to the value, len unused. STRING: ptr to
 * bytes, len = byte count without NUL, with no NUL among them when measured
 * (the record holds exactly len bytes and a NUL; one that appeared since is
 * written as '?'). ARRAY/SEQUENCE: ptr to elements,
 * len = element count. BLOB: ptr to bytes, len = byte count. */
struct tracery_arg {
	const void *ptr;
	uint32_t len;
};

#ifdef __cplusplus
}
#endif

#endif /* TRACERY_INTERNAL_EVENT_DESC_H */
