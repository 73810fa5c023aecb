// Tests of the probe arrays' read sections (rcu.cpp) through tracery_fire: a
// grace period waits for sections in progress and for nothing else; probes
// attached and detached while threads emit, also from signal handlers that
// interrupt sections, never run after detach returned; threads that come and
// go (their records reused), that begin in a signal handler, that exit inside a
// section, and a child forked while another thread is inside a probe.
#include <tracery/internal/probe.h>
#include <tracery/tracepoint.h>

#include "ust/rcu.hpp"
#include "ust/registry.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

TRACERY_EVENT(rcutest, ev, TRACERY_U64(a), TRACERY_U32(b))
TRACERY_EVENT(rcutest, held, TRACERY_U64(a))

namespace {

constexpr uint64_t kAlive = 0x600dcafe;

// The private data of a probe: freed right after detach returns, poisoned
// first, so that a probe running late reads the poison (or the sanitizers see
// the access to freed memory).
struct Sink {
	std::atomic<uint64_t> magic{kAlive};
	std::atomic<uint64_t> calls{0};
};

std::atomic<uint64_t> late_calls{0};

// Stays a while in its section, looking at its data all along, so that data
// freed too early is seen here, not only by a call that starts late.
void checking_probe(void *priv, const tracery_event_desc *, const tracery_arg *)
{
	auto *s = static_cast<Sink *>(priv);
	for (int i = 0; i < 200; i++)
		if (s->magic.load(std::memory_order_relaxed) != kAlive) {
			late_calls.fetch_add(1, std::memory_order_relaxed);
			break;
		}
	s->calls.fetch_add(1, std::memory_order_relaxed);
}

std::atomic<uint64_t> handler_events{0};

void emitting_handler(int)
{
	TRACERY_EMIT(rcutest, ev, 7, 1);
	handler_events.fetch_add(1, std::memory_order_relaxed);
}

struct HandlerInstalled {
	struct sigaction old {};
	HandlerInstalled()
	{
		struct sigaction sa {};
		sa.sa_handler = emitting_handler;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, &old);
	}
	~HandlerInstalled() { sigaction(SIGUSR1, &old, nullptr); }
};

// A probe that keeps its thread inside the section until `release` is set.
struct Gate {
	std::atomic<bool> inside{false};
	std::atomic<bool> release{false};
};

void holding_probe(void *priv, const tracery_event_desc *, const tracery_arg *)
{
	auto *g = static_cast<Gate *>(priv);
	g->inside = true;
	while (!g->release.load())
		std::this_thread::yield();
}

// A thread kept inside holding_probe's section from construction to release()
// (or destruction).
struct ThreadInSection {
	Gate g;
	std::thread inside;
	ThreadInSection()
	{
		EXPECT_EQ(tracery_probe_attach(&tracery_event__rcutest__held, holding_probe, &g), 0);
		inside = std::thread([] { TRACERY_EMIT(rcutest, held, 1); });
		while (!g.inside.load())
			std::this_thread::yield();
	}
	void release()
	{
		if (!inside.joinable())
			return;
		g.release = true;
		inside.join();
		EXPECT_EQ(tracery_probe_detach(&tracery_event__rcutest__held, holding_probe, &g), 0);
	}
	~ThreadInSection() { release(); }
};

void exiting_probe(void *priv, const tracery_event_desc *, const tracery_arg *)
{
	static_cast<Gate *>(priv)->inside = true;
	pthread_exit(nullptr); // leaves the section open for good
}

