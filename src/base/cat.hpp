// base/cat.hpp — builds a string from parts with +=. The one concatenation
// helper for messages: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
// "literal" + std::string, so error texts are built with this instead.
#pragma once

#include <string>

namespace tracery::base {

template <class... Parts>
std::string cat(const Parts &...parts)
{
	std::string s;
	((s += parts), ...);
	return s;
}

} // namespace tracery::base
