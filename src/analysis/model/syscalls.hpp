// analysis/model/syscalls.hpp — system calls paired: the one pairing every
// product uses (Perfetto's slice tracker is the model), and lttng-analyses'
// choice of the calling thread on top of it.
//
// SyscallTracker pairs per thread: an entry opens the thread's call, the
// thread's next exit closes it (under the entry's name, from the entry's
// time). A thread has one call open at most: an entry while one is open (a
// call that never returned: exit_group, a successful execve, or an exit the
// tracer lost) replaces it and hands the abandoned one back; an exit with no
// call open closes nothing. What to do with those is each product's policy:
//
// - `analyze syscalls` and the SQL slices (SyscallPairs below): the thread is
//   the event's tid context, else the task running on the event's CPU
//   (sched_switch); abandoned calls and exits without an entry are not
//   counted.
// - the timeline exports (export/timeline.cpp): the thread is the event's tid
//   context, else the task running on its CPU; an abandoned call is ended at
//   the entry that replaces it, an exit without an entry is an instant.
//
// So the two pair the same calls of a thread; they can differ only in which
// thread an event is given to: CPU numbers past 65535 (the exports know no
// such CPU).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "analysis/model/scheduling.hpp"

namespace tracery::analysis {

class SyscallTracker {
public:
	struct Call {
		int64_t tid = 0;
		int64_t cpu = 0; // the entry's
		int64_t entry_ns = 0;
		std::string name;
	};
	// tid entered the call name on cpu. Returns the call it had open, now
	// abandoned (valid until the next call of either function), else null.
	const Call *enter(int64_t tid, int64_t ns, int64_t cpu, std::string_view name);
	// tid returned from a call: the call it had open, now closed (valid until
	// the next call of either function), else null.
	const Call *exit(int64_t tid);

private:
	std::unordered_map<int64_t, Call> open_; // tid -> its call in progress
	Call done_;
};

// lttng-analyses' rule: a call belongs to the thread running on the exit's
// CPU when it entered one since its last exit, under the entry's name. An
// event with a tid context (add-context -k -t tid) is that thread's
// instead: the context is the kernel's own word, where the running task is
// only known from the sched_switch events the trace holds.
class SyscallPairs {
public:
	void on_switch(int64_t cpu, int64_t next_tid) { running_.on_switch(cpu, next_tid); }
	// The task running on cpu, when known (not the idle task).
	std::optional<int64_t> running(int64_t cpu) const { return running_.running(cpu); }
	// `tid`: the event's tid context, if it has one.
	void on_entry(int64_t ns, int64_t cpu, std::string_view call, std::optional<int64_t> tid = std::nullopt);
	// The call this exit ends, if its task entered one; valid until the next call.
	const SyscallTracker::Call *on_exit(int64_t cpu, std::optional<int64_t> tid = std::nullopt);

private:
	RunningTasks running_;
	SyscallTracker calls_;
};

} // namespace tracery::analysis
