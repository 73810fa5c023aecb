// event/event_pattern.cpp — event patterns: see event_pattern.hpp.
#include "event/event_pattern.hpp"

#include <fnmatch.h>

namespace tracery::event {

bool event_pattern_matches(const std::string &pattern, const std::string &full_name)
{
	if (fnmatch(pattern.c_str(), full_name.c_str(), 0) != 0)
		return false;
	const std::string provider = full_name.substr(0, full_name.find(':'));
	if (provider != kStatedumpProvider)
		return true;
	const std::string pattern_provider = pattern.substr(0, pattern.find(':'));
	return pattern_provider == provider; // no wildcard: it matched the name itself
}

} // namespace tracery::event
