// relay/session_feed.hpp — where a session's frames go besides the disk:
// made at the session's HELLO (ServerOptions::feed), given each frame by the
// session's writer thread once the frame is written, in order, and
// destroyed when the session is over (all its frames given). The relay's
// ClickHouse sink is one (clickhouse_sink.hpp); the loop knows only this.
#pragma once

#include "control/relay_protocol.hpp"

namespace tracery::relay {

class SessionFeed {
public:
	virtual ~SessionFeed() = default;
	// Must not wait on anything slow (it holds the session's disk writes):
	// it may take the frame's bytes (a PACKET's, METADATA's text).
	virtual void written(control::relay::Frame &f) = 0;
};

} // namespace tracery::relay
