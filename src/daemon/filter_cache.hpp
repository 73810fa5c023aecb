// The event filters a session's programs apply: each filter expression of a
// channel's rules compiled (filter/compiler.hpp) for each event version it
// applies to, once per session, kept for the programs that bring the same
// events later.
#pragma once

#include "daemon/channel.hpp"
#include "daemon/session_identity.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>

namespace tracery::daemon {

class FilterCache {
public:
	explicit FilterCache(const SessionIdentity &session) : session_(session) {}

	// The filters of those events that `ch` records only when a filter
	// accepts them, compiled for each event version: schema key -> [hex of
	// the bytecode]. A filter that does not apply to an event's field types
	// becomes one that rejects every event (and is logged).
	std::map<std::string, std::vector<std::string>>
	filters_for(const Channel &ch, const std::map<std::string, nlohmann::json> &events);

private:
	const SessionIdentity &session_;
	std::map<std::pair<std::string, std::string>, std::string> bytecode_; // (key, filter) -> hex
};

} // namespace tracery::daemon
