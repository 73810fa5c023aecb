// analysis/analyze/user_event_narrowing.hpp — whether an event of a user
// trace is within what `analyze latency`, `analyze locks` and `analyze
// calls` are narrowed to (read/narrowing.hpp): its time, its CPU (the
// packet's cpu_id), its process (vpid context, else its trace's env), its
// thread (vtid context) and its process's name (procname context, else the
// env's). The analyses feed every event to their state and count only what
// ends at an event within.
//
//   UserEventNarrowing within(narrowing);
//   within.first_event(ns);              // every event; throws std::invalid_argument (times unreadable)
//   if (within.counts(event)) ...        // a span's end, an acquisition, a function's exit
#pragma once

#include "analysis/model/kernel_events.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/read/narrowing.hpp"

namespace tracery::analysis {

class UserEventNarrowing {
public:
	explicit UserEventNarrowing(Narrowing narrowing) : narrowing_(std::move(narrowing)) {}

	void first_event(int64_t ns) { narrowing_.first_event(ns); }
	bool counts(const ctf::reader::Item &event);
	const Narrowing &narrowing() const { return narrowing_; }

private:
	struct Fields {
		FieldRef vpid, vtid, procname;
	};
	Narrowing narrowing_;
	CpuOf cpu_of_;
	ClassCache<Fields> fields_;
};

} // namespace tracery::analysis
