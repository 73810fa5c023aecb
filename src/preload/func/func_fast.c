/*
 * preload/func/func_fast.c — libtracery-preload-func-fast.so: the entry and
 * exit of every function of a program built with -finstrument-functions, as
 * LTTng-UST's liblttng-ust-cyg-profile-fast.so records them: the function's
 * address at entry (lttng_ust_cyg_profile_fast:func_entry, field addr) and no
 * field at exit (func_exit), half the bytes of func.c's events.
 *
 * TRACERY_EVENT declares events of one field or more: func_exit, which has
 * none, is a descriptor written out here, placed in the same tracery_events
 * section (registered by the same constructor) and fired with no arguments.
 * Compiled without -finstrument-functions, as func.c.
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

TRACERY_EVENT(lttng_ust_cyg_profile_fast, func_entry, TRACERY_HEX(U64, addr))

static struct tracery_event_desc func_exit_event = {
	"lttng_ust_cyg_profile_fast", "func_exit", NULL, 0, 0, NULL, NULL, NULL, TRACERY_GATE_ARGS};
static struct tracery_event_desc *const func_exit_event_ptr TRACERY__SECTION_ATTR = &func_exit_event;

#define TRACERY_PRELOAD_EXPORT __attribute__((visibility("default"), no_instrument_function))

TRACERY_PRELOAD_EXPORT void __cyg_profile_func_enter(void *func, void *call_site)
{
	(void)call_site;
	TRACERY_EMIT(lttng_ust_cyg_profile_fast, func_entry, (uint64_t)(uintptr_t)func);
}

TRACERY_PRELOAD_EXPORT void __cyg_profile_func_exit(void *func, void *call_site)
{
	(void)func;
	(void)call_site;
	if (__builtin_expect(__atomic_load_n(&func_exit_event.enabled, __ATOMIC_RELAXED), 0))
		tracery_fire(&func_exit_event, NULL);
}
