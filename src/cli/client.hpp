// The tracery command's side of the control protocol: one request to the
// session daemon, one reply. Errors (no daemon, permission, the daemon's own
// one-line errors) come back as CliError, printed by main as one line.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace tracery::cli {

struct CliError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// Sends the request (a command frame) and returns the reply (ok == true),
// or throws CliError with the daemon's error.
nlohmann::json request(const nlohmann::json &req);

} // namespace tracery::cli
