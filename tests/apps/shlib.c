/* shlib: a shared library linked by dlopen-host, with its own events. */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

TRACERY_EVENT(shlib, call, TRACERY_STRING(what))

__attribute__((visibility("default"))) void shlib_call(const char *what) { TRACERY_EMIT(shlib, call, what); }
