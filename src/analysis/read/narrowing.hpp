// analysis/read/narrowing.hpp — what `tracery stats` and `tracery analyze`
// are narrowed to (lttng-analyses' option names): a time range (--begin,
// --end, read as `view` reads them), processes and threads (--pid, --tid,
// --procname) and CPUs (--cpu). The state an analysis tracks still sees
// every event; only what matches is counted and reported.
//
//   Narrowing n(options);                 // options from the command line
//   n.first_event(ns);                    // at the walk's first event: throws std::invalid_argument
//   if (n.time_in(ns) && n.cpu_in(cpu) && n.task_in(tid, pid, comm)) ... count it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/read/time_range.hpp"

namespace tracery::analysis {

struct NarrowOptions {
	std::string begin, end;          // "" for no bound
	std::vector<int64_t> pids, tids; // empty: any
	std::vector<std::string> procnames;
	std::vector<int64_t> cpus;
	// Whether any option narrows; whether one names processes or threads.
	bool narrows() const { return !begin.empty() || !end.empty() || by_task() || !cpus.empty(); }
	bool by_task() const { return !pids.empty() || !tids.empty() || !procnames.empty(); }
};

class Narrowing {
public:
	Narrowing() = default;
	explicit Narrowing(NarrowOptions options) : options_(std::move(options)) {}

	const NarrowOptions &options() const { return options_; }
	bool narrows() const { return options_.narrows(); }

	// Reads --begin/--end, the times of day on the day of this (the first)
	// event; later calls do nothing. Throws std::invalid_argument.
	void first_event(int64_t ns);
	// Within --begin/--end (first_event called, or no bound).
	bool time_in(int64_t ns) const
	{
		return (!bounds_.begin || ns >= *bounds_.begin) && (!bounds_.end || ns <= *bounds_.end);
	}
	// ns moved into [--begin, --end]: a run's time in the range is the
	// difference of its clamped ends.
	int64_t clamp(int64_t ns) const
	{
		if (bounds_.begin && ns < *bounds_.begin)
			return *bounds_.begin;
		if (bounds_.end && ns > *bounds_.end)
			return *bounds_.end;
		return ns;
	}
	// Without --cpu any CPU, even unknown; with it, one of them.
	bool cpu_in(std::optional<int64_t> cpu) const;
	// Each of --tid, --pid and --procname given must match (an unknown
	// value matches none).
	bool task_in(std::optional<int64_t> tid, std::optional<int64_t> pid, std::string_view procname) const;

private:
	NarrowOptions options_;
	bool resolved_ = false;
	TimeBounds bounds_;
};

} // namespace tracery::analysis
