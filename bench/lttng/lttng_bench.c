/*
 * lttng-bench <events_per_thread> <threads> <ev|str|none> [<events_per_second_per_thread>]
 *
 * The LTTng-UST twin of tracery-bench (bench/tracery_bench.c): same harness
 * (bench/bench_main.h: arguments, barrier, timing, output), same loops, with
 * lttng_ust_tracepoint() in place of TRACERY_EMIT. The provider (probes) is
 * built into this executable. Whether events are recorded is decided outside,
 * by an lttng session enabling bench:ev / bench:str (see bench/compare-lttng).
 */
#define _GNU_SOURCE
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lttng_bench_tp.h"

#include "../bench_main.h"

static inline __attribute__((always_inline)) void bench_loop(enum bench_kind kind, uint64_t events)
{
	if (kind == BENCH_EV) {
		for (uint64_t i = 0; i < events; i++)
			lttng_ust_tracepoint(bench, ev, i, 42);
	} else {
		for (uint64_t i = 0; i < events; i++)
			lttng_ust_tracepoint(bench, str, "hello tracer", 42);
	}
}

int main(int argc, char **argv) { return bench_main("lttng-bench", argc, argv); }
