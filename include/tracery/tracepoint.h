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
 * TRACERY_EMIT_AT(ip, app, request, ...) records `ip` as the event's ip
 * context (a wrapper's caller) instead of the address of the emit.
 *
 * Field kinds (the macro argument list of TRACERY_EVENT):
 *   TRACERY_U8/U16/U32/U64(name), TRACERY_S8/S16/S32/S64(name)  integers
 *   TRACERY_FLOAT(name), TRACERY_DOUBLE(name), TRACERY_BOOL(name)
 *   TRACERY_HEX(INT, name)           an integer of type INT (U8..S64) that readers
 *                                    show in hex, as an address: 0x7F3A5C000B70
 *   TRACERY_ENUM(enum, INT, name)    INT is U8..S64, enum made with TRACERY_ENUM_LABELS
 *   TRACERY_STRING(name)             const char *, NUL-terminated (NULL records "")
 *   TRACERY_ARRAY(INT, name, N)      const INT-type *, exactly N elements
 *   TRACERY_SEQUENCE(INT, name)      two arguments: const INT-type *, uint32_t count
 *   TRACERY_BLOB(name)               two arguments: const void *, uint32_t byte count
 * At most 16 fields per event.
 *
 * This header is the source API. The descriptor layout and the entry points it
 * compiles to are in tracery/internal/ (see tracery/README.md).
 */
#ifndef TRACERY_TRACEPOINT_H
#define TRACERY_TRACEPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* clang-format off */
#include <tracery/internal/event_desc.h>
#include <tracery/internal/entry.h>
#include <tracery/internal/emitter.h>
/* clang-format on */

/* ---- Field kinds ---- */

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
/* An integer shown in base 16 (an address): INT is U8..S64. */
#define TRACERY_HEX(it, n) (HEX, it, TRACERY__CTYPE_##it, n)
#define TRACERY_ENUM(e, it, n) (ENUM, it, TRACERY__CTYPE_##it, n, e)
#define TRACERY_STRING(n) (STRING, n)
#define TRACERY_ARRAY(it, n, count) (ARRAY, it, TRACERY__CTYPE_##it, n, count)
#define TRACERY_SEQUENCE(it, n) (SEQUENCE, it, TRACERY__CTYPE_##it, n)
#define TRACERY_BLOB(n) (BLOB, n)

/* ---- Declaring and emitting events ---- */

/* Declares (and, where this TU defines events, defines) event prov:name. */
/* clang-format off */
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

/* Emits prov:name as TRACERY_EMIT does, recording `ip` (a code address, const
 * void *) as the event's ip context instead of the address of this emit: a
 * wrapper passes its caller's, __builtin_return_address(0), so that a trace
 * names the code that called the wrapped function. */
#define TRACERY_EMIT_AT(ip, prov, name, ...)                                                      \
	do {                                                                                      \
		if (__builtin_expect(__atomic_load_n(&TRACERY__DESC_NAME(prov, name).enabled,   \
		                                     __ATOMIC_RELAXED), 0))                       \
			TRACERY__EMIT_AT_NAME(prov, name)((ip), __VA_ARGS__);                     \
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
/* clang-format on */

/* Every TU that defines descriptors registers its object's section. */
#if defined(__cplusplus) || defined(TRACERY_CREATE_EVENTS)
TRACERY__OBJECT_REGISTRATION
#endif

#endif /* TRACERY_TRACEPOINT_H */
