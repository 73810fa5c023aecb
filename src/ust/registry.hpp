// Registry of the events this process knows, as seen by the rest of the
// runtime: listeners (sessions) learn of events as objects load and unload.
#pragma once

#include <tracery/internal/event_desc.h>
#include <tracery/internal/probe.h>

#include <vector>

namespace tracery::ust {

// Told of every event registered or about to be unregistered. Called without
// the registry lock held, from the thread that loads/unloads the object.
class RegistryListener {
public:
	virtual ~RegistryListener() = default;
	virtual void on_event_registered(tracery_event_desc *desc) = 0;
	virtual void on_event_unregistered(tracery_event_desc *desc) = 0;
};

// Adds a listener and replays the events registered so far to it.
void add_listener(RegistryListener *listener);
// Once it returns, no call into the listener runs or is made: it may be
// destroyed. Not from the listener's own calls (it would wait for itself).
void remove_listener(RegistryListener *listener);

std::vector<tracery_event_desc *> registered_events();

// tracery_probe_attach() with a gate (tracepoint.h) that is installed while
// this probe is the event's only one. The gate's code must never be freed.
// gate_passed_fn, if given, is called instead of fn for an event that gate
// accepted (tracery_fire_gate_passed): fn without the filter the gate ran.
int attach_probe(tracery_event_desc *desc, tracery_probe_fn fn, void *priv, tracery_gate_fn gate,
                 tracery_probe_fn gate_passed_fn = nullptr);

// Held across fork() so that the child never inherits them locked: the
// registry's lock, the code generation lock (filter/jit.hpp) and the grace
// period's (rcu.hpp), taken in that order (a thread generating code never waits
// for the registry).
void lock_for_fork();
void unlock_after_fork();
// In the child, after unlock_after_fork(): forgets the read sections of the
// threads the child does not have.
void after_fork_in_child();

} // namespace tracery::ust
