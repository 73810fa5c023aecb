/*
 * tracery/tracepoint.h — the C instrumentation API (also usable from C++).
 *
 * Declare an event once, in a header shared by the code that emits it:
 *
 *     TRACERY_EVENT(app, request,
 *         TRACERY_U64(id), TRACERY_STRING(path), TRACERY_SEQUENCE(S32, values))
 *
 * In C, exactly one translation unit per executable or library defines
 * TRACERY_CREATE_EVENTS before including that header (it holds the event
 * descriptors). In C++ no such define is needed: descriptors are inline.
 *
 * Emit it anywhere:
 *
 *     TRACERY_EMIT(app, request, req_id, "/index.html", vals, nvals);
 *
 * While the event is disabled, TRACERY_EMIT is one relaxed byte load and one
 * branch predicted not taken; its arguments are not evaluated.
 *
 * Field kinds (the macro argument list of TRACERY_EVENT):
 *   TRACERY_U8/U16/U32/U64(name), TRACERY_S8/S16/S32/S64(name)  integers
 *   TRACERY_FLOAT(name), TRACERY_DOUBLE(name), TRACERY_BOOL(name)
 *   TRACERY_ENUM(enum, INT, name)    INT is U8..S64, enum made with TRACERY_ENUM_LABELS
 *   TRACERY_STRING(name)             const char *, NUL-terminated (NULL records "")
 *   TRACERY_ARRAY(INT, name, N)      const INT-type *, exactly N elements
 *   TRACERY_SEQUENCE(INT, name)      two arguments: const INT-type *, uint32_t count
 *   TRACERY_BLOB(name)               two arguments: const void *, uint32_t byte count
 * At most 16 fields per event.
 */
#ifndef TRACERY_TRACEPOINT_H
#define TRACERY_TRACEPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Descriptors: what the runtime and the trace writer know of an event ---- */

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
	uint8_t elem_type; /* ENUM, ARRAY, SEQUENCE: an integer type U8..S64 */
	uint32_t length;   /* ARRAY: element count */
	const struct tracery_enum_desc *enum_desc; /* ENUM only */
};

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
 * bytes, len = byte count without NUL. ARRAY/SEQUENCE: ptr to elements,
 * len = element count. BLOB: ptr to bytes, len = byte count. */
struct tracery_arg {
	const void *ptr;
	uint32_t len;
};

/* ---- Runtime entry points (libtracery) ---- */

#define TRACERY_API __attribute__((visibility("default")))

/* Calls through the GOT, without the PLT's extra jump (GCC; clang has no
 * such attribute, only -fno-plt). */
#if defined(__GNUC__) && !defined(__clang__)
#define TRACERY__NOPLT __attribute__((noplt))
#else
#define TRACERY__NOPLT
#endif

/* Called by the TRACERY_EMIT slow path: runs every attached probe. */
TRACERY_API TRACERY__NOPLT void tracery_fire(struct tracery_event_desc *desc, const struct tracery_arg *args);
/* Same, after `gate` (the event's gate, as the emitter loaded it) accepted
 * the event: a probe whose own filter is that gate records the event without
 * running its filter a second time. */
TRACERY_API TRACERY__NOPLT void tracery_fire_gate_passed(struct tracery_event_desc *desc,
                                                         const struct tracery_arg *args, tracery_gate_fn gate);

/* Called by per-object constructors/destructors with the object's
 * tracery_events section; events appear/disappear with their object. */
TRACERY_API void tracery_register_events(struct tracery_event_desc *const *begin,
                             struct tracery_event_desc *const *end);
TRACERY_API void tracery_unregister_events(struct tracery_event_desc *const *begin,
                               struct tracery_event_desc *const *end);

/* Calls fn once per event currently registered in this process. */
TRACERY_API void tracery_list_events(void (*fn)(const struct tracery_event_desc *desc, void *arg), void *arg);

/* Probe registration (used by sessions). A probe is called from
 * tracery_fire() with its private data; attach and detach never block a
 * thread that emits the event. Returns 0, or -1 if the event is unknown or
 * the probe is already (not) attached. */
