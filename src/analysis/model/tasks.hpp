// analysis/model/tasks.hpp — the tasks of a kernel trace: each thread's
// process, parent process, name, fork and exit, learnt as the events come
// (what Perfetto's process tracker is to its importers). Fed plain arguments
// (set) or the kernel's events (observe); read by every product.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "analysis/model/kernel_events.hpp"

namespace tracery::analysis {

// What the trace says of each thread: its process (from the state dump's
// lttng_statedump_process_state and sched_process_fork), its parent process,
// its last name (those, sched_process_exec's file name and sched_switch's
// next_comm), when it was forked and when it exited (sched_process_exit).
class TaskTable {
public:
	struct Task {
		std::optional<int64_t> pid, ppid;
		std::string comm;
		std::optional<int64_t> start_ns, end_ns; // fork, exit
	};
	// Sets what is given: pid when known, comm when not empty.
	void set(int64_t tid, std::optional<int64_t> pid, std::string_view comm);
	// The thread's process id, when the trace said it.
	std::optional<int64_t> pid(int64_t tid) const;
	std::string comm(int64_t tid) const;
	// Learns from the event, if it is one of those named above (k: its
	// class, KernelEvent::of).
	void observe(const ctf::reader::Item &event, const KernelEvent &k);
	// The same, the event's class found here (once per class).
	void observe(const ctf::reader::Item &event);
	// Every thread seen: (tid, task), in no order.
	const std::unordered_map<int64_t, Task> &tasks() const { return tasks_; }

private:
	std::unordered_map<int64_t, Task> tasks_;
	ClassCache<KernelEvent> cache_;
};

} // namespace tracery::analysis
