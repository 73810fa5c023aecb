// Threads of the runtime with every signal blocked. See background_thread.hpp.
#include "base/background_thread.hpp"

#include <csignal>

namespace tracery::base {

int start_background_thread(pthread_t &thread, void *(*body)(void *), void *arg)
{
	// A new thread inherits its creator's mask: block everything around the
	// creation so there is no window in which the new thread takes a signal.
	sigset_t all, caller;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &caller);
	const int rc = pthread_create(&thread, nullptr, body, arg);
	pthread_sigmask(SIG_SETMASK, &caller, nullptr);
	return rc;
}

} // namespace tracery::base