typedef void (*tracery_probe_fn)(void *priv, const struct tracery_event_desc *desc,
                                 const struct tracery_arg *args);
TRACERY_API int tracery_probe_attach(struct tracery_event_desc *desc, tracery_probe_fn fn, void *priv);
TRACERY_API int tracery_probe_detach(struct tracery_event_desc *desc, tracery_probe_fn fn, void *priv);
/* Waits until no thread still runs a probe detached before this call. */
TRACERY_API void tracery_probe_synchronize(void);

/* ---- Declaration macros ---- */

#define TRACERY__CAT_(a, b) a##b
#define TRACERY__CAT(a, b) TRACERY__CAT_(a, b)
#define TRACERY__DESC_NAME(prov, name) tracery_event__##prov##__##name
#define TRACERY__EMIT_NAME(prov, name) tracery_emit__##prov##__##name

/* Field specs are tuples (KIND, args...) dispatched by kind. */
#define TRACERY_U8(n) (INT, U8, uint8_t, n)
#define TRACERY_U16(n) (INT, U16, uint16_t, n)
#define TRACERY_U32(n) (INT, U32, uint32_t, n)
#define TRACERY_U64(n) (INT, U64, uint64_t, n)
#define TRACERY_S8(n) (INT, S8, int8_t, n)
#define TRACERY_S16(n) (INT, S16, int16_t, n)
#define TRACERY_S32(n) (INT, S32, int32_t, n)
#define TRACERY_S64(n) (INT, S64, int64_t, n)
#define TRACERY_FLOAT(n) (INT, FLOAT, float, n)
#define TRACERY_DOUBLE(n) (INT, DOUBLE, double, n)
#define TRACERY_BOOL(n) (INT, BOOL, bool, n)
#define TRACERY_ENUM(e, it, n) (ENUM, it, TRACERY__CTYPE_##it, n, e)
#define TRACERY_STRING(n) (STRING, n)
#define TRACERY_ARRAY(it, n, count) (ARRAY, it, TRACERY__CTYPE_##it, n, count)
#define TRACERY_SEQUENCE(it, n) (SEQUENCE, it, TRACERY__CTYPE_##it, n)
#define TRACERY_BLOB(n) (BLOB, n)

#define TRACERY__CTYPE_U8 uint8_t
#define TRACERY__CTYPE_U16 uint16_t
#define TRACERY__CTYPE_U32 uint32_t
#define TRACERY__CTYPE_U64 uint64_t
#define TRACERY__CTYPE_S8 int8_t
#define TRACERY__CTYPE_S16 int16_t
#define TRACERY__CTYPE_S32 int32_t
#define TRACERY__CTYPE_S64 int64_t

/* Field descriptor initialisers. */
#define TRACERY__FD(spec) TRACERY__FD_ spec
#define TRACERY__FD_(kind, ...) TRACERY__FD_##kind(__VA_ARGS__)
#define TRACERY__FD_INT(t, ct, n) {#n, TRACERY_TYPE_##t, 0, 0, 0},
#define TRACERY__FD_ENUM(t, ct, n, e) {#n, TRACERY_TYPE_ENUM, TRACERY_TYPE_##t, 0, &e},
#define TRACERY__FD_STRING(n) {#n, TRACERY_TYPE_STRING, 0, 0, 0},
#define TRACERY__FD_ARRAY(t, ct, n, c) {#n, TRACERY_TYPE_ARRAY, TRACERY_TYPE_##t, (c), 0},
#define TRACERY__FD_SEQUENCE(t, ct, n) {#n, TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_##t, 0, 0},
#define TRACERY__FD_BLOB(n) {#n, TRACERY_TYPE_BLOB, 0, 0, 0},

/* Parameters of the emit function (each ends with a comma, trimmed below). */
#define TRACERY__PARAM(spec) TRACERY__PARAM_ spec
#define TRACERY__PARAM_(kind, ...) TRACERY__PARAM_##kind(__VA_ARGS__)
#define TRACERY__PARAM_INT(t, ct, n) , ct n
#define TRACERY__PARAM_ENUM(t, ct, n, e) , ct n
#define TRACERY__PARAM_STRING(n) , const char *n
#define TRACERY__PARAM_ARRAY(t, ct, n, c) , const ct *n
#define TRACERY__PARAM_SEQUENCE(t, ct, n) , const ct *n, uint32_t n##_count
#define TRACERY__PARAM_BLOB(n) , const void *n, uint32_t n##_size

