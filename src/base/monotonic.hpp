// base/monotonic.hpp — CLOCK_MONOTONIC in nanoseconds: deadlines and durations
// of tests and benchmarks, and the trace clock's vDSO backend (clock/); the
// nanoseconds of a second.
#pragma once

#include <time.h>

#include <cstdint>

namespace tracery::base {

inline constexpr int64_t kNsPerS = 1000000000;

inline uint64_t monotonic_ns() noexcept
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

} // namespace tracery::base
