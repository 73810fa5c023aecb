// analysis/analyze/locks.hpp — `tracery analyze locks`: mutexes, rwlocks and
// condition variables of programs traced with a pthread preload helper
// (lttng_ust_pthread:*, LTTng's or Tracery's), per lock and per call site:
// acquisitions, contended ones, wait and hold times, the threads involved,
// the longest waits. A core fed plain arguments (the unit tests drive it)
// and the function that feeds it a trace.
//
// The rules (the README's "Locks and calls" says them for users):
// - a wait runs from a thread's request (lock_req, rdlock_req, wrlock_req)
//   to its acquisition (the _acq with status 0) of the same lock; a trylock
//   that succeeds is an acquisition that waited 0, one that fails counts as
//   a trylock failure; an _acq with a nonzero status, as a failed request;
// - an acquisition is contended when, at its request, another thread held
//   the lock (for a read lock: a writer), or when it waited at least the
//   threshold (1 µs by default);
// - a hold runs from the acquisition to the unlock of the thread that holds
//   it (a mutex unlocked by another thread: its only holder); a thread that
//   locks a lock it holds (a recursive mutex, read locks) deepens its hold,
//   which ends at its last unlock; a condition wait releases its mutex from
//   its begin and holds it again from its end (not a new acquisition);
// - what the trace cut off is counted, never guessed: an acquisition whose
//   request came before the trace's first event has no wait; an unlock of a
//   lock not known held, a lock still held or waited for at the end, no
//   hold; events the trace lost are reported;
// - narrowed (--begin/--end, --cpu, --pid/--tid/--procname), every event
//   still moves the state (who holds, who waits) and what ends at an event
//   within counts: an acquisition (its wait) or trylock at its event, a
//   hold at its unlock, a condition wait at its end, a signal at its event.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/model/address_names.hpp"
#include "analysis/model/preload_events.hpp"
#include "analysis/output/report.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/read/narrowing.hpp"

namespace tracery::analysis {

struct LockOptions {
	int64_t contended_ns = 1000; // a wait at least this long is contended
	size_t longest = 10;         // how many of the longest waits to list
};

class LockStats {
public:
	enum class Kind : uint8_t { mutex, rwlock };
	// Where it happens: the process, the thread, the caller's address (0: unknown).
	struct Who {
		int64_t pid = -1, tid = -1;
		uint64_t ip = 0;
	};

	explicit LockStats(LockOptions options = {}) : options_(options) {}

	// write: a mutex, or a rwlock's write lock.
	void on_request(int64_t ns, Who who, Kind kind, uint64_t lock, bool write);
	void on_acquire(int64_t ns, Who who, Kind kind, uint64_t lock, bool write, int64_t status);
	void on_trylock(int64_t ns, Who who, Kind kind, uint64_t lock, bool write, int64_t status);
	void on_unlock(int64_t ns, Who who, Kind kind, uint64_t lock);
	void on_cond_wait_begin(int64_t ns, Who who, uint64_t cond, uint64_t mutex);
	void on_cond_wait_end(int64_t ns, Who who, uint64_t cond, uint64_t mutex, int64_t status);
	void on_cond_signal(Who who, uint64_t cond, bool broadcast);
	// Events the trace says it lost.
	void on_lost(uint64_t events) { lost_ += events; }
	// Whether what the events fed next end counts (narrowed: they are
	// within); they move the state either way.
	void counting(bool counted)
	{
		counted_ = counted;
		narrowed_ |= !counted;
	}

	Report report(int64_t begin, int64_t end, const AddressNamer &name);

private:
	using LockKey = std::pair<int64_t, uint64_t>;  // process, lock
	using ThreadKey = std::pair<int64_t, int64_t>; // process, thread
	struct SiteKey {                               // process, call site, lock
		int64_t pid;
		uint64_t ip, lock;
		auto operator<=>(const SiteKey &) const = default;
	};
	struct Figures {
		uint64_t acquisitions = 0, contended = 0, try_failures = 0, failed = 0, recursive = 0;
		Distribution wait, hold;
	};
	struct Lock {
		Kind kind = Kind::mutex;
		Figures f;
		std::set<int64_t> threads; // at most kThreadsKept
		uint64_t more_threads = 0;
	};
	struct Holder {
		int64_t tid;
		bool write;
		uint32_t depth;
		int64_t since;
		uint64_t ip;
	};
	struct Request {
		uint64_t lock;
		Kind kind;
		bool write;
		int64_t ns;
		uint64_t ip;
		bool contended; // held by another thread when requested
		int64_t holder; // that thread, -1 for none
	};
	struct Wait {
		int64_t ns, wait, pid, tid, holder;
		uint64_t lock, ip;
	};
	struct CondWait {
		uint64_t cond, mutex;
		int64_t ns;
	};
	struct Cond {
		uint64_t waits = 0, timeouts = 0, signals = 0, broadcasts = 0;
		Distribution wait;
	};
	static constexpr size_t kThreadsKept = 64;

	Lock &lock_of(int64_t pid, uint64_t lock, Kind kind);
	// The thread that holds the lock and keeps others out of a request (write: any other; read: a writer), -1 for none.
	int64_t blocker(const LockKey &key, int64_t tid, bool write) const;
	// An acquisition by who: its hold begins (counted: false for a condition wait's end).
	void hold(int64_t ns, const Who &who, Kind kind, uint64_t lock, bool write, bool counted);
	void release(int64_t ns, const Who &who, uint64_t lock);
	void keep_longest(const Wait &w);

	LockOptions options_;
	bool counted_ = true, narrowed_ = false; // narrowed_: some event was not counted
	std::map<LockKey, Lock> locks_;
	std::map<SiteKey, Figures> sites_;
	std::map<LockKey, std::vector<Holder>> holders_;
	std::map<ThreadKey, Request> waiting_;
	std::map<ThreadKey, CondWait> cond_waiting_;
	std::map<LockKey, Cond> conds_;
	std::vector<Wait> longest_; // a min-heap on wait
	uint64_t lost_ = 0, no_request_ = 0, unknown_unlocks_ = 0, abandoned_requests_ = 0;
};

// Over the events of a walk, the call sites named by names (which observes
// every event). Throws std::runtime_error when the trace has no
// lttng_ust_pthread event (saying how to record them), ReadError when damaged.
Report analyze_locks(EventWalk &walk, const LockOptions &options, AddressNames &names, const Narrowing &narrowing = {});

} // namespace tracery::analysis
