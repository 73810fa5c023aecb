// The control library's protocol client: one request to the session daemon,
// one reply. The tracery command and the C API (ctl.h) both talk to the
// daemon through it. Errors (no daemon, permission, the daemon's own one-line
// errors, a reply of another release) come back as ctl::Error, whose kind the
// C API returns as its error code and whose text the command prints.
#pragma once

#include "base/fd.hpp"
#include "control/messages.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace tracery::ctl {

// What went wrong, as the C API's error codes tell it (tracery/ctl.h).
enum class ErrorKind {
	invalid,    // an argument: nothing was sent
	no_daemon,  // no session daemon answers
	permission, // the daemon's socket refuses this user
	refused,    // the daemon refused the request (its message)
	connection, // the daemon closed the connection or could not be written to
	protocol,   // a reply that does not fit: a daemon of another release
	again,      // a watch: no notification yet
	closed,     // a watch: the daemon ended it
};

struct Error : std::runtime_error {
	explicit Error(const std::string &what, ErrorKind kind = ErrorKind::invalid)
		: std::runtime_error(what), kind(kind)
	{
	}
	ErrorKind kind;
};

// Sends a request's body (a command frame) and returns the reply's body, or
// throws Error with the daemon's error; fds: the descriptors the reply
// carried (watch's).
nlohmann::json exchange(const nlohmann::json &request, std::vector<base::Fd> *fds = nullptr);
// Sends a request's body and returns without waiting for the reply (the
// daemon carries it out all the same): `destroy --no-wait`.
void post(const nlohmann::json &request);
// A reply's body decoded, or Error naming what did not fit.
[[noreturn]] void bad_reply(const control::DecodeError &e);

// Sends the request and returns its reply.
template <class Request>
typename Request::Reply request(const Request &req)
{
	const nlohmann::json body = exchange(control::encode(req));
	try {
		return control::decode<typename Request::Reply>(body);
	} catch (const control::DecodeError &e) {
		bad_reply(e);
	}
}

} // namespace tracery::ctl