/* The parameter names, as arguments of a call (each starts with a comma). */
#define TRACERY__NAME(spec) TRACERY__NAME_ spec
#define TRACERY__NAME_(kind, ...) TRACERY__NAME_##kind(__VA_ARGS__)
#define TRACERY__NAME_INT(t, ct, n) , n
#define TRACERY__NAME_ENUM(t, ct, n, e) , n
#define TRACERY__NAME_STRING(n) , n
#define TRACERY__NAME_ARRAY(t, ct, n, c) , n
#define TRACERY__NAME_SEQUENCE(t, ct, n) , n, n##_count
#define TRACERY__NAME_BLOB(n) , n, n##_size

/* 1 if every field is a scalar (integer, float, bool, enum): the event's gate
 * then takes the emitter's parameters (TRACERY_GATE_PARAMS). */
#define TRACERY__ALL_SCALAR(...) (1 TRACERY__MAP(TRACERY__SCALAR, __VA_ARGS__))
#define TRACERY__SCALAR(spec) TRACERY__SCALAR_ spec
#define TRACERY__SCALAR_(kind, ...) TRACERY__SCALAR_##kind
#define TRACERY__SCALAR_INT && 1
#define TRACERY__SCALAR_ENUM && 1
#define TRACERY__SCALAR_STRING && 0
#define TRACERY__SCALAR_ARRAY && 0
#define TRACERY__SCALAR_SEQUENCE && 0
#define TRACERY__SCALAR_BLOB && 0
#define TRACERY__GATE_CALL(...) (TRACERY__ALL_SCALAR(__VA_ARGS__) ? TRACERY_GATE_PARAMS : TRACERY_GATE_ARGS)

/* Argument initialisers. */
#define TRACERY__ARG(spec) TRACERY__ARG_ spec
#define TRACERY__ARG_(kind, ...) TRACERY__ARG_##kind(__VA_ARGS__)
#define TRACERY__ARG_INT(t, ct, n) {&n, 0},
#define TRACERY__ARG_ENUM(t, ct, n, e) {&n, 0},
#define TRACERY__ARG_STRING(n) {n, n ? (uint32_t)strlen(n) : 0},
#define TRACERY__ARG_ARRAY(t, ct, n, c) {n, (c)},
#define TRACERY__ARG_SEQUENCE(t, ct, n) {n, n##_count},
#define TRACERY__ARG_BLOB(n) {n, n##_size},

/* FOR_EACH over up to 16 field specs. */
#define TRACERY__NARG(...) TRACERY__NARG_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TRACERY__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, ...) N
#define TRACERY__MAP(m, ...) TRACERY__CAT(TRACERY__MAP_, TRACERY__NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define TRACERY__MAP_1(m, x) m(x)
#define TRACERY__MAP_2(m, x, ...) m(x) TRACERY__MAP_1(m, __VA_ARGS__)
#define TRACERY__MAP_3(m, x, ...) m(x) TRACERY__MAP_2(m, __VA_ARGS__)
#define TRACERY__MAP_4(m, x, ...) m(x) TRACERY__MAP_3(m, __VA_ARGS__)
#define TRACERY__MAP_5(m, x, ...) m(x) TRACERY__MAP_4(m, __VA_ARGS__)
#define TRACERY__MAP_6(m, x, ...) m(x) TRACERY__MAP_5(m, __VA_ARGS__)
#define TRACERY__MAP_7(m, x, ...) m(x) TRACERY__MAP_6(m, __VA_ARGS__)
#define TRACERY__MAP_8(m, x, ...) m(x) TRACERY__MAP_7(m, __VA_ARGS__)
#define TRACERY__MAP_9(m, x, ...) m(x) TRACERY__MAP_8(m, __VA_ARGS__)
#define TRACERY__MAP_10(m, x, ...) m(x) TRACERY__MAP_9(m, __VA_ARGS__)
#define TRACERY__MAP_11(m, x, ...) m(x) TRACERY__MAP_10(m, __VA_ARGS__)
#define TRACERY__MAP_12(m, x, ...) m(x) TRACERY__MAP_11(m, __VA_ARGS__)
#define TRACERY__MAP_13(m, x, ...) m(x) TRACERY__MAP_12(m, __VA_ARGS__)
#define TRACERY__MAP_14(m, x, ...) m(x) TRACERY__MAP_13(m, __VA_ARGS__)
#define TRACERY__MAP_15(m, x, ...) m(x) TRACERY__MAP_14(m, __VA_ARGS__)
#define TRACERY__MAP_16(m, x, ...) m(x) TRACERY__MAP_15(m, __VA_ARGS__)

