// analysis/analyze/schedlat.cpp — `tracery analyze schedlat`: wake-up latency, from
// a task's wake-up (sched_waking, sched_wakeup, sched_wakeup_new: the
// earliest since it last ran) to the sched_switch that runs it.
#include "analysis/analyze/analyses.hpp"

#include <algorithm>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

void SchedLat::on_wakeup(int64_t ns, int64_t tid)
{
	if (tid != 0)
		woken_.try_emplace(tid, ns); // a later wake-up of a task already woken does not restart its wait
}

void SchedLat::on_switch(int64_t ns, int64_t prev_tid, int64_t next_tid, std::optional<int64_t> cpu)
{
	// A task woken while it still ran (before it left the CPU) did not wait.
	woken_.erase(prev_tid);
	const auto w = woken_.find(next_tid);
	if (w == woken_.end())
		return;
	const int64_t latency = ns - w->second;
	woken_.erase(w);
	if (narrowing_.time_in(ns) && narrowing_.cpu_in(cpu))
		per_tid_[next_tid].add(latency);
}

Report SchedLat::report(int64_t begin, int64_t end, const TaskTable &tasks)
{
	Report r = Report::ranged("schedlat", narrowing_.clamp(begin), narrowing_.clamp(end));
	Distribution all;
	for (auto it = per_tid_.begin(); it != per_tid_.end();) {
		const int64_t tid = it->first;
		if (narrowing_.task_in(tid, tasks.pid(tid).value_or(tid), tasks.comm(tid))) {
			all.merge(it->second);
			++it;
		} else {
			it = per_tid_.erase(it);
		}
	}
	r.tables.push_back(summary_table("all", "Wake-up latency, all tasks", all));

	Table &t = r.add(
		"per_thread", "Wake-up latency per thread",
		{{"tid", "TID", Format::integer}, {"pid", "PID", Format::integer}, {"comm", "Name", Format::text}});
	summary_columns(t.columns);
	t.top_by = "max_ns";
	std::vector<std::pair<int64_t, Distribution *>> order;
	for (auto &[tid, d] : per_tid_)
		order.emplace_back(tid, &d);
	// the longest worst case first
	for (auto &[tid, d] : order)
		d->summary();
	std::stable_sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
		return a.second->summary().max > b.second->summary().max;
	});
	for (auto &[tid, d] : order) {
		std::vector<Cell> &row = t.rows.emplace_back();
		const auto pid = tasks.pid(tid);
		row = {tid, cell_of(pid), tasks.comm(tid)};
		summary_cells(d->summary(), row);
	}
	r.tables.push_back(histogram_table("histogram", "Wake-up latency, all tasks", all));
	return r;
}

Report analyze_schedlat(EventWalk &walk, const Narrowing &narrowing)
{
	ClassCache<KernelEvent> cache;
	CpuOf cpu_of;
	TaskTable tasks;
	SchedLat lat(narrowing);
	TimeRange range;
	uint64_t switches = 0, wakeups = 0;
	for_each_event(walk, range, [&](const reader::Item &event) {
		const reader::Item *it = &event;
		lat.begin(range.first);
		const KernelEvent &f = cache.get(*it, [&] { return KernelEvent::of(*it); });
		tasks.observe(*it, f);
		if (f.kind == KernelEvent::sched_switch) {
			const auto prev = int_field(*it, f.prev_tid), next = int_field(*it, f.next_tid);
			if (prev && next) {
				lat.on_switch(it->ns, *prev, *next, cpu_of(*it));
				++switches;
			}
		} else if (f.kind == KernelEvent::sched_wake) {
			if (const auto tid = int_field(*it, f.tid)) {
				lat.on_wakeup(it->ns, *tid);
				++wakeups;
			}
		}
	});
	if (!switches || !wakeups)
		throw std::runtime_error(
			std::string("the trace has no ") + (switches ? "sched_waking/sched_wakeup" : "sched_switch") +
			" event, which schedlat needs: record a kernel trace with `tracery enable-event -k "
			"sched_switch,sched_waking,sched_wakeup,sched_wakeup_new`");
	return lat.report(range.first, range.last, tasks);
}

} // namespace tracery::analysis
