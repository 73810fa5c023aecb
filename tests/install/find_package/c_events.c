/* The C half of the find_package app: events declared with tracepoint.h. */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

TRACERY_EVENT(fp_c, tick, TRACERY_U64(count), TRACERY_DOUBLE(ratio), TRACERY_BOOL(last), TRACERY_SEQUENCE(S32, history))

void emit_c_events(void);

void emit_c_events(void)
{
	int32_t history[4];
	for (int i = 0; i < 4; i++) {
		history[i] = -i * i;
		TRACERY_EMIT(fp_c, tick, (uint64_t)i * 1000, i / 4.0, i == 3, history, (uint32_t)(i + 1));
	}
}