/* Drops the leading comma of the parameter list. */
#define TRACERY__PARAMS(...) TRACERY__DROP1(__VA_ARGS__)
#define TRACERY__DROP1(x, ...) __VA_ARGS__
#define TRACERY__EXPAND(...) __VA_ARGS__

#define TRACERY__SECTION_ATTR __attribute__((section("tracery_events"), used))

extern struct tracery_event_desc *const __start_tracery_events[] __attribute__((weak, visibility("hidden")));
extern struct tracery_event_desc *const __stop_tracery_events[] __attribute__((weak, visibility("hidden")));

/* Registers this object's events when it is loaded, unregisters them when it
 * is unloaded (dlclose). One pair per translation unit that defines events;
 * the runtime counts references so repeats are harmless. */
#define TRACERY__OBJECT_REGISTRATION                                                       \
	__attribute__((constructor)) static void tracery__register_object(void)           \
	{                                                                                  \
		tracery_register_events(__start_tracery_events, __stop_tracery_events);    \
	}                                                                                  \
	__attribute__((destructor)) static void tracery__unregister_object(void)          \
	{                                                                                  \
		tracery_unregister_events(__start_tracery_events, __stop_tracery_events);  \
	}

#ifdef __cplusplus
/* C++: descriptors are inline, defined in every TU and merged by the linker. */
#define TRACERY__LINKAGE inline
#define TRACERY__DEFINE_DESC 1
#elif defined(TRACERY_CREATE_EVENTS)
#define TRACERY__LINKAGE static
#define TRACERY__DEFINE_DESC 1
#else
#define TRACERY__LINKAGE static
#define TRACERY__DEFINE_DESC 0
#endif
#ifdef __cplusplus
#define TRACERY__DESC_LINKAGE inline
#else
#define TRACERY__DESC_LINKAGE
#endif

