// Where a tracing session is in its life, and what keeps the daemon's other
// commands off it meanwhile. The daemon holds one lock over all sessions
// (daemon.hpp) and releases it for slow work: these guards say what is under
// way on a session while the lock is released.
//
//   created --start--> started --stop--> stopping --> stopped --start--> started ...
//
// - busy: a command works on the session without the lock (waits for
//   programs, reads /proc, writes a snapshot): other commands keep off it.
// - finishing: buffers taken out of the session are being finished without
//   the lock: stop and destroy wait until none is.
// - starting the kernel: a start writes the kernel trace's files before the
//   session is `started`.
#pragma once

#include <cstddef>

namespace tracery::daemon {

enum class SessionState { created, started, stopping, stopped };
const char *state_name(SessionState s);

class SessionLifecycle {
public:
	SessionState state() const { return state_; }
	bool started() const { return state_ == SessionState::started; }
	bool stopping() const { return state_ == SessionState::stopping; }
	bool created() const { return state_ == SessionState::created; }
	void mark_started() { state_ = SessionState::started; }
	void mark_stopping() { state_ = SessionState::stopping; }
	void mark_stopped() { state_ = SessionState::stopped; }

	// Whether another command must keep off the session now: it is being
	// stopped, or a command works on it without the lock.
	bool in_use() const { return stopping() || busy_ > 0; }
	void begin_busy() { busy_++; }
	void end_busy() { busy_--; }

	// Buffers being finished without the lock (TraceSession::Retired).
	bool finishing() const { return finishing_ > 0; }
	void begin_finishing(size_t buffers) { finishing_ += buffers; }
	void end_finishing() { finishing_--; }

	bool starting_kernel() const { return starting_kernel_; }
	void begin_kernel_start() { starting_kernel_ = true; }
	void end_kernel_start() { starting_kernel_ = false; }

private:
	SessionState state_ = SessionState::created;
	int busy_ = 0;
	size_t finishing_ = 0;
	bool starting_kernel_ = false;
};

} // namespace tracery::daemon
