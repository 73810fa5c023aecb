// traceryd's socket: accepts connections, checks each peer's credentials
// (SO_PEERCRED) and gives every connection a thread: a program's for as long
// as it lives, the tracery command's for one request.
#pragma once

#include "daemon/daemon.hpp"

#include "control/wire.hpp"

namespace tracery::daemon {

class Server {
public:
	Server(Daemon &daemon, base::Fd listener) : daemon_(daemon), listener_(std::move(listener)) {}
	// Accepts until stop_fd becomes readable.
	void run(int stop_fd);

private:
	void serve(base::Fd conn);
	void serve_app(base::Fd conn, const control::PeerCred &peer, const nlohmann::json &hello);
	bool may_control(const control::PeerCred &peer) const;

	Daemon &daemon_;
	base::Fd listener_;
	uint64_t next_app_id_ = 1;
};

} // namespace tracery::daemon
