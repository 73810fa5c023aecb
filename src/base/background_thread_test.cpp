// Unit test of start_background_thread and signal_free_thread
// (background_thread.hpp).
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

// Runs start(&seen) (which fills seen from a new thread, joined): every
// signal blocked in that thread, the caller's mask as it was.
template <class Start>
void expect_signal_free(Start start)
{
	sigset_t before, after, seen;
	sigemptyset(&seen);
	pthread_sigmask(SIG_SETMASK, nullptr, &before);
	ASSERT_EQ(sigismember(&before, SIGALRM), 0) << "the test expects SIGALRM unblocked in the caller";
	start(&seen);
	for (int sig : {SIGALRM, SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGRTMIN})
		EXPECT_EQ(sigismember(&seen, sig), 1) << "signal " << sig << " reaches the new thread";
	pthread_sigmask(SIG_SETMASK, nullptr, &after);
	for (int sig = 1; sig < SIGRTMAX; sig++)
		EXPECT_EQ(sigismember(&after, sig), sigismember(&before, sig)) << "caller's mask changed for " << sig;
}

TEST(BackgroundThread, BlocksEverySignalAndLeavesTheCallersMask)
{
	expect_signal_free([](sigset_t *seen) {
		pthread_t t;
		ASSERT_EQ(start_background_thread(t, &record_mask, seen), 0);
		pthread_join(t, nullptr);
	});
}

TEST(SignalFreeThread, BlocksEverySignalAndLeavesTheCallersMask)
{
	expect_signal_free([](sigset_t *seen) { signal_free_thread([seen] { record_mask(seen); }).join(); });
}

} // namespace
} // namespace tracery::base
