/* late-plugin: the only library of late-tracery-host linked with libtracery,
 * so that dlopen brings libtracery in while the host's threads run. */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

TRACERY_EVENT(late, ev, TRACERY_U32(who), TRACERY_U32(i))

__attribute__((visibility("default"))) void late_emit(unsigned who, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		TRACERY_EMIT(late, ev, who, i);
}
