/*
 * preload/func/func.c — libtracery-preload-func.so: the entry and exit of every
 * function of a program built with -finstrument-functions, with the
 * function's address and its call site, as LTTng-UST's
 * liblttng-ust-cyg-profile.so records them (lttng_ust_cyg_profile:func_entry
 * and func_exit, fields addr and call_site).
 *
 * GCC and clang call __cyg_profile_func_enter/exit at every entry and exit of
 * an instrumented function; glibc's own are empty, and LD_PRELOAD puts these
 * first. While no session records them each costs the call, one load of the
 * event's enabled byte and a branch. This file is compiled without
 * -finstrument-functions and its functions carry no_instrument_function, so
 * the helper never calls itself.
 */
#define TRACERY_CREATE_EVENTS
#include <tracery/tracepoint.h>

/* clang-format off */
TRACERY_EVENT(lttng_ust_cyg_profile, func_entry, TRACERY_HEX(U64, addr), TRACERY_HEX(U64, call_site))
TRACERY_EVENT(lttng_ust_cyg_profile, func_exit, TRACERY_HEX(U64, addr), TRACERY_HEX(U64, call_site))
/* clang-format on */

#define TRACERY_PRELOAD_EXPORT __attribute__((visibility("default"), no_instrument_function))

TRACERY_PRELOAD_EXPORT void __cyg_profile_func_enter(void *func, void *call_site)
{
	TRACERY_EMIT(lttng_ust_cyg_profile, func_entry, (uint64_t)(uintptr_t)func, (uint64_t)(uintptr_t)call_site);
}

TRACERY_PRELOAD_EXPORT void __cyg_profile_func_exit(void *func, void *call_site)
{
	TRACERY_EMIT(lttng_ust_cyg_profile, func_exit, (uint64_t)(uintptr_t)func, (uint64_t)(uintptr_t)call_site);
}
