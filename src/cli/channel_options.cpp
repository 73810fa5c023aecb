// enable-channel's other options: see channel_options.hpp.
#include "cli/channel_options.hpp"

#include "base/sizes.hpp"
#include "cli/client.hpp"
#include "cli/durations.hpp"

#include <cctype>

namespace tracery::cli {

uint64_t parse_duration_us(const std::string &text, const char *option)
{
	constexpr uint64_t kMaxNs = 24 * uint64_t{3'600'000'000'000};
	const std::optional<uint64_t> ns = parse_duration_ns(text, 1'000);
	if (!ns || *ns > kMaxNs)
		throw CliError(std::string("bad ") + option + " '" + text +
		               "': give a whole number with us, ms, s, m or h (e.g. 500us, 20ms, 2s), at most 24h");
	return *ns / 1'000;
}

int64_t parse_blocking_timeout(const std::string &text)
{
	if (text == "inf")
		return -1;
	return static_cast<int64_t>(parse_duration_us(text, "--blocking-timeout"));
}

uint64_t parse_tracefile_size(const std::string &text)
{
	const auto v = base::parse_size(text);
	if (!v || *v < 4096 || *v > (uint64_t{1} << 50))
		throw CliError("bad --tracefile-size '" + text +
		               "': give a size of at least 4k, optionally with k, M or G (e.g. 1M)");
	return *v;
}

uint64_t parse_tracefile_count(const std::string &text)
{
	constexpr uint64_t kMaxFiles = uint64_t{1} << 20;
	size_t end = 0;
	while (end < text.size() && isdigit(static_cast<unsigned char>(text[end])))
		end++;
	if (end == 0 || end != text.size() || end > 7 || std::stoull(text) == 0 || std::stoull(text) > kMaxFiles)
		throw CliError("bad --tracefile-count '" + text + "': give a number of files from 1 to " +
		               std::to_string(kMaxFiles));
	return std::stoull(text);
}

} // namespace tracery::cli
