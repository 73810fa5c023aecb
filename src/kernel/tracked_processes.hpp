// kernel/tracked_processes.hpp — keeps a tracefs instance's set_event_pid
// equal to the threads a kernel session's tracked attributes select
// (process_filter.hpp) while it traces, when they narrow by more than pids
// (ProcessRules::pids_only() is tracefs's own work).
//
// How: the CredsWatcher (bpf/creds_watcher.hpp) starts first, then /proc
// is read whole and set_event_pid written (options/event-fork on when the
// rules are closed under fork, so that the kernel lists a listed thread's
// children itself). Then a thread of its own reads the watcher's records:
//   fork   closed under fork: the child is listed if its parent is (the
//          kernel did it; written again in case a rewrite raced it); else
//          the child is read from /proc and listed if it matches
//   exec, a set*id/unshare/setns exit
//          the thread is read from /proc: listed if it matches now, taken
//          out of the list if it no longer does
//   exit   the thread leaves the list (the kernel does that itself with
//          event-fork; without, it is taken out as below, so that the
//          id's next owner is not traced unless it matches)
// A thread that joins is appended to set_event_pid (one write); one that
// leaves is appended to set_event_notrace_pid (the kernel ignores a thread
// in both), since set_event_pid has no removal and rewriting it clears it
// first (every process traced meanwhile); one that joins again is taken
// out of the notrace list (a rewrite of that list, which clears it first:
// the threads in it traced meanwhile, the rare case).
// Records the ring buffer lost make the tracker read /proc whole again.
// The window in which a thread that starts matching is not yet listed
// (its events not recorded) is from its change to the write: measured per
// thread that joins (counts().window_max_ns, write_max_ns). An empty selection is
// written as the one id kNoTask, since an empty set_event_pid means every
// process.
#pragma once

#include "kernel/bpf/creds_watcher.hpp"
#include "kernel/process_filter.hpp"
#include "kernel/tracefs.hpp"

#include "base/fd.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace tracery::kernel {

// PID_MAX_LIMIT - 1: the largest id set_event_pid takes, which a task only
// has on a machine whose kernel.pid_max is raised to the limit.
inline constexpr pid_t kNoTask = 4194303;

struct TrackedProcessesCounts {
	uint64_t listed = 0;  // threads listed now
	uint64_t joined = 0;  // threads listed after a record (not at a scan)
	uint64_t left = 0;    // threads taken out after a record
	uint64_t scans = 0;   // /proc read whole (start, rules changed, records lost)
	uint64_t records = 0; // watcher records read
	uint64_t lost = 0;    // records the ring buffer could not take
	// Of the threads that joined: the longest (and the last) time from their
	// change to the end of the write that lists them (the window), and the
	// longest to its start. The kernel replaces its list as the write
	// begins, and a thread switched in after that is recorded; one running
	// on since before keeps its old state until the write's end, after an
	// RCU grace period (write_max_ns, the longest write).
	uint64_t window_max_ns = 0;
	uint64_t window_last_ns = 0;
	uint64_t to_write_max_ns = 0;
	uint64_t write_max_ns = 0;
};

// Rewrites the instance's set_event_notrace_pid without `ids`.
void drop_notrace_ids(const Instance &instance, const std::set<pid_t> &ids);

class TrackedProcesses {
public:
	// Watches, scans and writes the instance's list, then keeps it. Throws
	// std::runtime_error (BPF unavailable), TracefsError. `instance` must
	// outlive it.
	TrackedProcesses(const Instance &instance, ProcessRules rules, std::string tracefs_root,
	                 std::string proc_root = "/proc");
	~TrackedProcesses(); // stops the thread; the list stays as written
	TrackedProcesses(const TrackedProcesses &) = delete;
	TrackedProcesses &operator=(const TrackedProcesses &) = delete;

	// New rules: /proc read whole again, the list rewritten. Throws
	// TracefsError.
	void change_rules(const ProcessRules &rules);
	TrackedProcessesCounts counts() const;
	// The tracker thread's id (excluded from the trace by the session).
	pid_t thread_id() const noexcept { return thread_tid_.load(); }
	// The ids it put in set_event_notrace_pid, its thread's with them: the
	// session takes them out when the tracker goes while tracing.
	std::set<pid_t> notrace_ids() const;

private:
	static void *run(void *self);
	void loop();
	// Threads to append, each with when it started matching (0: listed
	// by the kernel already, no window to measure).
	using Joining = std::map<pid_t, uint64_t>;
	void handle(const CredsChange &c, Joining &add, std::set<pid_t> &remove);
	void rescan(); // with mutex_ held
	void write_changes(const Joining &add, const std::set<pid_t> &remove);
	bool matches_now(pid_t tid) const;

	const Instance &instance_;
	std::string proc_root_;
	CredsWatcher watcher_;
	mutable std::mutex mutex_; // rules_, listed_, counts_
	ProcessRules rules_;
	std::set<pid_t> listed_;   // the threads the kernel's list holds, as far as known
	std::set<pid_t> notraced_; // the threads taken out, in set_event_notrace_pid
	TrackedProcessesCounts counts_;
	uint64_t lost_seen_ = 0;
	base::Fd stop_; // eventfd: the thread ends
	pthread_t thread_{};
	std::atomic<pid_t> thread_tid_{0};
};

} // namespace tracery::kernel
