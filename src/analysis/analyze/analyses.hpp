// analysis/analyze/analyses.hpp — `tracery analyze KIND`: the kernel analyses
// (cputop, syscalls, schedlat, irq; kernel traces with LTTng's event names)
// and the latency of user spans (begin/end event pairs). Each analysis is a
// core fed plain arguments (what the unit tests drive with made-up
// sequences) and a function that feeds it a trace's events and returns its
// Report. One file per analysis; the task table is shared.
//
// The kernel analyses follow the rules of lttng-analyses (whose
// lttng-cputop and lttng-syscallstats give the same figures on the same
// trace, a test checks): the time range runs from the first event to the
// last; a CPU runs the task of its last sched_switch (none before the first
// one, none while it runs the idle task, tid 0).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/output/report.hpp"
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

// What the trace says of each thread: its process (from the state dump's
// lttng_statedump_process_state and sched_process_fork), its parent process,
// its last name (those, sched_process_exec's file name and sched_switch's
// comms), when it was forked and when it exited (sched_process_exit).
class TaskTable {
public:
	struct Task {
		std::optional<int64_t> pid, ppid;
		std::string comm;
		std::optional<int64_t> start_ns, end_ns; // fork, exit
	};
	void set(int64_t tid, std::optional<int64_t> pid, std::string_view comm);
	// The thread's process id, when the trace said it.
	std::optional<int64_t> pid(int64_t tid) const;
	std::string comm(int64_t tid) const;
	// Learns from the event, if it is one of those named above.
	void observe(const ctf::reader::Item &event);
	// Every thread seen: (tid, task), in no order.
	const std::unordered_map<int64_t, Task> &tasks() const { return tasks_; }

private:
	struct Fields {
		enum Kind : uint8_t { other, statedump, fork, exec, exit, sched_switch } kind = other;
		FieldRef tid, pid, comm, ppid;
	};
	std::unordered_map<int64_t, Task> tasks_;
	ClassCache<Fields> cache_;
};

// The CPU of a kernel event (its packet's cpu_id), cached per class.
class CpuOf {
public:
	std::optional<int64_t> operator()(const ctf::reader::Item &event);

private:
	ClassCache<FieldRef> cache_;
};

// The scheduler's events the analyses follow, with their fields, found once
// per event class.
struct SchedEvent {
	enum Kind : uint8_t { other, sched_switch, wakeup, migrate } kind = other;
	FieldRef prev_tid, next_tid, tid;
	static SchedEvent of(const ctf::reader::Item &event);
};

// ---- cputop: CPU time per thread, process and CPU from sched_switch.
class CpuTop {
public:
	// The first event's time (the range's beginning), before any other call.
	void begin(int64_t ns) { begin_ = ns; }
	void on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t next_tid);
	void on_migrate(int64_t tid);
	void on_cpu(int64_t cpu) { cpus_seen_[cpu]; }
	// end: the last event's time.
	Report report(int64_t end, const TaskTable &tasks) const;

private:
	struct Run {
		int64_t ns = 0;
		std::optional<int64_t> since;
		uint64_t migrations = 0;
	};
	int64_t begin_ = 0;
	std::map<int64_t, Run> tids_, cpus_;
	std::map<int64_t, bool> cpus_seen_;
};

// ---- system calls paired: an entry with the next exit of the same task,
// the task running on each event's CPU (lttng-analyses' rule: a call counts
// for the task running on the exit's CPU when it entered one since its last
// exit, under the entry's name). What `analyze syscalls` aggregates and the
// SQL export's slices list.
class SyscallPairs {
public:
	struct Call {
		int64_t tid = 0;
		int64_t cpu = 0; // the entry's
		int64_t entry_ns = 0;
		std::string name;
	};
	void on_switch(int64_t cpu, int64_t next_tid);
	// The task running on cpu, when known (not the idle task).
	std::optional<int64_t> running(int64_t cpu) const;
	void on_entry(int64_t ns, int64_t cpu, std::string_view call);
	// The call this exit ends, if its task entered one; valid until the next call.
	const Call *on_exit(int64_t cpu);

private:
	std::unordered_map<int64_t, int64_t> current_; // CPU -> running tid (absent: none)
	std::unordered_map<int64_t, Call> entered_;    // tid -> its call in progress
	Call done_;
};

// ---- syscalls: count and latency of system calls per call, thread and process.
class Syscalls {
public:
	void on_switch(int64_t cpu, int64_t next_tid) { pairs_.on_switch(cpu, next_tid); }
	void on_entry(int64_t ns, int64_t cpu, std::string_view call) { pairs_.on_entry(ns, cpu, call); }
	void on_exit(int64_t ns, int64_t cpu, std::optional<int64_t> ret);
	Report report(int64_t begin, int64_t end, const TaskTable &tasks);

private:
	struct Calls {
		Distribution d;
		uint64_t errors = 0; // returned a negative value
	};
	SyscallPairs pairs_;
	std::map<std::pair<int64_t, std::string>, Calls> per_tid_;
};

