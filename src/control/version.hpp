// The one line every Tracery program prints for --version (tracery,
// traceryd, tracery-relayd, and `tracery version`): the release, and the
// protocols it speaks, which say which other programs it works with.
#pragma once

#include "control/relay_protocol.hpp"
#include "control/wire.hpp"

#include <string>

namespace tracery::control {

// "PROGRAM RELEASE (control protocol N, relay protocol M)"
inline std::string version_line(const char *program, const char *release)
{
	return std::string(program) + " " + release + " (control protocol " + std::to_string(kProtocolVersion) +
	       ", relay protocol " + std::to_string(relay::kVersion) + ")";
}

} // namespace tracery::control
