// relay/relay_server.hpp — tracery-relayd's event loop: a listening TCP
// socket for senders and two for live viewers (lttng-live in clear for the
// sessions marked public; after TLS and authentication, ViewerGate, for
// those of the viewer's key), any number of each up to a cap. A sender is a non-blocking connection read in bounded
// slices (no sender can hold the loop), its bytes decoded
// (control::relay::Decoder) and queued to its session's writer thread
// (WriteQueue), which does the disk writes; a sender whose writes fall behind
// is told so (NOTICE) and not read until they catch up, and so is one whose
// disk refuses its writes (full, failing) until it takes them again. A viewer is answered
// from the live sessions' in-memory index and the files already written
// (LiveViewer). A malformed frame or request, or a refused one, closes that
// connection with one log line; so does a session whose writer thread cannot
// start, or anything thrown while serving one connection. A viewer past
// CONNECT that sends and takes nothing for viewer_idle_timeout_ms is closed;
// every accepted socket has TCP keepalive. What the relay holds from senders
// is bounded by one memory budget (MemoryBudget), and a frame begun must be
// whole within frame_timeout_ms.
#pragma once

#include "base/fd.hpp"
#include "control/live_protocol.hpp"
#include "relay/sender_gate.hpp"
#include "relay/session_feed.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tracery::relay {

struct ServerOptions {
	std::string listen = "127.0.0.1";
	uint16_t port = 5342; // 0: any free port (tests)
	// The plain lttng-live port (babeltrace2; no authentication: it serves
	// only the sessions their senders marked public), on its own address.
	std::string live_listen = "127.0.0.1";
	uint16_t live_port = 5344; // 0: any free port (tests)
	// The authenticated viewer port (lttng-live after TLS, when senders have
	// it, and the senders' keys), on `listen`; opened when there are keys.
	uint16_t viewer_port = control::live::kDefaultViewerPort; // 0: any free port (tests)
	std::string output;                                       // exists
	// Senders at once, counting the closed ones whose frames are still being written.
	size_t max_connections = 1024;
	size_t max_viewers = 64;               // viewer connections at once
	uint32_t max_viewers_per_session = 16; // attached to one session at once
	int hello_timeout_ms = 10000;          // a sender without HELLO, a viewer without CONNECT, this long: closed
	// A viewer past CONNECT that sends nothing and takes nothing of its replies this long: closed
	// (babeltrace2 and tracery view --live ask again and again while they read a session).
	int viewer_idle_timeout_ms = 60000;
	// A sender's frames queued and not yet written: over queue_high, it is not
	// read (and told so) until they are under queue_low.
	size_t queue_high = 64u * 1024 * 1024, queue_low = 16u * 1024 * 1024;
	// All the relay holds from senders (frames arriving, frames queued for
	// the writer threads): a read that does not fit waits for memory to be
	// freed, in turn (docs/relay-protocol.md, Limits). At least one whole
	// frame and a read (17 MiB).
	size_t memory_budget = 512u * 1024 * 1024;
	// A frame whose header came and whose body is not whole this long after: its sender is closed.
	int frame_timeout_ms = 30000;
	// Who may send, through what, how much (sender_gate.hpp).
	SenderPolicy senders;
	// Runs on a session's writer thread before each frame is written (tests: a slow disk).
	std::function<void()> before_write;
	// Where each session's frames go besides the disk (--clickhouse), made at
	// its HELLO (the session's path under output); empty: nowhere.
	std::function<std::unique_ptr<SessionFeed>(const control::relay::Hello &, const std::string &relative_dir)>
		feed;
};

class RelayServer {
public:
	// Binds and listens; throws std::runtime_error saying why not (also a
	// listen address beyond loopback that check_policy() refuses).
	explicit RelayServer(ServerOptions options);
	~RelayServer();
	RelayServer(const RelayServer &) = delete;
	RelayServer &operator=(const RelayServer &) = delete;

	// The ports bound (the ones asked for, or the ones chosen for 0).
	uint16_t port() const { return port_; }
	uint16_t live_port() const { return live_port_; }
	uint16_t viewer_port() const { return viewer_port_; } // 0 when not opened
	// Serves until stop() or SIGTERM/SIGINT when handle_signals is set.
	void run(bool handle_signals);
	// From another thread or a signal handler: run() returns soon.
	void stop();

	// Each log line (default: stderr).
	std::function<void(const std::string &)> log;

private:
	struct Impl;
	Impl *impl_;
	uint16_t port_ = 0, live_port_ = 0, viewer_port_ = 0;
};

} // namespace tracery::relay
