// Durations on the command line: see durations.hpp.
#include "cli/durations.hpp"

#include <limits>

namespace tracery::cli {

std::optional<uint64_t> parse_duration_ns(std::string_view text, uint64_t bare_unit_ns)
{
	size_t end = 0;
	while (end < text.size() && text[end] >= '0' && text[end] <= '9')
		end++;
	if (end == 0 || end > 12)
		return std::nullopt;
	uint64_t n = 0;
	for (size_t i = 0; i < end; i++)
		n = n * 10 + static_cast<uint64_t>(text[i] - '0');
	const std::string_view unit = text.substr(end);
	uint64_t scale;
	if (unit.empty())
		scale = bare_unit_ns;
	else if (unit == "ns")
		scale = 1;
	else if (unit == "us")
		scale = 1'000;
	else if (unit == "ms")
		scale = 1'000'000;
	else if (unit == "s")
		scale = 1'000'000'000;
	else if (unit == "m" || unit == "min")
		scale = 60'000'000'000;
	else if (unit == "h")
		scale = 3'600'000'000'000;
	else
		return std::nullopt;
	if (n > std::numeric_limits<uint64_t>::max() / scale)
		return std::nullopt;
	return n * scale;
}

} // namespace tracery::cli
