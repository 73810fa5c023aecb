// analysis/analyze/analyses.hpp — `tracery analyze KIND`: the kernel analyses
// (cputop, syscalls, schedlat, irq; kernel traces with LTTng's event names)
// and the latency of user spans (begin/end event pairs). Each analysis is a
// core fed plain arguments (what the unit tests drive with made-up
// sequences) and a function that feeds it a trace's events and returns its
// Report. One file per analysis, over the kernel model (model/: tasks,
// the running task of each CPU, system calls and user spans paired).
//
// The kernel analyses follow the rules of lttng-analyses (whose
// lttng-cputop and lttng-syscallstats give the same figures on the same
// trace, a test checks): the time range runs from the first event to the
// last; a CPU runs the task of its last sched_switch (model/scheduling.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/model/kernel_events.hpp"
#include "analysis/model/spans.hpp"
#include "analysis/model/syscalls.hpp"
#include "analysis/model/tasks.hpp"
#include "analysis/model/trace_env.hpp"
#include "analysis/output/report.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/read/narrowing.hpp"

namespace tracery::analysis {

// ---- cputop: CPU time per thread, process and CPU from sched_switch.
// Narrowed: the time within --begin/--end on the CPUs of --cpu, the threads
// and processes of --tid/--pid/--procname (a process: its matching threads).
class CpuTop {
public:
	explicit CpuTop(Narrowing narrowing = {}) : narrowing_(std::move(narrowing)) {}
	// The first event's time (the range's beginning), before any other call;
	// throws std::invalid_argument (--begin/--end unreadable).
	void begin(int64_t ns)
	{
		narrowing_.first_event(ns);
		begin_ = narrowing_.clamp(ns);
	}
	void on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t next_tid);
	void on_migrate(int64_t tid);
	void on_cpu(int64_t cpu)
	{
		if (narrowing_.cpu_in(cpu))
			cpus_seen_[cpu];
	}
	// end: the last event's time.
	Report report(int64_t end, const TaskTable &tasks) const;

private:
	struct Run {
		int64_t ns = 0;
		std::optional<int64_t> since;
		uint64_t migrations = 0;
	};
	Narrowing narrowing_;
	int64_t begin_ = 0;
	std::map<int64_t, Run> tids_, cpus_;
	std::map<int64_t, bool> cpus_seen_;
};

// ---- syscalls: count and latency of system calls per call, thread and process.
// Narrowed: the calls that exit within --begin/--end on a CPU of --cpu, of
// the threads and processes of --tid/--pid/--procname.
class Syscalls {
public:
	explicit Syscalls(Narrowing narrowing = {}) : narrowing_(std::move(narrowing)) {}
	// The first event's time; throws std::invalid_argument (--begin/--end unreadable).
	void begin(int64_t ns) { narrowing_.first_event(ns); }
	void on_switch(int64_t cpu, int64_t next_tid) { pairs_.on_switch(cpu, next_tid); }
	// `tid`: the event's tid context, if it has one.
	void on_entry(int64_t ns, int64_t cpu, std::string_view call, std::optional<int64_t> tid = std::nullopt)
	{
		pairs_.on_entry(ns, cpu, call, tid);
	}
	void on_exit(int64_t ns, int64_t cpu, std::optional<int64_t> ret, std::optional<int64_t> tid = std::nullopt);
	Report report(int64_t begin, int64_t end, const TaskTable &tasks);

private:
	struct Calls {
		Distribution d;
		uint64_t errors = 0; // returned a negative value
	};
	Narrowing narrowing_;
	SyscallPairs pairs_;
	std::map<std::pair<int64_t, std::string>, Calls> per_tid_;
};

// ---- schedlat: from a task's wake-up (sched_waking, else sched_wakeup or
// sched_wakeup_new, the earliest since it last ran) to its sched_switch in.
// Narrowed: the switches in within --begin/--end on a CPU of --cpu, of the
// threads and processes of --tid/--pid/--procname.
class SchedLat {
public:
	explicit SchedLat(Narrowing narrowing = {}) : narrowing_(std::move(narrowing)) {}
	// The first event's time; throws std::invalid_argument (--begin/--end unreadable).
	void begin(int64_t ns) { narrowing_.first_event(ns); }
	void on_wakeup(int64_t ns, int64_t tid);
	// cpu: the switch's, when known
	void on_switch(int64_t ns, int64_t prev_tid, int64_t next_tid, std::optional<int64_t> cpu = std::nullopt);
	Report report(int64_t begin, int64_t end, const TaskTable &tasks);

private:
	Narrowing narrowing_;
	std::unordered_map<int64_t, int64_t> woken_; // tid -> wake-up time
	std::map<int64_t, Distribution> per_tid_;
};

// ---- irq: hard IRQ handlers (irq_handler_entry/exit) and soft IRQs
// (softirq_entry/exit) per CPU: duration per IRQ line and per vector.
// Narrowed: the handlers that exit within --begin/--end on a CPU of --cpu
// (an IRQ is no process's: --pid, --tid and --procname are refused).
class IrqStats {
public:
	// Throws std::invalid_argument when the narrowing names processes or threads.
	explicit IrqStats(Narrowing narrowing = {});
	// The first event's time; throws std::invalid_argument (--begin/--end unreadable).
	void begin(int64_t ns) { narrowing_.first_event(ns); }
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
	bool counted(int64_t ns, int64_t cpu) const { return narrowing_.time_in(ns) && narrowing_.cpu_in(cpu); }
	Narrowing narrowing_;
	bool seen_ = false;
	std::unordered_map<int64_t, Open> hard_open_, soft_open_; // per CPU
	std::map<int64_t, Line> hard_, soft_;
	Distribution hard_all_, soft_all_;
};

// ---- latency: spans from a begin event to an end event of the same thread
// (vtid) or with the same value of a field (--match), paired as
// model/spans.hpp says. Narrowed: the spans whose end event is within the
// time range (`analyze latency --from/--to`: its --begin/--end name the
// events), on a CPU of --cpu, of the threads and processes of
// --tid/--pid/--procname.
class Spans {
public:
	explicit Spans(Narrowing narrowing = {}) : narrowing_(std::move(narrowing)) {}
	// The first event's time; throws std::invalid_argument (the times unreadable).
	void begin(int64_t ns) { narrowing_.first_event(ns); }
	// key: the thread or the matched value.
	void on_begin(int64_t ns, const std::string &key) { open_.begin(key, ns); }
	// Who ends it: the process and its name (for the table), the thread and
	// CPU when known (for the narrowing).
	void on_end(int64_t ns, const std::string &key, int64_t pid, std::string_view procname,
	            std::optional<int64_t> tid = std::nullopt, std::optional<int64_t> cpu = std::nullopt);
	Report report(int64_t begin, int64_t end, const std::string &title);

private:
	Narrowing narrowing_;
	OpenSpans<std::string, int64_t> open_;
	std::map<std::pair<int64_t, std::string>, Distribution> per_process_;
	Distribution all_;
	uint64_t unmatched_ends_ = 0;
};

// Over the events of a walk. Each throws std::runtime_error when the trace
// lacks the events it needs (saying which to record), ReadError when damaged.
Report analyze_cputop(EventWalk &walk, const Narrowing &narrowing = {});
Report analyze_syscalls(EventWalk &walk, const Narrowing &narrowing = {});
Report analyze_schedlat(EventWalk &walk, const Narrowing &narrowing = {});
Report analyze_irq(EventWalk &walk, const Narrowing &narrowing = {});

Report analyze_latency(EventWalk &walk, const SpanOptions &options, const Narrowing &narrowing = {});

} // namespace tracery::analysis
