// analysis/model/tasks.cpp — the task table (see tasks.hpp).
#include "analysis/model/tasks.hpp"

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
	observe(event, cache_.get(event, [&] { return KernelEvent::of(event); }));
}

void TaskTable::observe(const reader::Item &event, const KernelEvent &k)
{
	switch (k.kind) {
	case KernelEvent::process_statedump:
	case KernelEvent::process_fork:
		if (const auto tid = int_field(event, k.tid)) {
			const auto pid = int_field(event, k.pid);
			set(*tid, pid, text_field(event, k.comm));
			Task &t = tasks_[*tid];
			// the parent process of a new process (a new thread's is its process's)
			if (const auto ppid = int_field(event, k.ppid);
			    ppid && (k.kind == KernelEvent::process_statedump || pid != ppid))
				t.ppid = ppid;
			if (k.kind == KernelEvent::process_fork) {
				t.start_ns = event.ns;
				t.end_ns.reset();
			}
		}
		return;
	case KernelEvent::process_exec:
		if (const auto tid = int_field(event, k.tid))
			set(*tid, std::nullopt, comm_of_exec(text_field(event, k.file)));
		return;
	case KernelEvent::process_exit:
		if (const auto tid = int_field(event, k.tid)) {
			set(*tid, std::nullopt, text_field(event, k.comm));
			tasks_[*tid].end_ns = event.ns;
		}
		return;
	case KernelEvent::sched_switch:
		if (const auto tid = int_field(event, k.next_tid); tid && *tid != 0)
			set(*tid, std::nullopt, text_field(event, k.next_comm));
		return;
	default:
		return;
	}
}

} // namespace tracery::analysis
