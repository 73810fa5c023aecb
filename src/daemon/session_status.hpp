// What the daemon shows of a session (`tracery status`, `list`, and the
// relay's counts in the replies of `create` and `stop`): every status
// document of a session is built here, from its parts' accessors.
#pragma once

#include "daemon/trace_session.hpp"

#include "control/messages.hpp"

#include <optional>

namespace tracery::daemon {

// The session, its channels, its kernel domain and its relay (what the
// daemon knows of it, its programs and its owner's quota, is the caller's).
control::StatusReply session_status(const TraceSession &s);
// The relay's counts (none without a relay).
std::optional<control::RelayStatus> relay_status(const TraceSession &s);

} // namespace tracery::daemon
