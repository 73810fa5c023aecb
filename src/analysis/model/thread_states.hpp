// analysis/model/thread_states.hpp — each thread's scheduling state over
// time, from the scheduler's events (what Perfetto's thread_state table and
// Trace Compass's thread status are): running, runnable (woken or
// preempted), blocked (sleeping, uninterruptible, stopped, dead, as the
// switch out's prev_state says), and who woke it. Fed plain arguments; the
// SQL export's thread_state table and the HTML timeline's state tracks are
// written from it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>

namespace tracery::analysis {

// What a blocked thread waits in, from the prev_state of its switch out (the
// kernel's report bits: S 1, D 2, T 4, t 8, X 0x10, Z 0x20, P 0x40, I 0x80).
enum class Blocked : uint8_t { sleeping, uninterruptible, stopped, dead, idle };
Blocked blocked_of(int64_t prev_state);

// Running, runnable and blocked intervals per thread: sched_switch puts the
// next thread running on the CPU and the previous one runnable (preempted:
// prev_state 0, or only the kernel's "preempted" bit 0x100 set) or blocked
// (any other state); sched_waking / sched_wakeup / sched_wakeup_new make a
// blocked (or not yet seen) thread runnable. A thread's first interval starts
// at the first event that tells its state; the last ones end at finish(). A
// thread that exited (sched_process_exit) has no interval after the switch
// out that is not a preemption (its last). The idle task (tid 0) is not followed.
// An interval is given to the sink when it ends: in time order per thread.
class ThreadStates {
public:
	enum State : uint8_t { running, runnable, blocked };
	static const char *name(State s);
	struct Interval {
		int64_t tid = 0;
		int64_t ts = 0, dur = 0;
		State state = running;
		std::optional<int64_t> cpu; // running: the CPU
		int64_t prev_state = 0;     // blocked: the switch out's (blocked_of)
		// runnable after a wake-up: the thread running where it was woken
		// (none for an interrupt or the idle task, or when unknown)
		std::optional<int64_t> waker;
	};
	explicit ThreadStates(std::function<void(const Interval &)> sink) : sink_(std::move(sink)) {}
	void on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t prev_state, int64_t next_tid);
	void on_wakeup(int64_t ns, int64_t tid, std::optional<int64_t> waker = std::nullopt);
	void on_exit(int64_t tid);
	// A switch out of tid was not recorded (its CPU switched from another
	// thread, as when a kernel drops events): if it runs, its running
	// interval ends at ns, and it has no state until an event tells one.
	// For the timeline; the SQL table keeps the intervals contiguous.
	void on_lost_switch_out(int64_t ns, int64_t tid);
	// Ends every thread's current interval at end_ns.
	void finish(int64_t end_ns);

private:
	struct Now {
		State state = running;
		int64_t since = 0;
		std::optional<int64_t> cpu;
		int64_t prev_state = 0;
		std::optional<int64_t> waker;
		bool exited = false;
	};
	void enter(int64_t tid, int64_t ns, State s, std::optional<int64_t> cpu, int64_t prev_state = 0,
	           std::optional<int64_t> waker = std::nullopt);
	void emit(int64_t tid, const Now &now, int64_t end_ns);
	std::function<void(const Interval &)> sink_;
	std::unordered_map<int64_t, Now> threads_;
};

} // namespace tracery::analysis
