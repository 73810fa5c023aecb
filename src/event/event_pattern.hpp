// event/event_pattern.hpp — whether an event pattern (`enable-event -u`,
// TRACERY_EVENTS) selects an event, by its full name "provider:name": a
// shell wildcard (fnmatch), with one exception. The events a library
// records about the process itself rather than for the program, libtracery's
// state dump of loaded objects (provider `lttng_ust_statedump`), are selected
// only by a pattern that names their provider without a wildcard
// (`lttng_ust_statedump:*`, `lttng_ust_statedump:bin_info`), never by `*`
// or `-a`: a session that asks for "every event" gets the program's, as
// before the state dump existed. The program and the daemon decide with this
// one function.
#pragma once

#include <string>

namespace tracery::event {

// The provider selected only by name (see above).
inline constexpr char kStatedumpProvider[] = "lttng_ust_statedump";

bool event_pattern_matches(const std::string &pattern, const std::string &full_name);

} // namespace tracery::event
