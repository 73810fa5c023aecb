// Threads of the runtime with every signal blocked. See background_thread.hpp.
#include "base/background_thread.hpp"

#include <csignal>

namespace tracery::base {

namespace {

// Initial-exec, as the runtime's other thread variables: read without a call, also from a signal handler.
__thread bool t_background __attribute__((tls_model("initial-exec"))) = false;

struct Start {
	void *(*body)(void *);
	void *arg;
};

void *run_background(void *p)
{
	const Start start = *static_cast<Start *>(p);
	delete static_cast<Start *>(p);
	t_background = true;
	return start.body(start.arg);
}

} // namespace

bool in_background_thread() noexcept { return t_background; }

AllSignalsBlocked::AllSignalsBlocked()
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &caller_);
}

AllSignalsBlocked::~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &caller_, nullptr); }

int start_background_thread(pthread_t &thread, void *(*body)(void *), void *arg)
{
	// A new thread inherits its creator's mask: block everything around the
	// creation so there is no window in which the new thread takes a signal.
	auto *start = new Start{body, arg};
	int rc;
	{
		const AllSignalsBlocked blocked;
		rc = pthread_create(&thread, nullptr, run_background, start);
	}
	if (rc != 0)
		delete start;
	return rc;
}

} // namespace tracery::base
