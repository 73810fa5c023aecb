/*
 * tracery/internal/emitter.h — how TRACERY_EVENT and TRACERY_EMIT are made.
 *
 * The implementation macros (TRACERY__*) behind the public macros of
 * tracepoint.h and tracepoint.hpp: the field spec tuples mapped to
 * descriptors, emitter parameters and arguments; the descriptor definitions
 * placed in the tracery_events section; the inlined emitter; the per-object
 * registration. Not for direct use: include tracery/tracepoint.h. The code
 * they generate calls only the entry points of entry.h.
 */
#ifndef TRACERY_INTERNAL_EMITTER_H
#define TRACERY_INTERNAL_EMITTER_H

#include <stdint.h>
#include <string.h>

#include <tracery/internal/entry.h>
#include <tracery/internal/event_desc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* clang-format off */
#define TRACERY__CAT_(a, b) a##b
#define TRACERY__CAT(a, b) TRACERY__CAT_(a, b)
#define TRACERY__DESC_NAME(prov, name) tracery_event__##prov##__##name
#define TRACERY__EMIT_NAME(prov, name) tracery_emit__##prov##__##name

/* A field spec is a tuple (KIND, args...), made by the field-kind macros of
 * tracepoint.h (TRACERY_U8 ...) and dispatched by KIND below. The C type of
 * each integer kind: */
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
#define TRACERY__FD_HEX(t, ct, n) {#n, TRACERY_TYPE_##t, TRACERY_FIELD_HEX, 0, 0},
#define TRACERY__FD_ENUM(t, ct, n, e) {#n, TRACERY_TYPE_ENUM, TRACERY_TYPE_##t, 0, &e},
#define TRACERY__FD_STRING(n) {#n, TRACERY_TYPE_STRING, 0, 0, 0},
#define TRACERY__FD_ARRAY(t, ct, n, c) {#n, TRACERY_TYPE_ARRAY, TRACERY_TYPE_##t, (c), 0},
#define TRACERY__FD_SEQUENCE(t, ct, n) {#n, TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_##t, 0, 0},
#define TRACERY__FD_BLOB(n) {#n, TRACERY_TYPE_BLOB, 0, 0, 0},

/* Parameters of the emit function (each ends with a comma, trimmed below). */
#define TRACERY__PARAM(spec) TRACERY__PARAM_ spec
#define TRACERY__PARAM_(kind, ...) TRACERY__PARAM_##kind(__VA_ARGS__)
#define TRACERY__PARAM_INT(t, ct, n) , ct n
#define TRACERY__PARAM_HEX TRACERY__PARAM_INT
#define TRACERY__PARAM_ENUM(t, ct, n, e) , ct n
#define TRACERY__PARAM_STRING(n) , const char *n
#define TRACERY__PARAM_ARRAY(t, ct, n, c) , const ct *n
#define TRACERY__PARAM_SEQUENCE(t, ct, n) , const ct *n, uint32_t n##_count
#define TRACERY__PARAM_BLOB(n) , const void *n, uint32_t n##_size

/* The parameter names, as arguments of a call (each starts with a comma). */
#define TRACERY__NAME(spec) TRACERY__NAME_ spec
#define TRACERY__NAME_(kind, ...) TRACERY__NAME_##kind(__VA_ARGS__)
#define TRACERY__NAME_INT(t, ct, n) , n
#define TRACERY__NAME_HEX TRACERY__NAME_INT
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
#define TRACERY__SCALAR_HEX && 1
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
#define TRACERY__ARG_HEX TRACERY__ARG_INT
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
 * the call site; then TRACERY__FIRE_NAME packs the arguments into an array on
 * the stack and calls the runtime. Other events pass that array to the gate.
 * An event the gate accepted goes to tracery_fire_gate_passed, so that its
 * filter does not run again in the probe. All of it is inlined: an
 * out-of-line packing function cost a call and a return per recorded event
 * (~0.6 ns, docs/performance.md), while a disabled event still costs only
 * TRACERY_EMIT's load and branch. The packing is a function of its own
 * because the array takes the addresses of its parameters: the emitter's own
 * then stay in registers for the gate, instead of going through the stack
 * first. PARAM, ARG and NAME map a field spec to its parameter, tracery_arg
 * initialiser and argument name (the C and the C++ API have their own).
 * TRACERY__EMIT_AT_NAME (TRACERY_EMIT_AT) is the same emitter with one more
 * parameter first, the address to record as the ip context, handed to the
 * runtime's _at entry points. */
