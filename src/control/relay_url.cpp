// control/relay_url.cpp — see relay_url.hpp.
#include "control/relay_url.hpp"

#include "base/cat.hpp"

#include <charconv>

namespace tracery::control::relay {

namespace {

using base::cat;

constexpr std::string_view kScheme = "net://";
constexpr size_t kMaxHost = 253; // a DNS name

bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
	       c == '_';
}

bool ipv6_char(char c)
{
	return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') || c == ':' || c == '.';
}

std::string shown(std::string_view url)
{
	std::string s;
	for (char c : url.substr(0, 200))
		s += (c >= 0x20 && c < 0x7f) ? c : '?';
	return s;
}

} // namespace

std::optional<RelayUrl> parse_relay_url(std::string_view url, uint16_t default_port, std::string *why,
                                        std::string_view option)
{
	const auto refuse = [&](const std::string &what) -> std::optional<RelayUrl> {
		*why = cat("bad ", option, " '", shown(url), "': ", what);
		return std::nullopt;
	};
	if (url.starts_with("serial://")) {
		RelayUrl u;
		std::string what;
		u.serial = serial::parse_serial_url(url, &what);
		if (!u.serial)
			return refuse(what);
		return u;
	}
	if (!url.starts_with(kScheme))
		return refuse(cat("the relay's address starts with net:// (e.g. ", option,
		                  " net://collector or "
		                  "net://192.0.2.7:",
		                  std::to_string(default_port), "), or serial:// for a serial line"));
	std::string_view rest = url.substr(kScheme.size());
	if (const size_t slash = rest.find('/'); slash != std::string_view::npos)
		return refuse("a path after the host is not supported: give net://HOST[:PORT]");
	RelayUrl u;
	std::string_view port;
	if (rest.starts_with('[')) {
		const size_t close = rest.find(']');
		if (close == std::string_view::npos)
			return refuse("an IPv6 address in brackets lacks its ']': give net://[ADDRESS]:PORT");
		u.host = std::string(rest.substr(1, close - 1));
		for (char c : u.host)
			if (!ipv6_char(c))
				return refuse(
					"the IPv6 address in brackets holds a character that is not hexadecimal, ':' "
					"or '.'");
		rest.remove_prefix(close + 1);
		if (!rest.empty() && !rest.starts_with(':'))
			return refuse("after the ']' of an IPv6 address only :PORT may follow");
		if (!rest.empty())
			port = rest.substr(1);
		if (!rest.empty() && port.empty())
			return refuse("no port after ':': give net://HOST:PORT with PORT from 1 to 65535, or drop "
			              "the ':'");
	} else {
		const size_t colon = rest.find(':');
		u.host = std::string(rest.substr(0, colon));
		if (colon != std::string_view::npos) {
			port = rest.substr(colon + 1);
			if (port.empty())
				return refuse("no port after ':': give net://HOST:PORT with PORT from 1 to 65535, or "
				              "drop the ':'");
			if (port.find(':') != std::string_view::npos)
				return refuse("an IPv6 address goes in brackets: net://[ADDRESS]:PORT");
		}
		for (char c : u.host)
			if (!host_char(c))
				return refuse("the host holds a character other than letters, digits, '.', '-' and "
				              "'_': give a host name or an IP address");
	}
	if (u.host.empty())
		return refuse("no host: give net://HOST[:PORT]");
	if (u.host.size() > kMaxHost)
		return refuse(cat("the host is longer than ", std::to_string(kMaxHost), " characters"));
	u.port = default_port;
	if (!port.empty()) {
		unsigned value = 0;
		const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
		if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
			return refuse(cat("the port '", shown(port),
			                  "' is not a number from 1 to 65535: give net://HOST:PORT (the relay's "
			                  "default is ",
			                  std::to_string(default_port), ")"));
		u.port = static_cast<uint16_t>(value);
	}
	return u;
}

std::string to_string(const RelayUrl &u)
{
	if (u.serial)
		return serial::to_url(*u.serial);
	const bool v6 = u.host.find(':') != std::string::npos;
	return cat(v6 ? "[" : "", u.host, v6 ? "]" : "", ":", std::to_string(u.port));
}

} // namespace tracery::control::relay
