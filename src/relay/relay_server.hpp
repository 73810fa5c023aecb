// relay/relay_server.hpp — tracery-relayd's event loop: one listening TCP
// socket, any number of senders up to a cap, each a non-blocking connection
// read in bounded slices (no sender can hold the loop), its bytes decoded
// (control::relay::Decoder) and applied to its session (SessionWriter). A
// malformed frame or a refused one closes that connection with one log line.
#pragma once

#include "base/fd.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace tracery::relay {

struct ServerOptions {
	std::string listen = "127.0.0.1";
	uint16_t port = 5342; // 0: any free port (tests)
	std::string output;   // exists
	size_t max_connections = 1024;
	int hello_timeout_ms = 10000; // a connection silent this long before HELLO is closed
};

class RelayServer {
public:
	// Binds and listens; throws std::runtime_error saying why not.
	explicit RelayServer(ServerOptions options);
	~RelayServer();
	RelayServer(const RelayServer &) = delete;
	RelayServer &operator=(const RelayServer &) = delete;

	// The port bound (the one asked for, or the one chosen for 0).
	uint16_t port() const { return port_; }
	// Serves until stop() or SIGTERM/SIGINT when handle_signals is set.
	void run(bool handle_signals);
	// From another thread or a signal handler: run() returns soon.
	void stop();

	// Each log line (default: stderr).
	std::function<void(const std::string &)> log;

private:
	struct Impl;
	Impl *impl_;
	uint16_t port_ = 0;
};

} // namespace tracery::relay