/* Hidden: each executable or library owns the descriptors of its events. */
#define TRACERY__DEFINE_1(prov, name, ...)                                                   \
	TRACERY__LINKAGE const struct tracery_field_desc tracery__fields__##prov##__##name[] = { \
		TRACERY__MAP(TRACERY__FD, __VA_ARGS__)};                                     \
	TRACERY__DESC_LINKAGE __attribute__((visibility("hidden")))                          \
	struct tracery_event_desc TRACERY__DESC_NAME(prov, name) = {                         \
		#prov, #name, tracery__fields__##prov##__##name,                             \
		sizeof(tracery__fields__##prov##__##name) / sizeof(struct tracery_field_desc), \
		0, 0, 0, 0, TRACERY__GATE_CALL(__VA_ARGS__)};                                \
	static struct tracery_event_desc *const tracery__ptr__##prov##__##name               \
		TRACERY__SECTION_ATTR = &TRACERY__DESC_NAME(prov, name);
#define TRACERY__DEFINE_0(prov, name, ...)                                            \
	extern struct tracery_event_desc TRACERY__DESC_NAME(prov, name)                \
		__attribute__((visibility("hidden")));

/* The emitter: TRACERY__EMIT_NAME, inlined into each TRACERY_EMIT (in its
 * unlikely branch). It calls the gate of a scalar-only event with its own
 * parameters, so a rejected event is a load, an indirect call and a return at
 * the call site; then it packs the arguments into an array on the stack and
 * calls the runtime. Other events pass that array to the gate. An event the
 * gate accepted goes to tracery_fire_gate_passed, so that its filter does not
 * run again in the probe. All of it is inlined: an out-of-line packing
 * function cost a call and a return per recorded event (~0.6 ns,
 * docs/performance.md), while a disabled event still costs only
 * TRACERY_EMIT's load and branch. PARAM, ARG and NAME map a field spec to its
 * parameter, tracery_arg initialiser and argument name (the C and the C++ API
 * have their own). */
#define TRACERY__EMITTER_WITH(prov, name, all_scalar, PARAM, ARG, NAME, ...)                        \
	__attribute__((always_inline, unused)) static inline void TRACERY__EMIT_NAME(prov, name)(    \
		TRACERY__PARAMS(TRACERY__MAP(PARAM, __VA_ARGS__)))                                   \
	{                                                                                            \
		struct tracery_event_desc *const desc_ = &TRACERY__DESC_NAME(prov, name);            \
		const tracery_gate_fn gate_ = __atomic_load_n(&desc_->gate, __ATOMIC_ACQUIRE);       \
		if (all_scalar && gate_ &&                                                           \
		    !((int (*)(TRACERY__PARAMS(TRACERY__MAP(PARAM, __VA_ARGS__))))gate_)(            \
			    TRACERY__PARAMS(TRACERY__MAP(NAME, __VA_ARGS__))))                           \
			return;                                                                      \
		const struct tracery_arg args_[] = {TRACERY__MAP(ARG, __VA_ARGS__)};                 \
		if (!all_scalar && gate_ && !((tracery_args_gate_fn)gate_)(args_, 0))                \
			return;                                                                      \
		if (gate_)                                                                           \
			tracery_fire_gate_passed(desc_, args_, gate_);                               \
		else                                                                                 \
			tracery_fire(desc_, args_);                                                  \
	}
#define TRACERY__EMITTER(prov, name, ...)                                                           \
	TRACERY__EMITTER_WITH(prov, name, TRACERY__ALL_SCALAR(__VA_ARGS__), TRACERY__PARAM, TRACERY__ARG, \
	                      TRACERY__NAME, __VA_ARGS__)

/* Declares (and, where this TU defines events, defines) event prov:name. */
#define TRACERY_EVENT(prov, name, ...)                                                     \
	TRACERY__CAT(TRACERY__DEFINE_, TRACERY__DEFINE_DESC)(prov, name, __VA_ARGS__)       \
	TRACERY__EMITTER(prov, name, __VA_ARGS__)

/* Emits prov:name; arguments follow the event's field list. */
#define TRACERY_EMIT(prov, name, ...)                                                             \
	do {                                                                                      \
		if (__builtin_expect(__atomic_load_n(&TRACERY__DESC_NAME(prov, name).enabled,   \
		                                     __ATOMIC_RELAXED), 0))                       \
			TRACERY__EMIT_NAME(prov, name)(__VA_ARGS__);                              \
	} while (0)

/* True while prov:name is enabled: guards work done only to build arguments. */
#define TRACERY_ENABLED(prov, name) \
	__builtin_expect(__atomic_load_n(&TRACERY__DESC_NAME(prov, name).enabled, __ATOMIC_RELAXED), 0)

/* Enumeration labels: TRACERY_ENUM_LABELS(color, {"red", 0, 0}, {"blue", 1, 1}) */
#define TRACERY_ENUM_LABELS(ename, ...)                                                    \
	TRACERY__LINKAGE const struct tracery_enum_entry tracery__enum_entries__##ename[] = {__VA_ARGS__}; \
	TRACERY__LINKAGE const struct tracery_enum_desc ename = {                                    \
		#ename, tracery__enum_entries__##ename,                                    \
		sizeof(tracery__enum_entries__##ename) / sizeof(struct tracery_enum_entry)}

#ifdef __cplusplus
}
#endif

/* Every TU that defines descriptors registers its object's section. */
#if defined(__cplusplus) || defined(TRACERY_CREATE_EVENTS)
TRACERY__OBJECT_REGISTRATION
#endif

#endif /* TRACERY_TRACEPOINT_H */
