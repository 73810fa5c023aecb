// A tracefs instance's set_event_pid kept equal to the tracked threads: see
// tracked_processes.hpp.
#include "kernel/tracked_processes.hpp"

#include "base/background_thread.hpp"
#include "base/monotonic.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace tracery::kernel {

namespace {

template <typename Pids>
std::string join(const Pids &pids)
{
	std::string out;
	for (const pid_t p : pids)
		out.append(std::to_string(p)).push_back(' ');
	return out;
}

} // namespace

TrackedProcesses::TrackedProcesses(const Instance &instance, ProcessRules rules, std::string tracefs_root,
                                   std::string proc_root)
	: instance_(instance), proc_root_(std::move(proc_root)), watcher_(tracefs_root), rules_(std::move(rules)),
	  stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
{
	if (!stop_)
		throw std::system_error(errno, std::generic_category(), "eventfd");
	{
		const std::lock_guard lock(mutex_);
		rescan();
	}
	if (const int e = base::start_background_thread(thread_, &TrackedProcesses::run, this); e != 0)
		throw std::system_error(e, std::generic_category(), "cannot start the process tracking thread");
	while (thread_tid_.load() == 0) // its id, for the session's notrace list
		::usleep(100);
}

TrackedProcesses::~TrackedProcesses()
{
	const uint64_t one = 1;
	[[maybe_unused]] const ssize_t n = ::write(stop_.get(), &one, sizeof one);
	pthread_join(thread_, nullptr);
}

void *TrackedProcesses::run(void *self)
{
	auto *t = static_cast<TrackedProcesses *>(self);
	t->thread_tid_.store(::gettid());
	t->loop();
	return nullptr;
}

void TrackedProcesses::loop()
{
	for (;;) {
		pollfd fds[2] = {{watcher_.fd(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
		if (::poll(fds, 2, -1) < 0 && errno != EINTR)
			return;
		if (fds[1].revents)
			return;
		Joining add;
		std::set<pid_t> remove;
		const std::lock_guard lock(mutex_);
		counts_.records += watcher_.consume([&](const CredsChange &c) { handle(c, add, remove); });
		const uint64_t lost = watcher_.lost();
		try {
			if (lost != lost_seen_) { // records missed: what they said is read again
				counts_.lost = lost_seen_ = lost;
				rescan();
				continue;
			}
			write_changes(add, remove);
		} catch (const std::exception &) {
			// The instance went (the session ends): nothing to keep.
			return;
		}
	}
}

bool TrackedProcesses::matches_now(pid_t tid) const
{
	const std::optional<TaskIds> ids = read_task_ids(proc_root_ + "/" + std::to_string(tid));
	return ids && task_matches(rules_, *ids, proc_root_);
}

void TrackedProcesses::handle(const CredsChange &c, Joining &add, std::set<pid_t> &remove)
{
	const auto set = [&](pid_t tid, bool listed) {
		if (listed) {
			remove.erase(tid);
			if (listed_.insert(tid).second)
				add[tid] = c.time_ns;
		} else {
			add.erase(tid);
			if (listed_.erase(tid))
				remove.insert(tid);
		}
	};
	switch (c.kind) {
	case CredsChange::Kind::fork:
		if (rules_.closed_under_fork()) {
			if (listed_.count(c.parent)) {
				listed_.insert(c.tid);
				add.emplace(c.tid, 0); // the kernel listed it: again, in case a rewrite raced it
			}
			if (notraced_.count(c.parent))
				notraced_.insert(c.tid); // the kernel added it to that list too
		} else {
			set(c.tid, matches_now(c.tid));
		}
		break;
	case CredsChange::Kind::exec:
	case CredsChange::Kind::ids:
		set(c.tid, matches_now(c.tid));
		break;
	case CredsChange::Kind::exit:
		if (listed_.erase(c.tid) && !rules_.closed_under_fork())
			remove.insert(c.tid); // without event-fork the kernel keeps it: not its id's next owner
		if (rules_.closed_under_fork())
			notraced_.erase(c.tid); // with event-fork the kernel drops it from both lists
		add.erase(c.tid);
		break;
	}
}

void TrackedProcesses::write_changes(const Joining &add, const std::set<pid_t> &remove)
{
	if (add.empty() && remove.empty())
		return;
	const uint64_t start_ns = base::monotonic_ns();
	// Leaving: appended to the notrace list (set_event_pid has no removal,
	// and rewriting it clears it first). Joining again: taken out of it.
	if (!remove.empty()) {
		write_control(instance_.file("set_event_notrace_pid"), join(remove), true);
		notraced_.insert(remove.begin(), remove.end());
	}
	std::set<pid_t> readmitted;
	std::string text;
	for (const auto &[tid, since] : add) {
		text.append(std::to_string(tid)).push_back(' ');
		if (notraced_.erase(tid))
			readmitted.insert(tid);
	}
	if (!text.empty())
		write_control(instance_.file("set_event_pid"), text, true);
	if (!readmitted.empty())
		drop_notrace_ids(instance_, readmitted);
	const uint64_t end_ns = base::monotonic_ns();
	counts_.write_max_ns = std::max(counts_.write_max_ns, end_ns - start_ns);
	for (const auto &[tid, since] : add) {
		if (since == 0 || since > start_ns)
			continue;
		++counts_.joined;
		counts_.window_last_ns = end_ns - since;
		counts_.window_max_ns = std::max(counts_.window_max_ns, counts_.window_last_ns);
		counts_.to_write_max_ns = std::max(counts_.to_write_max_ns, start_ns - since);
	}
	counts_.left += remove.size();
}

void drop_notrace_ids(const Instance &instance, const std::set<pid_t> &ids)
{
	const std::string file = instance.file("set_event_notrace_pid");
	const std::string listed = read_control(file);
	std::string kept;
	for (size_t pos = 0; pos < listed.size();) {
		const size_t end = std::min(listed.find_first_of(" \n", pos), listed.size());
		pid_t p = 0;
		if (std::from_chars(listed.data() + pos, listed.data() + end, p).ec == std::errc() && p > 0 &&
		    !ids.count(p))
			kept.append(std::to_string(p)).push_back(' ');
		pos = end + 1;
	}
	write_control(file, kept);
}

std::set<pid_t> TrackedProcesses::notrace_ids() const
{
	const std::lock_guard lock(mutex_);
	std::set<pid_t> ids = notraced_;
	ids.insert(thread_tid_.load());
	return ids;
}

void TrackedProcesses::rescan()
{
	const std::vector<pid_t> tids = matching_tasks(rules_, proc_root_);
	listed_ = std::set<pid_t>(tids.begin(), tids.end());
	// event-fork first: a child of a listed thread forked meanwhile is then listed.
	write_control(instance_.file("options/event-fork"), rules_.closed_under_fork() ? "1" : "0");
	write_control(instance_.file("set_event_pid"), tids.empty() ? std::to_string(kNoTask) : join(tids));
	if (!notraced_.empty()) { // the new list holds only the threads that match
		drop_notrace_ids(instance_, notraced_);
		notraced_.clear();
	}
	++counts_.scans;
}

void TrackedProcesses::change_rules(const ProcessRules &rules)
{
	const std::lock_guard lock(mutex_);
	rules_ = rules;
	rescan();
}

TrackedProcessesCounts TrackedProcesses::counts() const
{
	const std::lock_guard lock(mutex_);
	TrackedProcessesCounts c = counts_;
	c.listed = listed_.size();
	return c;
}

} // namespace tracery::kernel
