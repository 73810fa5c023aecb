/* clang-format off */
/*
 * LTTng-UST tracepoint provider of lifecycle-lttng (lifecycle_target.c): the
 * twin of its Tracery event lifecycle:tick (uint32 i).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER lifecycle

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lifecycle_lttng_tp.h"

#if !defined(TRACERY_LIFECYCLE_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TRACERY_LIFECYCLE_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(lifecycle, tick,
	LTTNG_UST_TP_ARGS(uint32_t, i),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, i, i)))

#endif /* TRACERY_LIFECYCLE_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
/* clang-format on */
