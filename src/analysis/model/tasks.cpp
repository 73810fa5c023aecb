// analysis/model/tasks.cpp — the kernel analyses' task table (also the SQL
// export's threads and processes) and CPU lookup (see analyses.hpp).
#include "analysis/analyze/analyses.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

void TaskTable::set(int64_t tid, std::optional<int64_t> pid, std::string_view comm)
{
	Task &t = tasks_[tid];
	if (pid)
		t.pid = pid;
	if (!comm.empty() && t.comm != comm)
		t.comm = comm;
}

std::optional<int64_t> TaskTable::pid(int64_t tid) const
{
	const auto it = tasks_.find(tid);
	return it == tasks_.end() ? std::nullopt : it->second.pid;
}

std::string TaskTable::comm(int64_t tid) const
{
	const auto it = tasks_.find(tid);
	return it == tasks_.end() ? std::string() : it->second.comm;
}

void TaskTable::observe(const reader::Item &event)
{
	const Fields &f = cache_.get(event, [&] {
		Fields r;
		const std::string &name = event.event->cls->name;
		if (name == "lttng_statedump_process_state")
			r = {Fields::statedump, find_field(event, "tid"), find_field(event, "pid"),
			     find_field(event, "name"), find_field(event, "ppid")};
		else if (name == "sched_process_fork")
			r = {Fields::fork, find_field(event, "child_tid"), find_field(event, "child_pid"),
			     find_field(event, "child_comm"), find_field(event, "parent_pid")};
		else if (name == "sched_process_exec")
			r = {Fields::exec, find_field(event, "tid"), {}, find_field(event, "filename"), {}};
		else if (name == "sched_process_exit")
			r = {Fields::exit, find_field(event, "tid"), {}, find_field(event, "comm"), {}};
		else if (name == "sched_switch")
			r = {Fields::sched_switch,
			     find_field(event, "next_tid"),
			     find_field(event, "prev_tid"),
			     find_field(event, "next_comm"),
			     {}};
		if (!r.tid)
			r.kind = Fields::other;
		return r;
	});
	switch (f.kind) {
	case Fields::other:
		return;
	case Fields::statedump:
	case Fields::fork:
		if (const auto tid = int_field(event, f.tid)) {
			const auto pid = int_field(event, f.pid);
			set(*tid, pid, text_field(event, f.comm));
			Task &t = tasks_[*tid];
			// the parent process of a new process (a new thread's is its process's)
			if (const auto ppid = int_field(event, f.ppid);
			    ppid && (f.kind == Fields::statedump || pid != ppid))
				t.ppid = ppid;
			if (f.kind == Fields::fork) {
				t.start_ns = event.ns;
				t.end_ns.reset();
			}
		}
		return;
	case Fields::exec:
		// the kernel names the task after the file's base name, cut to 15 bytes
		if (const auto tid = int_field(event, f.tid)) {
			std::string_view file = text_field(event, f.comm);
			if (const auto slash = file.rfind('/'); slash != std::string_view::npos)
				file.remove_prefix(slash + 1);
			set(*tid, std::nullopt, file.substr(0, 15));
		}
		return;
	case Fields::exit:
		if (const auto tid = int_field(event, f.tid)) {
			set(*tid, std::nullopt, text_field(event, f.comm));
			tasks_[*tid].end_ns = event.ns;
		}
		return;
	case Fields::sched_switch:
		// comms only: pid here is prev_tid, whose comm is prev_comm
		if (const auto tid = int_field(event, f.tid); tid && *tid != 0)
			set(*tid, std::nullopt, text_field(event, f.comm));
		return;
	}
}

SchedEvent SchedEvent::of(const reader::Item &event)
{
	const std::string &name = event.event->cls->name;
	if (name == "sched_switch")
		return {sched_switch, find_field(event, "prev_tid"), find_field(event, "next_tid"), {}};
	if (name == "sched_waking" || name == "sched_wakeup" || name == "sched_wakeup_new")
		return {wakeup, {}, {}, find_field(event, "tid")};
	if (name == "sched_migrate_task")
		return {migrate, {}, {}, find_field(event, "tid")};
	return {};
}

std::optional<int64_t> CpuOf::operator()(const reader::Item &event)
{
	const FieldRef &ref = cache_.get(event, [&] { return find_context_field(event, "cpu_id"); });
	return int_field(event, ref);
}

} // namespace tracery::analysis
