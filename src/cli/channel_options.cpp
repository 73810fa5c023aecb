// enable-channel's other options: see channel_options.hpp.
#include "cli/channel_options.hpp"

#include "cli/client.hpp"

#include <cctype>

namespace tracery::cli {

uint64_t parse_duration_us(const std::string &text, const char *option)
{
	const auto bad = [&] {
		return CliError(std::string("bad ") + option + " '" + text +
		                "': give a whole number with us, ms, s, m or h (e.g. 500us, 20ms, 2s), at most 24h");
	};
	size_t end = 0;
	while (end < text.size() && isdigit(static_cast<unsigned char>(text[end])))
		end++;
	if (end == 0 || end > 12)
		throw bad();
	const uint64_t n = std::stoull(text.substr(0, end));
	const std::string unit = text.substr(end);
	uint64_t scale = 0;
	if (unit.empty() || unit == "us")
		scale = 1;
	else if (unit == "ms")
		scale = 1000;
	else if (unit == "s")
		scale = 1000000;
	else if (unit == "m" || unit == "min")
		scale = 60000000;
	else if (unit == "h")
		scale = 3600000000;
	else
		throw bad();
	constexpr uint64_t kMaxUs = 24 * uint64_t{3600000000};
	if (n > kMaxUs / scale)
		throw bad();
	return n * scale;
}

int64_t parse_blocking_timeout(const std::string &text)
{
	if (text == "inf")
		return -1;
	return static_cast<int64_t>(parse_duration_us(text, "--blocking-timeout"));
}

} // namespace tracery::cli
