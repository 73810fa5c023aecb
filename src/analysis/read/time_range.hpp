// analysis/read/time_range.hpp — times of a trace's events: the times a user
// gives (`tracery view --begin/--end`: a time of day on the day of the
// trace's first event, a date and time, seconds or ns from the epoch), read
// into ns from the epoch; and the first and last times a walk over events
// has seen.
//
//   TimeBounds b = time_bounds("12:00:01.5", "", first_event_ns);   // throws std::invalid_argument
//   if (b.begin && ns < *b.begin) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tracery::analysis {

// "2024-05-01 12:00:00.5", "12:00:00.000000001" (local time, on the day of
// the trace's first event: first_ns), "1714564800.5" (seconds from the
// epoch) or a plain integer of ns from the epoch. nullopt if unreadable.
std::optional<int64_t> parse_time(const std::string &text, std::optional<int64_t> first_ns);

// --begin and --end ("" for no bound), read as parse_time reads them.
struct TimeBounds {
	std::optional<int64_t> begin, end;
};
// Throws std::invalid_argument naming the option and the forms it takes
// when a time cannot be read.
TimeBounds time_bounds(const std::string &begin, const std::string &end, int64_t first_ns);

// The time of the first and the last event seen.
struct TimeRange {
	bool any = false;
	int64_t first = 0, last = 0;
	void see(int64_t ns)
	{
		if (!any)
			first = ns;
		any = true;
		last = ns;
	}
};

} // namespace tracery::analysis
