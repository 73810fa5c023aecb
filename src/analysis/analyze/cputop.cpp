// analysis/analyze/cputop.cpp — `tracery analyze cputop`: CPU time per thread, per
// process and per CPU from sched_switch (see analyses.hpp for the rules).
#include "analysis/analyze/analyses.hpp"

#include <algorithm>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

void CpuTop::on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t next_tid)
{
	// Outside --cpu the tasks still come and go, with no time counted.
	const bool counted = narrowing_.cpu_in(cpu);
	ns = narrowing_.clamp(ns);
	if (counted) {
		cpus_seen_[cpu];
		// A CPU first seen switching was busy since the beginning (its task unknown).
		auto [c, new_cpu] = cpus_.try_emplace(cpu);
		if (new_cpu)
			c->second.since = begin_;
		if (c->second.since)
			c->second.ns += ns - *c->second.since;
		c->second.since = next_tid != 0 ? std::optional<int64_t>(ns) : std::nullopt;
	}

	// A task first seen leaving a CPU ran since the beginning.
	auto [p, new_prev] = tids_.try_emplace(prev_tid);
	if (new_prev && counted)
		p->second.since = begin_;
	if (p->second.since) {
		p->second.ns += ns - *p->second.since;
		p->second.since.reset();
	}
	if (next_tid != 0)
		tids_[next_tid].since = counted ? std::optional<int64_t>(ns) : std::nullopt;
}

void CpuTop::on_migrate(int64_t tid) { ++tids_[tid].migrations; }

Report CpuTop::report(int64_t end, const TaskTable &tasks) const
{
	end = narrowing_.clamp(end);
	Report r = Report::ranged("cputop", begin_, end);
	const int64_t duration = end - begin_;
	const auto ratio = [&](int64_t ns) {
		return duration > 0 ? static_cast<double>(ns) / static_cast<double>(duration) : 0.0;
	};
	const auto closed = [&](const Run &run) { return run.ns + (run.since ? end - *run.since : 0); };

	struct Row {
		int64_t id, ns;
		uint64_t migrations, threads;
	};
	std::vector<Row> threads;
	std::map<int64_t, Row> processes;
	for (const auto &[tid, run] : tids_) {
		if (tid == 0) // the idle task: not a thread's CPU time
			continue;
		// a thread whose process the trace does not tell is its own
		const int64_t pid = tasks.pid(tid).value_or(tid);
		if (!narrowing_.task_in(tid, pid, tasks.comm(tid)))
			continue;
		const int64_t ns = closed(run);
		threads.push_back({tid, ns, run.migrations, 1});
		Row &p = processes.try_emplace(pid, Row{pid, 0, 0, 0}).first->second;
		p.ns += ns;
		p.migrations += run.migrations;
		++p.threads;
	}
	const auto busiest = [](const Row &a, const Row &b) { return a.ns != b.ns ? a.ns > b.ns : a.id < b.id; };
	std::sort(threads.begin(), threads.end(), busiest);

	Table &t = r.add("per_thread", "CPU time per thread",
	                 {{"tid", "TID", Format::integer},
	                  {"pid", "PID", Format::integer},
	                  {"comm", "Name", Format::text},
	                  {"cpu_ns", "CPU time", Format::duration},
	                  {"usage", "Usage", Format::ratio},
	                  {"migrations", "Migrations", Format::integer}});
	t.top_by = "cpu_ns";
	for (const Row &row : threads) {
		const auto pid = tasks.pid(row.id);
		t.rows.push_back({row.id, cell_of(pid), tasks.comm(row.id), row.ns, ratio(row.ns),
		                  static_cast<int64_t>(row.migrations)});
	}

	std::vector<Row> procs;
	for (const auto &[pid, row] : processes)
		procs.push_back(row);
	std::sort(procs.begin(), procs.end(), busiest);
	Table &pt = r.add("per_process", "CPU time per process",
	                  {{"pid", "PID", Format::integer},
	                   {"comm", "Name", Format::text},
	                   {"threads", "Threads", Format::integer},
	                   {"cpu_ns", "CPU time", Format::duration},
	                   {"usage", "Usage", Format::ratio}});
	pt.top_by = "cpu_ns";
	for (const Row &row : procs)
		pt.rows.push_back(
			{row.id, tasks.comm(row.id), static_cast<int64_t>(row.threads), row.ns, ratio(row.ns)});

	Table &ct = r.add("per_cpu", "CPU time per CPU (busy: not idle)",
	                  {{"cpu", "CPU", Format::integer},
	                   {"busy_ns", "Busy", Format::duration},
	                   {"usage", "Usage", Format::ratio}});
	ct.top_by = "busy_ns";
	int64_t busy = 0;
	for (const auto &[cpu, run] : cpus_) {
		const int64_t ns = closed(run);
		busy += ns;
		ct.rows.push_back({cpu, ns, ratio(ns)});
	}
	Table &tt = r.add("total", "All CPUs",
	                  {{"cpus", "CPUs", Format::integer},
	                   {"busy_ns", "Busy", Format::duration},
	                   {"usage", "Usage", Format::ratio}});
	const auto n = static_cast<int64_t>(cpus_seen_.size());
	tt.rows.push_back({n, busy, n ? ratio(busy) / static_cast<double>(n) : 0.0});
	return r;
}

Report analyze_cputop(EventWalk &walk, const Narrowing &narrowing)
{
	ClassCache<KernelEvent> cache;
	CpuOf cpu_of;
	TaskTable tasks;
	CpuTop top(narrowing);
	TimeRange range;
	uint64_t switches = 0;
	for_each_event(walk, range, [&](const reader::Item &event) {
		const reader::Item *it = &event;
		top.begin(range.first);
		const KernelEvent &f = cache.get(*it, [&] { return KernelEvent::of(*it); });
		tasks.observe(*it, f);
		const auto cpu = cpu_of(*it);
		if (cpu)
			top.on_cpu(*cpu);
		if (f.kind == KernelEvent::sched_switch) {
			const auto prev = int_field(*it, f.prev_tid), next = int_field(*it, f.next_tid);
			if (cpu && prev && next) {
				top.on_switch(it->ns, *cpu, *prev, *next);
				++switches;
			}
		} else if (f.kind == KernelEvent::sched_migrate) {
			if (const auto tid = int_field(*it, f.tid))
				top.on_migrate(*tid);
		}
	});
	if (!switches)
		throw std::runtime_error(
			"the trace has no sched_switch event (with prev_tid, next_tid and its packet's "
			"cpu_id), which cputop needs: record a kernel trace with `tracery enable-event "
			"-k sched_switch`");
	return top.report(range.last, tasks);
}

} // namespace tracery::analysis
