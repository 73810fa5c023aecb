// base/tick_scale.hpp — how a reader turns a trace's ticks into wall-clock
// time: the tick rate and the CLOCK_REALTIME time of tick 0. The clock
// measures it (clock/trace_clock.hpp), the CTF writer declares it in the
// metadata's clock block; neither needs the other for that.
#pragma once

#include <cstdint>

namespace tracery::base {

struct TickScale {
	uint64_t freq_hz = 1000000000;               // ticks per second
	int64_t offset_s = 0;                        // CLOCK_REALTIME of tick 0: offset_s + offset_ticks / freq_hz
	uint64_t offset_ticks = 0;                   // 0 <= offset_ticks < freq_hz
	const char *description = "Monotonic Clock"; // for readers: what a tick is
};

// The scale of nanosecond ticks whose tick 0 is realtime_offset_ns after the
// Epoch (negative: before it).
constexpr TickScale ns_tick_scale(int64_t realtime_offset_ns) noexcept
{
	constexpr int64_t kNs = 1000000000;
	TickScale s;
	s.offset_s = realtime_offset_ns / kNs;
	int64_t rem = realtime_offset_ns % kNs;
	if (rem < 0) { // the offset is below zero: a whole second less, and a positive remainder
		rem += kNs;
		s.offset_s -= 1;
	}
	s.offset_ticks = static_cast<uint64_t>(rem);
	return s;
}

} // namespace tracery::base
