/*
 * tracery-bench <events_per_thread> <threads> <ev|str|none> [<events_per_second_per_thread>]
 *
 * Emits bench:ev (a = loop counter, b = 42) or bench:str (s = "hello tracer",
 * b = 42) in a tight loop on each thread, or runs the empty loop (none).
 * Arguments, threads, timing and output: bench/bench_main.h, shared with the
 * LTTng-UST twin bench/lttng/lttng_bench.c. Whether events are recorded is
 * decided outside: TRACERY_OUTPUT (daemonless mode) or a session of the daemon.
 */
#define _GNU_SOURCE
#define TRACERY_CREATE_EVENTS
#include "bench_events.h"

#include "bench_main.h"

static inline __attribute__((always_inline)) void bench_loop(enum bench_kind kind, uint64_t events)
{
	if (kind == BENCH_EV) {
		for (uint64_t i = 0; i < events; i++)
			TRACERY_EMIT(bench, ev, i, 42);
	} else {
		for (uint64_t i = 0; i < events; i++)
			TRACERY_EMIT(bench, str, "hello tracer", 42);
	}
}

int main(int argc, char **argv) { return bench_main("tracery-bench", argc, argv); }
