// A program registered with the daemon: its identity (from SO_PEERCRED, not
// from what it says), its events (schema key -> schema), its control socket,
// and the stop requests it acknowledged.
#pragma once

#include "control/wire.hpp"

#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>

namespace tracery::daemon {

struct App {
	uint64_t id = 0;
	control::PeerCred cred;
	std::string procname;
	base::Fd sock;
	// Guarded by the daemon's lock:
	std::map<std::string, nlohmann::json> events;
	std::set<uint64_t> acked;
	std::map<uint64_t, nlohmann::json> refused; // request -> filters it refused
	std::set<uint64_t> tracing;                 // sessions whose buffers it confirmed it writes into
	bool gone = false;

	// Sends without blocking for long (the socket has a send timeout): a
	// program that stops reading is treated as gone.
	bool send(const nlohmann::json &msg, std::span<const int> fds = {});

private:
	std::mutex send_mutex_;
};

} // namespace tracery::daemon
