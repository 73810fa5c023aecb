/*
 * hello-c: a small C program instrumented with tracery (see docs/instrumenting.md).
 * Run it traced without a daemon:  TRACERY_OUTPUT=/tmp/hello-trace ./hello-c
 */
#define TRACERY_CREATE_EVENTS /* this file holds the event descriptors */
#include <tracery/tracepoint.h>

#include <stdio.h>
#include <string.h>

TRACERY_ENUM_LABELS(hello_state, {"idle", 0, 0}, {"busy", 1, 1}, {"done", 2, 2});

TRACERY_EVENT(hello, greeting, TRACERY_STRING(who), TRACERY_U32(count))
TRACERY_EVENT(hello, step, TRACERY_S64(value), TRACERY_DOUBLE(ratio), TRACERY_ENUM(hello_state, U8, state),
              TRACERY_SEQUENCE(S32, history))

int main(int argc, char **argv)
{
	const char *who = argc > 1 ? argv[1] : "world";
	int32_t history[8];
	TRACERY_EMIT(hello, greeting, who, (uint32_t)strlen(who));
	for (int i = 0; i < 8; i++) {
		history[i] = i * i;
		uint8_t state = i < 7 ? 1 : 2;
		TRACERY_EMIT(hello, step, (int64_t)i - 4, i / 8.0, state, history, (uint32_t)(i + 1));
	}
	printf("hello, %s: 9 events emitted\n", who);
	return 0;
}
