// base/sizes.cpp — see sizes.hpp.
#include "base/sizes.hpp"

#include <cstdio>

namespace tracery::base {

std::optional<uint64_t> parse_size(std::string_view text) noexcept
{
	uint64_t value = 0;
	size_t i = 0;
	for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
		const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
		if (value > (UINT64_MAX - digit) / 10)
			return std::nullopt;
		value = value * 10 + digit;
	}
	if (i == 0)
		return std::nullopt;
	const std::string_view suffix = text.substr(i);
	unsigned shift = 0;
	if (suffix == "k" || suffix == "K")
		shift = 10;
	else if (suffix == "m" || suffix == "M")
		shift = 20;
	else if (suffix == "g" || suffix == "G")
		shift = 30;
	else if (!suffix.empty())
		return std::nullopt;
	if (shift && value > (UINT64_MAX >> shift))
		return std::nullopt;
	return value << shift;
}

std::string format_size(uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	int u = -1;
	for (uint64_t scale = 1024; u < 3 && bytes >= scale; scale <<= 10)
		u++;
	if (u < 0)
		return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
	const uint64_t scale = uint64_t{1} << (10 * (u + 1));
	if (bytes % scale == 0)
		return std::to_string(bytes / scale) + " " + units[u];
	char buf[64];
	snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(bytes) / static_cast<double>(scale), units[u]);
	return buf;
}

} // namespace tracery::base
