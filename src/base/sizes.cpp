// base/sizes.cpp — see sizes.hpp.
#include "base/sizes.hpp"

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

} // namespace tracery::base