#define TRACERY__FIRE_NAME(prov, name) tracery_fire__##prov##__##name
#define TRACERY__FIRE_AT_NAME(prov, name) tracery_fire_at__##prov##__##name
#define TRACERY__EMIT_AT_NAME(prov, name) tracery_emit_at__##prov##__##name
/* One emitter and its packing function. IP_PARAM is () or (const void *ip_,)
 * (the emitters' first parameter), IP_FIRST the same as an argument, IP_LAST
 * () or (, ip_) (the runtime's last argument); FIRE and FIRE_GATE_PASSED are
 * the runtime's entry points. */
#define TRACERY__EMITTER_ONE(prov, name, emit_fn, fire_fn, IP_PARAM, IP_FIRST, IP_LAST, FIRE,                       \
                             FIRE_GATE_PASSED, all_scalar, PARAM, ARG, NAME, ...)                                   \
	__attribute__((always_inline, unused)) static inline void fire_fn(                                          \
		TRACERY__EXPAND IP_PARAM tracery_gate_fn gate_ TRACERY__MAP(PARAM, __VA_ARGS__))                    \
	{                                                                                                           \
		struct tracery_event_desc *const desc_ = &TRACERY__DESC_NAME(prov, name);                           \
		const struct tracery_arg args_[] = {TRACERY__MAP(ARG, __VA_ARGS__)};                                \
		if (!all_scalar && gate_ && !((tracery_args_gate_fn)gate_)(args_, 0))                               \
			return;                                                                                     \
		if (gate_)                                                                                          \
			FIRE_GATE_PASSED(desc_, args_, gate_ TRACERY__EXPAND IP_LAST);                              \
		else                                                                                                \
			FIRE(desc_, args_ TRACERY__EXPAND IP_LAST);                                                 \
	}                                                                                                           \
	__attribute__((always_inline, unused)) static inline void emit_fn(                                          \
		TRACERY__EXPAND IP_PARAM TRACERY__PARAMS(TRACERY__MAP(PARAM, __VA_ARGS__)))                         \
	{                                                                                                           \
		const tracery_gate_fn gate_ =                                                                       \
			__atomic_load_n(&TRACERY__DESC_NAME(prov, name).gate, __ATOMIC_ACQUIRE);                    \
		if (all_scalar && gate_ &&                                                                          \
		    !((int (*)(TRACERY__PARAMS(TRACERY__MAP(PARAM, __VA_ARGS__))))gate_)(                           \
			    TRACERY__PARAMS(TRACERY__MAP(NAME, __VA_ARGS__))))                                      \
			return;                                                                                     \
		fire_fn(TRACERY__EXPAND IP_FIRST gate_ TRACERY__MAP(NAME, __VA_ARGS__));                            \
	}
#define TRACERY__EMITTER_WITH(prov, name, all_scalar, PARAM, ARG, NAME, ...)                                        \
	TRACERY__EMITTER_ONE(prov, name, TRACERY__EMIT_NAME(prov, name), TRACERY__FIRE_NAME(prov, name), (), (), (), \
	                     tracery_fire, tracery_fire_gate_passed, all_scalar, PARAM, ARG, NAME, __VA_ARGS__)     \
	TRACERY__EMITTER_ONE(prov, name, TRACERY__EMIT_AT_NAME(prov, name), TRACERY__FIRE_AT_NAME(prov, name),      \
	                     (const void *ip_,), (ip_,), (, ip_), tracery_fire_at, tracery_fire_gate_passed_at,     \
	                     all_scalar, PARAM, ARG, NAME, __VA_ARGS__)
#define TRACERY__EMITTER(prov, name, ...)                                                           \
	TRACERY__EMITTER_WITH(prov, name, TRACERY__ALL_SCALAR(__VA_ARGS__), TRACERY__PARAM, TRACERY__ARG, \
	                      TRACERY__NAME, __VA_ARGS__)
/* clang-format on */

#ifdef __cplusplus
}
#endif

#endif /* TRACERY_INTERNAL_EMITTER_H */
