// ust/statedump.hpp — the state dump of loaded objects: libtracery's own
// events, with LTTng-UST's names and fields (`lttng_ust_statedump:start`, one
// `bin_info` per loaded object, `build_id` and `debug_link` where it has them,
// `procname`, `end`), so that a reader can resolve the addresses a trace
// holds (function addresses, callers, the `ip` context) to the objects
// mapped when they were recorded, as babeltrace2's debug-info filter and
// Trace Compass do with LTTng's. It is recorded when a session starts
// tracing the program, on a thread of the library's (never the program's),
// and only by the sessions that enable its events.
#pragma once

namespace tracery::ust {

// Registers the state dump's events: from the library's constructor, before
// the program registers with a session daemon (its hello lists them).
void register_statedump_events();

// Whether a session enables at least one of the state dump's events.
bool statedump_enabled();

// Records the state dump now, on the calling thread, if statedump_enabled();
// nothing otherwise.
void record_statedump();

// Daemonless mode: records the state dump on a thread of its own, so that the
// program's start does not wait for it (no thread while statedump_enabled()
// is false). join_statedump_thread() waits for it: before the session stops,
// and, from a fork handler of its own, before fork() (a child must not
// inherit the loader's lock held by it).
void start_statedump_thread();
void join_statedump_thread();

} // namespace tracery::ust
