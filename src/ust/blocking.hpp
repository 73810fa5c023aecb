// ust/blocking.hpp — when an emitter may wait for space in a blocking channel
// (enable-channel --blocking-timeout): the channel's timeout, and the threads
// and moments in which waiting would hold up what frees the space or run
// where the program does not expect a sleep.
#pragma once

#include <atomic>
#include <cstdint>

namespace tracery::ust {

// Whether the calling thread may sleep waiting for space now. Not in:
//  * libtracery's own threads (base::in_background_thread): the daemon link
//    and the daemonless consumer, which the consumer needs, and the state dump;
//  * a nested tracing section (rcu.hpp): a signal handler or a probe that
//    interrupted an emitter, which may hold a reservation in the very buffer
//    it would wait for;
//  * a signal handler as its signal mask shows it: a signal that has a handler
//    is blocked in the thread (while a handler runs, its signal is, unless
//    installed with SA_NODEFER and an empty sa_mask). A program that keeps a
//    handled signal blocked in a thread (to leave it to another) gets no waits
//    in that thread: its events are dropped and counted, as without blocking.
// Async-signal-safe; a few system calls, so only asked before a first wait.
bool this_thread_may_wait() noexcept;

// A channel's blocking timeout, as the program applies it.
class BlockingPolicy {
public:
	// timeout_ns: 0 never wait (the default), < 0 wait without limit.
	void set_timeout_ns(int64_t timeout_ns) noexcept { timeout_ns_.store(timeout_ns, std::memory_order_relaxed); }
	int64_t timeout_ns() const noexcept { return timeout_ns_.load(std::memory_order_relaxed); }
	// While stopped, no emitter waits and those waiting give up at their next
	// turn (within a millisecond): a session that stops never waits for them
	// longer than that.
	void set_stopped(bool stopped) noexcept { stopped_.store(stopped, std::memory_order_release); }
	// ringbuf::Channel::write_waiting's question: may a record that has slept
	// waited_ns so far sleep again?
	bool may_wait(uint64_t waited_ns) const noexcept
	{
		const int64_t timeout = timeout_ns();
		if (timeout == 0 || stopped_.load(std::memory_order_acquire))
			return false;
		if (timeout > 0 && waited_ns >= static_cast<uint64_t>(timeout))
			return false;
		return waited_ns != 0 || this_thread_may_wait(); // the thread is asked once, before its first sleep
	}

private:
	std::atomic<int64_t> timeout_ns_{0};
	std::atomic<bool> stopped_{false};
};

} // namespace tracery::ust
