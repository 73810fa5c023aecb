// Durations on the command line (--live's PERIOD, enable-rotation --timer,
// enable-channel's timers and --blocking-timeout, analyze's histograms):
// one parser, each option with its own unit for a bare number and its own
// bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tracery::cli {

// A whole number of at most 12 digits with ns, us, ms, s, m (or min) or h, or
// bare (then counted in `bare_unit_ns`), in ns; nullopt if it is not one or
// overflows 64 bits.
std::optional<uint64_t> parse_duration_ns(std::string_view text, uint64_t bare_unit_ns);

} // namespace tracery::cli
