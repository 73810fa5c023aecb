/* Events of tracery-bench (bench/tracery_bench.c). */
#ifndef TRACERY_BENCH_EVENTS_H
#define TRACERY_BENCH_EVENTS_H
#include <tracery/tracepoint.h>

TRACERY_EVENT(bench, ev, TRACERY_U64(a), TRACERY_U32(b))
TRACERY_EVENT(bench, str, TRACERY_STRING(s), TRACERY_U32(b))

#endif
