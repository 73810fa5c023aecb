/*
 * lifecycle-{plain,tracery,lttng}: the trivial program bench/process-lifecycle
 * times from exec to exit. It emits ten events in main (lifecycle:tick, i =
 * 0..9) and exits. Built three times from this one file: without any tracer
 * (the events compile to nothing), with Tracery (LIFECYCLE_TRACERY) and with
 * LTTng-UST (LIFECYCLE_LTTNG, events of lifecycle_lttng_tp.h).
 */
#if defined(LIFECYCLE_TRACERY)
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>
TRACERY_EVENT(lifecycle, tick, TRACERY_U32(i))
#define TICK(i) TRACERY_EMIT(lifecycle, tick, i)
#elif defined(LIFECYCLE_LTTNG)
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lifecycle_lttng_tp.h"
#define TICK(i) lttng_ust_tracepoint(lifecycle, tick, i)
#else
#define TICK(i) ((void)(i))
#endif

#include <stdint.h>

int main(void)
{
	for (uint32_t i = 0; i < 10; i++)
		TICK(i);
	return 0;
}
