// The options of enable-channel beyond its sizes and mode, as LTTng writes
// them: --blocking-timeout (0, inf or a duration), --tracefile-size and
// --tracefile-count, checked here and put in the request; the durations they
// take.
#pragma once

#include <cstdint>
#include <string>

namespace tracery::cli {

// A duration as LTTng's options take it: a whole number with us, ms, s, m
// or h (no unit: microseconds), at most 24 h; in microseconds. Throws
// CliError naming `option` and what it takes.
uint64_t parse_duration_us(const std::string &text, const char *option);

// --blocking-timeout: "inf" (-1: no limit), 0 (never wait) or a duration; in
// microseconds.
int64_t parse_blocking_timeout(const std::string &text);

// --tracefile-size: bytes, with k, M or G, at least 4 KiB (the daemon checks
// it against the channel); --tracefile-count: 1 to 2^20 files.
uint64_t parse_tracefile_size(const std::string &text);
uint64_t parse_tracefile_count(const std::string &text);

} // namespace tracery::cli
