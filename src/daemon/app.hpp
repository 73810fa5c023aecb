// A program registered with the daemon: its identity (from SO_PEERCRED, not
// from what it says, but for its ids in namespaces of its own), its events (schema key -> schema), its control socket,
// and the stop requests it acknowledged.
#pragma once

#include "control/messages.hpp"
#include "control/wire.hpp"
#include "daemon/process_tracking.hpp"

#include <deque>
#include <functional>
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
	ProcessIds ids; // for `track -u`: registered_ids()
	base::Fd sock;
	// Guarded by the daemon's lock:
	std::map<std::string, nlohmann::json> events;
	std::map<uint64_t, uint64_t> awaiting; // request sent, not yet acknowledged -> its session
	// acknowledged request -> filters it refused (the newest few)
	std::map<uint64_t, std::vector<control::FilterRefusal>> refused;
	std::set<uint64_t> tracing; // sessions whose buffers it confirmed it writes into
	bool gone = false;
	bool told_unknown_type = false; // a message of an unknown type was logged

	// Sends a message (a body control::encode made) without ever blocking (the daemon's lock may be held): what the
	// socket does not take now waits here, and on_blocked asks the server
	// to flush() when the socket can take more. A program that lets more
	// than kMaxQueued bytes wait does not read its socket, and is
	// disconnected (as when the send fails). False then.
	bool send(const nlohmann::json &msg, std::span<const int> fds = {});
	// Sends what waits, as far as the socket takes it; false if the program is gone.
	bool flush();
	bool wants_write();
	// Ends the connection; the server sees its end and drops the program.
	void shutdown_link();
	std::function<void()> on_blocked;

	static constexpr size_t kMaxQueued = 64u << 20;

	// Its ids from its credentials and what its hello says: a program in
	// the daemon's pid and user namespaces has the ids the daemon sees (its
	// claims are ignored); another's vpid, vuid and vgid are what it says,
	// as LTTng takes them.
	void registered_ids(const control::Hello &hello);

private:
	struct Out {
		std::string frame;
		std::vector<base::Fd> fds; // copies, sent with the first byte
		size_t sent = 0;
	};
	bool drop(const char *what);
	std::mutex send_mutex_;
	std::deque<Out> queue_;
	size_t queued_ = 0;
};

} // namespace tracery::daemon