// ---- schedlat: from a task's wake-up (sched_waking, else sched_wakeup or
// sched_wakeup_new, the earliest since it last ran) to its sched_switch in.
class SchedLat {
public:
	void on_wakeup(int64_t ns, int64_t tid);
	void on_switch(int64_t ns, int64_t prev_tid, int64_t next_tid);
	Report report(int64_t begin, int64_t end, const TaskTable &tasks);

private:
	std::unordered_map<int64_t, int64_t> woken_; // tid -> wake-up time
	std::map<int64_t, Distribution> per_tid_;
	Distribution all_;
};

// ---- irq: hard IRQ handlers (irq_handler_entry/exit) and soft IRQs
// (softirq_entry/exit) per CPU: duration per IRQ line and per vector.
class IrqStats {
public:
	void on_irq_entry(int64_t ns, int64_t cpu, int64_t irq, std::string_view name);
	void on_irq_exit(int64_t ns, int64_t cpu, int64_t irq);
	void on_softirq_entry(int64_t ns, int64_t cpu, int64_t vec);
	void on_softirq_exit(int64_t ns, int64_t cpu, int64_t vec);
	bool any() const { return seen_; }
	Report report(int64_t begin, int64_t end);

private:
	struct Open {
		int64_t id, ns;
	};
	struct Line {
		std::string name;
		Distribution d;
	};
	bool seen_ = false;
	std::unordered_map<int64_t, Open> hard_open_, soft_open_; // per CPU
	std::map<int64_t, Line> hard_, soft_;
	Distribution hard_all_, soft_all_;
};

// ---- latency: spans from a begin event to an end event of the same thread
// (vtid) or with the same value of a field (--match). Nested spans of one key
// pair last-in first-out: OpenSpans holds what each begin left (T).
template <class T>
class OpenSpans {
public:
	void begin(const std::string &key, T v) { open_[key].push_back(std::move(v)); }
	// What the innermost open span of key began with, now closed; nullopt if none is open.
	std::optional<T> end(const std::string &key)
	{
		const auto o = open_.find(key);
		if (o == open_.end() || o->second.empty())
			return std::nullopt;
		std::optional<T> v(std::move(o->second.back()));
		o->second.pop_back();
		return v;
	}
	// Spans begun and not ended.
	uint64_t unfinished() const
	{
		uint64_t n = 0;
		for (const auto &[key, stack] : open_)
			n += stack.size();
		return n;
	}

private:
	std::unordered_map<std::string, std::vector<T>> open_;
};

class Spans {
public:
	// key: the thread or the matched value; who: the thread's (or event's) process and name, for the table.
	void on_begin(int64_t ns, const std::string &key) { open_.begin(key, ns); }
	void on_end(int64_t ns, const std::string &key, int64_t pid, std::string_view procname);
	Report report(int64_t begin, int64_t end, const std::string &title);

private:
	OpenSpans<int64_t> open_;
	std::map<std::pair<int64_t, std::string>, Distribution> per_process_;
	Distribution all_;
	uint64_t unmatched_ends_ = 0;
};

// Over the events of a walk. Each throws std::runtime_error when the trace
// lacks the events it needs (saying which to record), ReadError when damaged.
Report analyze_cputop(EventWalk &walk);
Report analyze_syscalls(EventWalk &walk);
Report analyze_schedlat(EventWalk &walk);
Report analyze_irq(EventWalk &walk);

struct LatencyOptions {
	std::string begin, end; // event names
	std::string match;      // a field of both ("" for the thread: vtid)
	// how the command line named them, for messages
	std::string begin_option = "--begin", end_option = "--end", match_option = "--match";
};

// The begin and end events of spans: which one an event is, its pairing key
// (the value of the match field, else its vtid) and its process's fields.
class SpanEvents {
public:
	struct Fields {
		enum Kind : uint8_t { other, begin, end } kind = other;
		FieldRef key, pid, procname;
	};
	// Throws std::invalid_argument naming the option when an event is not one
	// of the traces', or both are the same.
	SpanEvents(const ctf::reader::TraceSet &set, LatencyOptions options);
	// Throws std::invalid_argument when the event lacks the key field.
	const Fields &of(const ctf::reader::Item &event);
	// The pairing key of a begin or end event (integers and text alike).
	static std::string key(const ctf::reader::Item &event, const Fields &f);
	const LatencyOptions &options() const { return options_; }

private:
	LatencyOptions options_;
	ClassCache<Fields> cache_;
};

Report analyze_latency(EventWalk &walk, const LatencyOptions &options);

} // namespace tracery::analysis
