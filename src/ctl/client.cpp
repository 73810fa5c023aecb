// One request to the session daemon: see client.hpp.
#include "ctl/client.hpp"

#include "control/messages.hpp"
#include "control/paths.hpp"
#include "control/wire.hpp"
#include "ctl/autostart.hpp"

#include <cerrno>
#include <cstring>

namespace tracery::ctl {

using nlohmann::json;

namespace {

base::Fd connect_daemon()
{
	std::string denied;
	for (const auto &dir : control::client_dirs()) {
		const std::string path = control::socket_path(dir);
		base::Fd fd = control::connect_unix(path);
		if (fd)
			return fd;
		if (errno == EACCES)
			denied = path;
	}
	if (!denied.empty())
		throw Error(
			"permission denied on " + denied +
				": only root and members of group 'tracing' may use the system daemon; run your own "
				"with `traceryd --daemonize`",
			ErrorKind::permission);
	if (!autostart_enabled())
		throw Error("no session daemon: start one with `traceryd --daemonize` (TRACERY_NO_AUTOSTART keeps "
		            "`tracery create` from starting one)",
		            ErrorKind::no_daemon);
	throw Error("no session daemon: `tracery create` starts one, or start one with `traceryd --daemonize`",
	            ErrorKind::no_daemon);
}

} // namespace

void bad_reply(const control::DecodeError &e)
{
	throw Error(std::string("the session daemon's reply does not fit this command (") + e.what() +
	                    "): tracery and traceryd are from different releases",
	            ErrorKind::protocol);
}

json exchange(const json &req, std::vector<base::Fd> *fds)
{
	if (const size_t size = req.dump().size(); size > control::kDaemonLimits.command)
		throw Error("the request is " + std::to_string(size) + " bytes, over the session daemon's limit of " +
		            std::to_string(control::kDaemonLimits.command) +
		            " bytes for a command: give fewer or shorter event names or a shorter filter");
	base::Fd fd = connect_daemon();
	// A daemon that refuses the request from its header alone (permission)
	// may close before the body is all sent: its reply is still there to read.
	const bool sent = control::send_message(fd.get(), control::Kind::command, req);
	const int send_errno = errno;
	control::Message reply;
	std::string why;
	if (control::recv_message(fd.get(), control::Kind::command, reply, &why) != control::RecvStatus::ok) {
		if (!sent)
			throw Error(std::string("cannot talk to the session daemon: ") + strerror(send_errno) +
			                    "; restart it with `traceryd --daemonize`",
			            ErrorKind::connection);
		throw Error("the session daemon closed the connection" + (why.empty() ? std::string() : ": " + why) +
		                    "; see its log, or restart it with `traceryd --daemonize`",
		            ErrorKind::connection);
	}
	if (control::is<control::ErrorReply>(reply.body)) {
		try {
			throw Error(control::decode<control::ErrorReply>(reply.body).error, ErrorKind::refused);
		} catch (const control::DecodeError &e) {
			bad_reply(e);
		}
	}
	if (fds)
		*fds = std::move(reply.fds);
	return std::move(reply.body);
}

void post(const json &req)
{
	base::Fd fd = connect_daemon();
	if (!control::send_message(fd.get(), control::Kind::command, req))
		throw Error(std::string("cannot talk to the session daemon: ") + strerror(errno) +
		                    "; restart it with `traceryd --daemonize`",
		            ErrorKind::connection);
}

} // namespace tracery::ctl
