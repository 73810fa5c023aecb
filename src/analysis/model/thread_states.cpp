// analysis/model/thread_states.cpp — thread states from the scheduler's
// events (see thread_states.hpp).
#include "analysis/model/thread_states.hpp"

#include <algorithm>
#include <vector>

namespace tracery::analysis {

Blocked blocked_of(int64_t prev_state)
{
	const int64_t s = prev_state & 0xff;
	if (s & 0x02)
		return Blocked::uninterruptible;
	if (s & 0x01)
		return Blocked::sleeping;
	if (s & 0x0c)
		return Blocked::stopped;
	if (s & 0x30)
		return Blocked::dead;
	if (s & 0x80)
		return Blocked::idle;
	return Blocked::sleeping; // parked (0x40), or a state this reader does not know
}

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

void ThreadStates::emit(int64_t tid, const Now &now, int64_t end_ns)
{
	Interval i;
	i.tid = tid;
	i.ts = now.since;
	i.dur = end_ns - now.since;
	i.state = now.state;
	i.cpu = now.cpu;
	i.prev_state = now.prev_state;
	i.waker = now.waker;
	sink_(i);
}

void ThreadStates::enter(int64_t tid, int64_t ns, State s, std::optional<int64_t> cpu, int64_t prev_state,
                         std::optional<int64_t> waker)
{
	auto [where, added] = threads_.try_emplace(tid);
	Now &now = where->second;
	if (!added) {
		if (now.state == s && now.cpu == cpu)
			return;
		if (ns > now.since)
			emit(tid, now, ns);
	}
	now.state = s;
	now.since = ns;
	now.cpu = cpu;
	now.prev_state = prev_state;
	now.waker = waker;
}

void ThreadStates::on_switch(int64_t ns, int64_t cpu, int64_t prev_tid, int64_t prev_state, int64_t next_tid)
{
	if (prev_tid != 0) {
		const auto p = threads_.find(prev_tid);
		const bool preempted = (prev_state & 0xff) == 0;
		if (p != threads_.end() && p->second.exited && !preempted) {
			// its last switch out: its running interval ends, nothing follows
			emit(prev_tid, p->second, ns);
			threads_.erase(p);
		} else if (preempted) {
			enter(prev_tid, ns, runnable, std::nullopt);
		} else {
			enter(prev_tid, ns, blocked, std::nullopt, prev_state);
		}
	}
	if (next_tid != 0)
		enter(next_tid, ns, running, cpu);
}

void ThreadStates::on_wakeup(int64_t ns, int64_t tid, std::optional<int64_t> waker)
{
	if (tid == 0)
		return;
	const auto t = threads_.find(tid);
	if (t != threads_.end() && t->second.state != blocked)
		return; // running or already runnable
	enter(tid, ns, runnable, std::nullopt, 0, waker);
}

void ThreadStates::on_exit(int64_t tid)
{
	if (const auto t = threads_.find(tid); t != threads_.end())
		t->second.exited = true;
}

void ThreadStates::on_lost_switch_out(int64_t ns, int64_t tid)
{
	const auto t = threads_.find(tid);
	if (t == threads_.end() || t->second.state != running)
		return;
	if (ns > t->second.since)
		emit(tid, t->second, ns);
	threads_.erase(t);
}

void ThreadStates::finish(int64_t end_ns)
{
	std::vector<std::pair<int64_t, Now>> open(threads_.begin(), threads_.end());
	std::sort(open.begin(), open.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
	for (const auto &[tid, now] : open)
		emit(tid, now, end_ns);
	threads_.clear();
}

} // namespace tracery::analysis
