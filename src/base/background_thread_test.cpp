// Unit test of start_background_thread (background_thread.hpp).
#include "base/background_thread.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace tracery::base {
namespace {

void *record_mask(void *out)
{
	pthread_sigmask(SIG_SETMASK, nullptr, static_cast<sigset_t *>(out));
	return nullptr;
}

TEST(BackgroundThread, BlocksEverySignalAndLeavesTheCallersMask)
{
	sigset_t before, after, seen;
	sigemptyset(&seen);
	pthread_sigmask(SIG_SETMASK, nullptr, &before);
	ASSERT_EQ(sigismember(&before, SIGALRM), 0) << "the test expects SIGALRM unblocked in the caller";
	pthread_t t;
	ASSERT_EQ(start_background_thread(t, &record_mask, &seen), 0);
	pthread_join(t, nullptr);
	for (int sig : {SIGALRM, SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGRTMIN})
		EXPECT_EQ(sigismember(&seen, sig), 1) << "signal " << sig << " reaches the runtime's thread";
	pthread_sigmask(SIG_SETMASK, nullptr, &after);
	for (int sig = 1; sig < SIGRTMAX; sig++)
		EXPECT_EQ(sigismember(&after, sig), sigismember(&before, sig)) << "caller's mask changed for " << sig;
}

} // namespace
} // namespace tracery::base
