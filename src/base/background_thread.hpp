// The runtime's own threads (consumer, daemon client) live inside the traced
// program: none of them may run the program's signal handlers, or a handler
// would fire on a thread the program never made (and that thread's sleeps
// would end early). start_background_thread creates a thread with every
// signal blocked from its first instruction on; signal_free_thread does the
// same for a std::thread of a program whose main loop takes its signals.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace tracery::base {

// pthread_create with all signals blocked in the new thread; the caller's
// mask is unchanged on return. Returns pthread_create's result.
int start_background_thread(pthread_t &thread, void *(*body)(void *), void *arg);

// Whether the calling thread was started by start_background_thread: one the
// program never made, which its events must never hold up (a blocking
// channel's writer does not wait there). Async-signal-safe.
bool in_background_thread() noexcept;

// Every signal blocked in the calling thread for its lifetime, the mask
// restored at its end: a thread created meanwhile inherits the full mask.
class AllSignalsBlocked {
public:
	AllSignalsBlocked();
	~AllSignalsBlocked();
	AllSignalsBlocked(const AllSignalsBlocked &) = delete;
	AllSignalsBlocked &operator=(const AllSignalsBlocked &) = delete;

private:
	sigset_t caller_;
};

// A std::thread running body with every signal blocked from its start (the
// program's other threads take them); the caller's mask is unchanged.
template <class Body>
std::thread signal_free_thread(Body &&body)
{
	const AllSignalsBlocked blocked;
	return std::thread(std::forward<Body>(body));
}

} // namespace tracery::base
