/* clang-format off */
/*
 * LTTng-UST tracepoint provider of lttng-bench (bench/lttng/lttng_bench.c):
 * the twins of bench/bench_events.h,
 *   bench:ev  (uint64 a, uint32 b)     — TRACERY_U64(a), TRACERY_U32(b)
 *   bench:str (string s, uint32 b)     — TRACERY_STRING(s), TRACERY_U32(b)
 * Written with the LTTng-UST 2.13 names (lttng_ust_field_integer and
 * lttng_ust_field_string are the ctf_integer and ctf_string of the older API).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_bench_tp.h"

#if !defined(TRACERY_LTTNG_BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TRACERY_LTTNG_BENCH_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(bench, ev,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint32_t, b),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint32_t, b, b)))

LTTNG_UST_TRACEPOINT_EVENT(bench, str,
	LTTNG_UST_TP_ARGS(const char *, s, uint32_t, b),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(s, s)
		lttng_ust_field_integer(uint32_t, b, b)))

#endif /* TRACERY_LTTNG_BENCH_TP_H */

#include <lttng/tracepoint-event.h>
/* clang-format on */
