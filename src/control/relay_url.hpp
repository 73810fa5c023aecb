// control/relay_url.hpp — the relay a session sends to, as `tracery create
// --set-url net://HOST[:PORT]` names it. The command checks it to fail early
// and the daemon checks it again (a request is untrusted input): the one
// parser of both, whose errors name the option and the fix.
#pragma once

#include "control/serial_line.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tracery::control::relay {

struct RelayUrl {
	std::string host; // a host name, an IPv4 address or an IPv6 address (without its brackets)
	uint16_t port = 0;
	std::optional<serial::LineSettings> serial; // serial://DEVICE: a serial line instead of host and port
	bool operator==(const RelayUrl &) const = default;
};

// "net://HOST", "net://HOST:PORT", "net://[IPV6]:PORT"; the port defaults to
// default_port. "serial:///dev/ttyS1?baud=115200" (serial_line.hpp). nullopt and *why (one line naming `option` and the fix) for
// anything else.
std::optional<RelayUrl> parse_relay_url(std::string_view url, uint16_t default_port, std::string *why,
                                        std::string_view option = "--set-url");

// "HOST:PORT" ("[IPV6]:PORT"), for messages; a serial line's URL.
std::string to_string(const RelayUrl &u);

} // namespace tracery::control::relay
