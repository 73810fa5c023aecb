// base/ascii.hpp — ASCII text helpers that ignore the locale: a string in
// lower case and the value of a hexadecimal digit.
#pragma once

#include <string>
#include <string_view>

namespace tracery::base {

// `s` with A-Z turned into a-z, every other byte as it is.
inline std::string ascii_lower(std::string_view s)
{
	std::string r(s);
	for (char &c : r)
		if (c >= 'A' && c <= 'Z')
			c = static_cast<char>(c - 'A' + 'a');
	return r;
}

// 0-15 for 0-9, a-f, A-F; -1 for any other byte.
inline int hex_digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

} // namespace tracery::base
