// The tracery command's side of the control protocol: one request to the
// session daemon, one reply. Errors (no daemon, permission, the daemon's own
// one-line errors, a reply of another release) come back as CliError,
// printed by main as one line.
#pragma once

#include "base/fd.hpp"
#include "control/messages.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace tracery::cli {

struct CliError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Sends a request's body (a command frame) and returns the reply's body, or
// throws CliError with the daemon's error; fds: the descriptors the reply
// carried (watch's).
nlohmann::json exchange(const nlohmann::json &request, std::vector<base::Fd> *fds = nullptr);
// Sends a request's body and returns without waiting for the reply (the
// daemon carries it out all the same): `destroy --no-wait`.
void post(const nlohmann::json &request);
// A reply's body decoded, or CliError naming what did not fit.
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

} // namespace tracery::cli
