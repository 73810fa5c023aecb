// What the daemon shows of a session (`tracery status`, `list`, and the
// relay's counts in the replies of `create` and `stop`): every status
// document of a session is built here, from its parts' accessors.
#pragma once

#include "daemon/trace_session.hpp"

#include <nlohmann/json.hpp>

namespace tracery::daemon {

// The session, its channels, its kernel domain and its relay.
nlohmann::json session_status(const TraceSession &s);
// The relay's counts (null without a relay).
nlohmann::json relay_status(const TraceSession &s);

} // namespace tracery::daemon