TEST(ReadSections, GracePeriodWaitsForASectionInProgressOnly)
{
	ThreadInSection held;
	std::atomic<bool> done{false};
	std::thread writer([&] {
		tracery_probe_synchronize();
		done = true;
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	EXPECT_FALSE(done.load()) << "the grace period ended while a section was open";
	held.release();
	writer.join();
	EXPECT_TRUE(done.load());
	tracery_probe_synchronize(); // nothing open: returns at once
}

// Two emitting threads, interrupted by SIGUSR1 whose handler emits too (in a
// section nested in the interrupted one, or a section of its own); short-lived
// threads emitting their first events, some of them in a handler; and one or
// two probes attached and detached all the while.
TEST(ReadSections, ProbesNeverRunAfterDetachWhileThreadsAndHandlersEmit)
{
	HandlerInstalled handler;
	std::atomic<bool> stop{false};
	std::vector<std::thread> threads;
	std::vector<pthread_t> emitters;
	std::atomic<int> started{0};
	for (int t = 0; t < 2; t++)
		threads.emplace_back([&] {
			started++;
			for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); i++)
				TRACERY_EMIT(rcutest, ev, i, 2);
		});
	for (auto &t : threads)
		emitters.push_back(t.native_handle());
	while (started.load() < 2)
		std::this_thread::yield();
	threads.emplace_back([&] { // signals the emitters
		while (!stop.load(std::memory_order_relaxed)) {
			for (pthread_t e : emitters)
				pthread_kill(e, SIGUSR1);
			std::this_thread::yield();
		}
	});
	threads.emplace_back([&] { // threads that live for a few events; every other one begins in its handler
		for (int n = 0; !stop.load(std::memory_order_relaxed); n++) {
			std::thread brief([n] {
				if (n % 2)
					raise(SIGUSR1);
				for (int i = 0; i < 10; i++)
					TRACERY_EMIT(rcutest, ev, uint64_t(i), 3);
			});
			brief.join();
		}
	});
	uint64_t recorded = 0;
	for (int round = 0; round < 300; round++) {
		auto *one = new Sink, *two = new Sink;
		ASSERT_EQ(tracery_probe_attach(&tracery_event__rcutest__ev, checking_probe, one), 0);
		if (round % 3 == 0) {
			ASSERT_EQ(tracery_probe_attach(&tracery_event__rcutest__ev, checking_probe, two), 0);
		}
		for (int i = 0; i < 10000 && one->calls.load() == 0; i++) // threads inside the probe at detach
			std::this_thread::yield();
		if (round % 3 == 0) {
			ASSERT_EQ(tracery_probe_detach(&tracery_event__rcutest__ev, checking_probe, two), 0);
			two->magic = 0;
		}
		ASSERT_EQ(tracery_probe_detach(&tracery_event__rcutest__ev, checking_probe, one), 0);
		one->magic = 0;
		recorded += one->calls.load() + two->calls.load();
		delete one;
		delete two;
	}
	stop = true;
	for (auto &t : threads)
		t.join();
	EXPECT_EQ(late_calls.load(), 0u);
	EXPECT_GT(recorded, 0u);
	EXPECT_GT(handler_events.load(), 0u);
}

TEST(ReadSections, AThreadThatExitedInsideASectionDoesNotHoldGracePeriods)
{
	Gate g;
	ASSERT_EQ(tracery_probe_attach(&tracery_event__rcutest__held, exiting_probe, &g), 0);
	std::thread gone([] { TRACERY_EMIT(rcutest, held, 1); });
	gone.join();
	EXPECT_TRUE(g.inside.load());
	ASSERT_EQ(tracery_probe_detach(&tracery_event__rcutest__held, exiting_probe, &g), 0); // returns
}

// Threads that come and go one after another reuse the records of those that
// exited: the pool grows by a chunk (255 records) at most, not by a record
// per thread ever run.
TEST(ReadSections, RecordsOfExitedThreadsAreReused)
{
	Sink s;
	ASSERT_EQ(tracery_probe_attach(&tracery_event__rcutest__ev, checking_probe, &s), 0);
	const uint32_t before = tracery::ust::rcu::record_count_for_testing();
	for (int n = 0; n < 2000; n++)
		std::thread([] { TRACERY_EMIT(rcutest, ev, 1, 1); }).join();
	ASSERT_EQ(tracery_probe_detach(&tracery_event__rcutest__ev, checking_probe, &s), 0);
	EXPECT_EQ(s.calls.load(), 2000u);
	EXPECT_LE(tracery::ust::rcu::record_count_for_testing() - before, 255u) << "more than one chunk more";
}

// The fork handlers (lib/library.cpp) as a traced program runs them: the
// child of a process one of whose threads is inside a probe does not wait for
// that thread, which it does not have.
TEST(ReadSections, AChildDoesNotWaitForTheSectionsOfThreadsItDoesNotHave)
{
	ThreadInSection held;
	tracery::ust::lock_for_fork();
	const pid_t child = fork();
	if (child == 0) {
		tracery::ust::unlock_after_fork();
		tracery::ust::after_fork_in_child();
		Sink s;
		if (tracery_probe_attach(&tracery_event__rcutest__ev, checking_probe, &s) != 0)
			_exit(1);
		TRACERY_EMIT(rcutest, ev, 1, 1);
		const bool detached = tracery_probe_detach(&tracery_event__rcutest__ev, checking_probe, &s) == 0;
		_exit(detached && s.calls.load() == 1 ? 0 : 1);
	}
	tracery::ust::unlock_after_fork();
	ASSERT_GT(child, 0);
	int status = 0;
	pid_t done = 0;
	for (int i = 0; i < 1000 && (done = waitpid(child, &status, WNOHANG)) == 0; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	if (done == 0)
		kill(child, SIGKILL);
	held.release();
	ASSERT_EQ(done, child) << "the child waited for a thread it does not have";
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

} // namespace
