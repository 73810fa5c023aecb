// analysis/sql/derived.cpp — thread states and processes (see derived.hpp).
#include "analysis/sql/derived.hpp"

#include <algorithm>
#include <map>

namespace tracery::analysis::sql {

const char *ThreadStates::name(State s)
{
	switch (s) {
	case running:
		return "running";
	case runnable:
		return "runnable";
	case blocked:
		return "blocked";
	}
	return "?";
}

void ThreadStates::enter(int64_t tid, int64_t ns, State s, std::optional<int64_t> cpu)
{
	auto [where, added] = threads_.try_emplace(tid);
	Now &now = where->second;
	if (!added) {
		if (now.state == s && now.cpu == cpu)
			return;
		if (ns > now.since)
			sink_({tid, now.since, ns - now.since, now.state, now.cpu});
	}
	now.state = s;
	now.since = ns;
	now.cpu = cpu;
}

void ThreadStates::on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t prev_state, int64_t next_tid)
{
	if (prev_tid != 0) {
		const auto p = threads_.find(prev_tid);
		const bool preempted = (prev_state & 0xff) == 0;
		if (p != threads_.end() && p->second.exited && !preempted) {
			// its last switch out: its running interval ends, nothing follows
			sink_({prev_tid, p->second.since, ns - p->second.since, p->second.state, p->second.cpu});
			threads_.erase(p);
		} else {
			enter(prev_tid, ns, preempted ? runnable : blocked, std::nullopt);
		}
	}
	if (next_tid != 0)
		enter(next_tid, ns, running, cpu);
}

void ThreadStates::on_wakeup(int64_t ns, int64_t tid)
{
	if (tid == 0)
		return;
	const auto t = threads_.find(tid);
	if (t != threads_.end() && t->second.state != blocked)
		return; // running or already runnable
	enter(tid, ns, runnable, std::nullopt);
}

void ThreadStates::on_exit(int64_t tid)
{
	if (const auto t = threads_.find(tid); t != threads_.end())
		t->second.exited = true;
}

void ThreadStates::finish(int64_t end_ns)
{
	std::vector<std::pair<int64_t, Now>> open(threads_.begin(), threads_.end());
	std::sort(open.begin(), open.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
	for (const auto &[tid, now] : open)
		sink_({tid, now.since, end_ns - now.since, now.state, now.cpu});
	threads_.clear();
}

std::vector<ProcessRow> processes_of(const TaskTable &tasks)
{
	std::map<int64_t, ProcessRow> rows;
	for (const auto &[tid, t] : tasks.tasks()) {
		const int64_t pid = t.pid.value_or(tid);
		ProcessRow &p = rows[pid];
		p.pid = pid;
		++p.threads;
		if (tid == pid) {
			p.name = t.comm;
			p.ppid = t.ppid;
			p.start_ns = t.start_ns;
			p.end_ns = t.end_ns;
		} else if (p.name.empty()) {
			p.name = t.comm;
		}
	}
	std::vector<ProcessRow> v;
	v.reserve(rows.size());
	for (auto &[pid, p] : rows)
		v.push_back(std::move(p));
	return v;
}

} // namespace tracery::analysis::sql
