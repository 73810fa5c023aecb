// Work of many users served fairly by a few threads: a queue per user,
// served round-robin, with at most `per_user` items of one user in progress
// at once. A user who queues a thousand requests delays another user's
// next one by at most one of its own per round, and occupies at most
// `per_user` of the threads taking from the queue.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace tracery::daemon {

template <typename Job>
class FairQueue {
public:
	explicit FairQueue(unsigned per_user) : per_user_(per_user) {}

	void push(uid_t uid, Job job)
	{
		std::lock_guard lock(mutex_);
		User &u = users_[uid];
		u.jobs.push_back(std::move(job));
		if (u.jobs.size() == 1 && u.running < per_user_)
			ready_.push_back(uid);
		ready_cv_.notify_one();
	}

	// The next job, in round-robin order over the users that have one and
	// are under their limit; waits for one. nullopt once closed.
	std::optional<std::pair<uid_t, Job>> pop()
	{
		std::unique_lock lock(mutex_);
		ready_cv_.wait(lock, [&] { return closed_ || !ready_.empty(); });
		if (closed_)
			return std::nullopt;
		const uid_t uid = ready_.front();
		ready_.pop_front();
		User &u = users_[uid];
		std::pair<uid_t, Job> out{uid, std::move(u.jobs.front())};
		u.jobs.pop_front();
		u.running++;
		if (!u.jobs.empty() && u.running < per_user_)
			ready_.push_back(uid); // behind every other user waiting
		return out;
	}

	// A job of `uid` that pop() gave is finished.
	void done(uid_t uid)
	{
		std::lock_guard lock(mutex_);
		User &u = users_[uid];
		u.running--;
		if (!u.jobs.empty() && u.running + 1 == per_user_) {
			ready_.push_back(uid);
			ready_cv_.notify_one();
		} else if (u.jobs.empty() && u.running == 0) {
			users_.erase(uid);
		}
	}

	// pop() returns nullopt from now on.
	void close()
	{
		std::lock_guard lock(mutex_);
		closed_ = true;
		ready_cv_.notify_all();
	}

private:
	struct User {
		std::deque<Job> jobs;
		unsigned running = 0;
	};
	const unsigned per_user_;
	std::mutex mutex_;
	std::condition_variable ready_cv_;
	std::map<uid_t, User> users_;
	std::list<uid_t> ready_; // users with a job to start and room to start it, in turn order
	bool closed_ = false;
};

} // namespace tracery::daemon
