// When an emitter may wait for space: see blocking.hpp.
#include "ust/blocking.hpp"

#include "base/background_thread.hpp"
#include "ust/rcu.hpp"

#include <signal.h>

namespace tracery::ust {

namespace {

// A signal that has a handler is blocked in the calling thread.
bool handled_signal_blocked() noexcept
{
	sigset_t mask;
	if (pthread_sigmask(SIG_BLOCK, nullptr, &mask) != 0)
		return true; // cannot tell: do not wait
	for (int sig = 1; sig < NSIG; ++sig) {
		if (sigismember(&mask, sig) != 1)
			continue;
		struct sigaction action {};
		if (sigaction(sig, nullptr, &action) != 0)
			continue; // a signal the C library keeps for itself
		if ((action.sa_flags & SA_SIGINFO) != 0 ||
		    (action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN))
			return true;
	}
	return false;
}

} // namespace

bool this_thread_may_wait() noexcept
{
	if (base::in_background_thread())
		return false;
	const rcu::Reader *reader = rcu::tls_reader;
	if (reader == nullptr || (reader->ctr.load(std::memory_order_relaxed) & rcu::kNestMask) != 1)
		return false;
	return !handled_signal_blocked();
}

} // namespace tracery::ust
