// Unit tests of rseq.hpp's time-bounded store (the ring buffer's tests cover cas16_on_cpu).
#include "rseq/rseq.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <cstdint>

// Inside namespace tracery, `rseq` names tracery::rseq rather than glibc's struct rseq.
namespace tracery {
namespace {

#if TRACERY_HAVE_RSEQ
// Repeats until the sequence ran without being interrupted (rare here: no signals).
int store_retrying(uint32_t *p, uint32_t v, uint64_t deadline)
{
	int rc = -1;
	for (int i = 0; i < 1000 && rc < 0; ++i)
		rc = rseq::store32_if_tsc_below(p, v, deadline);
	return rc;
}

std::atomic<long> g_signals{0};
void count_signal(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }
#endif

} // namespace

TEST(Rseq, StoresWhileTheTscIsBelowTheDeadline)
{
#if TRACERY_HAVE_RSEQ
	if (!rseq::registered())
		GTEST_SKIP() << "this thread has no rseq area (glibc.pthread.rseq=0?)";
	uint32_t x = 5;
	EXPECT_EQ(store_retrying(&x, 7, ~uint64_t(0)), 1);
	EXPECT_EQ(x, 7u);
#else
	GTEST_SKIP() << "no rseq in this build (not x86-64, or ThreadSanitizer)";
#endif
}

TEST(Rseq, StoresNothingOnceTheDeadlineHasPassed)
{
#if TRACERY_HAVE_RSEQ
	if (!rseq::registered())
		GTEST_SKIP() << "this thread has no rseq area";
	uint32_t x = 5;
	EXPECT_EQ(store_retrying(&x, 7, __builtin_ia32_rdtsc()), 0);
	EXPECT_EQ(x, 5u);
#else
	GTEST_SKIP() << "no rseq in this build";
#endif
}

// A signal delivered between the read of the TSC and the store restarts the sequence at its
// abort handler, as a preemption or a migration would: the call then reports -1 and has stored
// nothing. Signals every 50 us against back-to-back calls must land inside some of them.
TEST(Rseq, AnInterruptedStoreStoresNothing)
{
#if TRACERY_HAVE_RSEQ
	if (!rseq::registered())
		GTEST_SKIP() << "this thread has no rseq area";
	struct sigaction sa {};
	sa.sa_handler = count_signal;
	sa.sa_flags = SA_RESTART;
	struct sigaction old {};
	ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
	itimerval every{{0, 50}, {0, 50}};
	ASSERT_EQ(setitimer(ITIMER_REAL, &every, nullptr), 0);

	uint32_t x = 0;
	uint32_t last_stored = 0;
	long interrupted = 0, wrong = 0;
	const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
	for (uint32_t v = 1; std::chrono::steady_clock::now() < end || interrupted == 0; ++v) {
		const int rc = rseq::store32_if_tsc_below(&x, v, ~uint64_t(0));
		if (rc == 1) {
			wrong += x != v;
			last_stored = v;
		} else {
			++interrupted;
			wrong += x != last_stored;
		}
		if (std::chrono::steady_clock::now() > end + std::chrono::seconds(10))
			break;
	}
	itimerval off{};
	setitimer(ITIMER_REAL, &off, nullptr);
	sigaction(SIGALRM, &old, nullptr);
	EXPECT_GT(g_signals.load(), 0);
	EXPECT_GT(interrupted, 0) << "no signal landed inside a sequence in 10 s";
	EXPECT_EQ(wrong, 0);
#else
	GTEST_SKIP() << "no rseq in this build";
#endif
}

} // namespace tracery
