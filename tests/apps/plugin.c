/* plugin: a library loaded with dlopen by dlopen-host, with its own events. */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

TRACERY_EVENT(plugin, work, TRACERY_U32(n))

__attribute__((visibility("default"))) void plugin_run(unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		TRACERY_EMIT(plugin, work, i);
}
