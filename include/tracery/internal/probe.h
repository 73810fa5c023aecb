/*
 * tracery/internal/probe.h — the probe API of libtracery's sessions.
 *
 * How code inside libtracery (sessions, the daemon's runtime, their tests and
 * benchmarks) lists the events of the process and attaches the probes that
 * record them. Internal to libtracery: it may change from one release to the
 * next, and instrumented programs do not need it (tracepoint.h does not
 * include it).
 */
#ifndef TRACERY_INTERNAL_PROBE_H
#define TRACERY_INTERNAL_PROBE_H

#include <tracery/internal/entry.h>
#include <tracery/internal/event_desc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calls fn once per event currently registered in this process. */
TRACERY_API void tracery_list_events(void (*fn)(const struct tracery_event_desc *desc, void *arg), void *arg);

/* Probe registration (used by sessions). A probe is called from
 * tracery_fire() with its private data; attach and detach never block a
 * thread that emits the event. Returns 0, or -1 if the event is unknown or
 * the probe is already (not) attached. */
typedef void (*tracery_probe_fn)(void *priv, const struct tracery_event_desc *desc, const struct tracery_arg *args);
TRACERY_API int tracery_probe_attach(struct tracery_event_desc *desc, tracery_probe_fn fn, void *priv);
TRACERY_API int tracery_probe_detach(struct tracery_event_desc *desc, tracery_probe_fn fn, void *priv);
/* Waits until no thread still runs a probe detached before this call. */
TRACERY_API void tracery_probe_synchronize(void);

#ifdef __cplusplus
}
#endif

#endif /* TRACERY_INTERNAL_PROBE_H */
