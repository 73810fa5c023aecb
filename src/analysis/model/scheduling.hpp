// analysis/model/scheduling.hpp — the scheduler's state as the events come:
// which task runs on each CPU (lttng-analyses' rule, the one every product
// follows: a CPU runs the task of its last sched_switch, none before the
// first one, none while it runs the idle task, tid 0).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace tracery::analysis {

class RunningTasks {
public:
	// sched_switch on cpu to next_tid.
	void on_switch(int64_t cpu, int64_t next_tid);
	// The task running on cpu, when known (never the idle task).
	std::optional<int64_t> running(int64_t cpu) const;

private:
	std::unordered_map<int64_t, int64_t> current_; // CPU -> running tid (absent: none)
};

} // namespace tracery::analysis
