// analysis/analyze/syscalls.cpp — `tracery analyze syscalls`: count and latency of
// system calls per call, per thread and per process, from the
// syscall_entry_NAME / syscall_exit_NAME events of kernel traces (LTTng's
// names). A call counts for the task running on the exit's CPU when that
// task entered a call since its last counted exit, under the entry's name
// (lttng-analyses' rule), or for the thread of the events' tid context when
// the trace has one; its latency runs from that entry to the exit.
#include "analysis/analyze/analyses.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

void Syscalls::on_exit(int64_t ns, int64_t cpu, std::optional<int64_t> ret, std::optional<int64_t> tid)
{
	const SyscallTracker::Call *c = pairs_.on_exit(cpu, tid);
	if (!c || !narrowing_.time_in(ns) || !narrowing_.cpu_in(cpu))
		return;
	Calls &calls = per_tid_[{c->tid, c->name}];
	calls.d.add(ns - c->entry_ns);
	if (ret && *ret < 0)
		++calls.errors;
}

Report Syscalls::report(int64_t begin, int64_t end, const TaskTable &tasks)
{
	Report r = Report::ranged("syscalls", narrowing_.clamp(begin), narrowing_.clamp(end));
	// per call and per process: the threads' latencies together
	struct Group {
		Distribution d;
		uint64_t errors = 0;
	};
	std::map<std::string, Group> per_call;
	std::map<std::pair<int64_t, std::string>, Group> per_process;
	Distribution all;
	const auto merge = [](Group &g, Calls &c) {
		g.d.merge(c.d);
		g.errors += c.errors;
	};
	for (auto it = per_tid_.begin(); it != per_tid_.end();) {
		const int64_t tid = it->first.first;
		if (narrowing_.task_in(tid, tasks.pid(tid).value_or(tid), tasks.comm(tid)))
			++it;
		else
			it = per_tid_.erase(it);
	}
	for (auto &[key, calls] : per_tid_) {
		merge(per_call[key.second], calls);
		merge(per_process[{tasks.pid(key.first).value_or(key.first), key.second}], calls);
		all.merge(calls.d);
	}
	const auto columns = [](std::vector<Column> head) {
		head.push_back({"errors", "Errors", Format::integer});
		summary_columns(head);
		return head;
	};
	const auto cells = [](std::initializer_list<Cell> head, uint64_t errors, Distribution &d) {
		std::vector<Cell> row;
		row.reserve(head.size() + 10); // also keeps GCC 12 -O3 from a false -Warray-bounds on growing it
		row.insert(row.end(), head.begin(), head.end());
		row.emplace_back(static_cast<int64_t>(errors));
		summary_cells(d.summary(), row);
		return row;
	};
	// busiest first
	const auto order = [](auto &map) {
		std::vector<typename std::remove_reference_t<decltype(map)>::value_type *> v;
		for (auto &e : map)
			v.push_back(&e);
		std::stable_sort(v.begin(), v.end(),
		                 [](auto *a, auto *b) { return a->second.d.count() > b->second.d.count(); });
		return v;
	};

	Table &ct = r.tables.emplace_back();
	ct.key = "per_syscall";
	ct.title = "System calls";
	ct.columns = columns({{"syscall", "System call", Format::text}});
	ct.top_by = "count";
	for (auto *e : order(per_call))
		ct.rows.push_back(cells({e->first}, e->second.errors, e->second.d));

	Table &pt = r.tables.emplace_back();
	pt.key = "per_process";
	pt.title = "System calls per process";
	pt.columns = columns({{"pid", "PID", Format::integer},
	                      {"comm", "Name", Format::text},
	                      {"syscall", "System call", Format::text}});
	pt.top_by = "count";
	for (auto *e : order(per_process))
		pt.rows.push_back(cells({e->first.first, tasks.comm(e->first.first), e->first.second}, e->second.errors,
		                        e->second.d));

	Table &tt = r.tables.emplace_back();
	tt.key = "per_thread";
	tt.title = "System calls per thread";
	tt.columns = columns({{"tid", "TID", Format::integer},
	                      {"pid", "PID", Format::integer},
	                      {"comm", "Name", Format::text},
	                      {"syscall", "System call", Format::text}});
	tt.top_by = "count";
	for (auto *e : order(per_tid_)) {
		const auto pid = tasks.pid(e->first.first);
		tt.rows.push_back(cells({e->first.first, cell_of(pid), tasks.comm(e->first.first), e->first.second},
		                        e->second.errors, e->second.d));
	}
	r.tables.push_back(histogram_table("histogram", "Latency of all system calls", all));
	return r;
}

Report analyze_syscalls(EventWalk &walk, const Narrowing &narrowing)
{
	ClassCache<KernelEvent> cache;
	ClassCache<FieldRef> tid_context;
	CpuOf cpu_of;
	TaskTable tasks;
	Syscalls calls(narrowing);
	TimeRange range;
	uint64_t seen = 0;
	for_each_event(walk, range, [&](const reader::Item &event) {
		const reader::Item *it = &event;
		calls.begin(range.first);
		const KernelEvent &f = cache.get(*it, [&] { return KernelEvent::of(*it); });
		tasks.observe(*it, f);
		if (f.kind != KernelEvent::sched_switch && f.kind != KernelEvent::syscall_entry &&
		    f.kind != KernelEvent::syscall_exit)
			return;
		const auto cpu = cpu_of(*it);
		if (!cpu)
			return;
		switch (f.kind) {
		case KernelEvent::sched_switch:
			if (const auto next = int_field(*it, f.next_tid))
				calls.on_switch(*cpu, *next);
			break;
		case KernelEvent::syscall_entry:
			++seen;
			calls.on_entry(it->ns, *cpu, f.call,
			               int_field(*it, tid_context.get(*it, [&] { return find_tid_context(*it); })));
			break;
		default:
			++seen;
			calls.on_exit(it->ns, *cpu, int_field(*it, f.ret),
			              int_field(*it, tid_context.get(*it, [&] { return find_tid_context(*it); })));
			break;
		}
	});
	if (!seen)
		throw std::runtime_error("the trace has no syscall_entry_*/syscall_exit_* event, which syscalls needs: "
		                         "record a kernel trace with `tracery enable-event -k --syscall -a` (and "
		                         "`tracery enable-event -k sched_switch`, to know which thread calls)");
	return calls.report(range.first, range.last, tasks);
}

} // namespace tracery::analysis
