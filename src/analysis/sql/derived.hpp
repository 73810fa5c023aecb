// analysis/sql/derived.hpp — the cores of the SQL export's derived tables,
// fed plain arguments (what the unit tests drive with made-up sequences):
// thread states from the scheduler's events, and processes from the threads
// the task table knows. System calls and user spans are paired by the
// analyses' SyscallPairs and OpenSpans (analyses.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/analyze/analyses.hpp"

namespace tracery::analysis::sql {

// Running, runnable and blocked intervals per thread: sched_switch puts the
// next thread running on the CPU and the previous one runnable (preempted:
// prev_state 0, or only the kernel's "preempted" bit 0x100 set) or blocked
// (any other state); sched_waking / sched_wakeup / sched_wakeup_new make a
// blocked (or not yet seen) thread runnable. A thread's first interval starts
// at the first event that tells its state; the last ones end at finish(). A
// thread that exited (sched_process_exit) has no interval after the switch
// out that is not a preemption (its last). The idle task (tid 0) is not followed.
class ThreadStates {
public:
	enum State : uint8_t { running, runnable, blocked };
	static const char *name(State s);
	struct Interval {
		int64_t tid = 0;
		int64_t ts = 0, dur = 0;
		State state = running;
		std::optional<int64_t> cpu; // running: the CPU
	};
	explicit ThreadStates(std::function<void(const Interval &)> sink) : sink_(std::move(sink)) {}
	void on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t prev_state, int64_t next_tid);
	void on_wakeup(int64_t ns, int64_t tid);
	void on_exit(int64_t tid);
	// Ends every thread's current interval at end_ns.
	void finish(int64_t end_ns);

private:
	struct Now {
		State state = running;
		int64_t since = 0;
		std::optional<int64_t> cpu;
		bool exited = false;
	};
	void enter(int64_t tid, int64_t ns, State s, std::optional<int64_t> cpu);
	std::function<void(const Interval &)> sink_;
	std::unordered_map<int64_t, Now> threads_;
};

// One row per process of the threads the table knows: its name (its main
// thread's, else one of its threads'), parent, start and end (its main
// thread's fork and exit), and how many threads it had. By pid.
struct ProcessRow {
	int64_t pid = 0;
	std::optional<int64_t> ppid;
	std::string name;
	std::optional<int64_t> start_ns, end_ns;
	int64_t threads = 0;
};
std::vector<ProcessRow> processes_of(const TaskTable &tasks);

} // namespace tracery::analysis::sql
