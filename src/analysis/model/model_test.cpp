// analysis/model/model_test.cpp — the kernel model fed plain arguments: the
// running task of each CPU, system calls paired per thread (the abandoned
// call handed back, one exit per entry) and by the running task across a
// migration, user spans nested per key, the task table's names and the
// kernel's name of a task after exec, what a blocked thread waits in and who
// woke a thread (the thread states' intervals: sql/derived_test.cpp).
#include "analysis/model/kernel_events.hpp"
#include "analysis/model/scheduling.hpp"
#include "analysis/model/spans.hpp"
#include "analysis/model/syscalls.hpp"
#include "analysis/model/tasks.hpp"
#include "analysis/model/thread_states.hpp"

#include <gtest/gtest.h>

using namespace tracery::analysis;

namespace {

TEST(ThreadStates, WhatABlockedThreadWaitsIn)
{
	EXPECT_EQ(blocked_of(1), Blocked::sleeping);            // S
	EXPECT_EQ(blocked_of(2), Blocked::uninterruptible);     // D
	EXPECT_EQ(blocked_of(0x102), Blocked::uninterruptible); // D with a bit above the report's
	EXPECT_EQ(blocked_of(4), Blocked::stopped);             // T
	EXPECT_EQ(blocked_of(8), Blocked::stopped);             // t (traced)
	EXPECT_EQ(blocked_of(0x10), Blocked::dead);             // X
	EXPECT_EQ(blocked_of(0x20), Blocked::dead);             // Z
	EXPECT_EQ(blocked_of(0x80), Blocked::idle);             // I
	EXPECT_EQ(blocked_of(0x40), Blocked::sleeping);         // P (parked)
}

TEST(ThreadStates, ALostSwitchOutEndsTheRunningInterval)
{
	std::vector<ThreadStates::Interval> got;
	ThreadStates s([&](const ThreadStates::Interval &i) { got.push_back(i); });
	s.on_switch(100, 0, 0, 0, 5); // 5 runs on CPU 0
	s.on_lost_switch_out(150, 5); // CPU 0 switches from another thread at 150
	s.on_lost_switch_out(160, 5); // no state now: nothing
	s.on_switch(150, 0, 6, 1, 0); // 6 blocked
	s.on_wakeup(200, 5);          // 5 runnable from 200
	s.on_lost_switch_out(210, 5); // not running: nothing
	s.finish(300);
	ASSERT_EQ(got.size(), 3u);
	EXPECT_EQ(got[0].tid, 5);
	EXPECT_EQ(got[0].state, ThreadStates::running);
	EXPECT_EQ(got[0].dur, 50);
	EXPECT_EQ(got[1].tid, 5); // runnable 200..300: nothing between 150 and 200
	EXPECT_EQ(got[1].ts, 200);
	EXPECT_EQ(got[1].state, ThreadStates::runnable);
	EXPECT_EQ(got[2].tid, 6);
	EXPECT_EQ(got[2].state, ThreadStates::blocked);
}

TEST(ThreadStates, TheWakerAndTheSwitchOutsState)
{
	std::vector<ThreadStates::Interval> got;
	ThreadStates s([&](const ThreadStates::Interval &i) { got.push_back(i); });
	s.on_switch(100, 0, 0, 0, 5); // 5 runs
	s.on_switch(150, 0, 5, 2, 6); // 5 blocked (D), 6 runs
	s.on_wakeup(170, 5, 6);       // 6 wakes 5
	s.on_wakeup(180, 7);          // 7, never seen, woken by an interrupt: runnable, no waker
	s.on_switch(200, 0, 6, 1, 5); // 6 blocked (S), 5 runs
	s.finish(300);
	ASSERT_EQ(got.size(), 7u);
	EXPECT_EQ(got[0].tid, 5); // running 100..150
	EXPECT_EQ(got[1].tid, 5); // blocked 150..170, D
	EXPECT_EQ(got[1].state, ThreadStates::blocked);
	EXPECT_EQ(got[1].prev_state, 2);
	EXPECT_EQ(got[1].dur, 20);
	EXPECT_EQ(got[2].tid, 6); // running 150..200
	EXPECT_EQ(got[3].tid, 5); // runnable 170..200, woken by 6
	EXPECT_EQ(got[3].state, ThreadStates::runnable);
	EXPECT_EQ(got[3].waker, 6);
	EXPECT_EQ(got[3].dur, 30);
	EXPECT_EQ(got[4].tid, 5); // the open ones at finish, by tid: 5 running from 200
	EXPECT_EQ(got[4].state, ThreadStates::running);
	EXPECT_EQ(got[4].cpu, 0);
	EXPECT_EQ(got[5].tid, 6); // 6 blocked (S) from 200
	EXPECT_EQ(got[5].prev_state, 1);
	EXPECT_EQ(got[6].tid, 7); // 7 runnable from 180, no waker
	EXPECT_EQ(got[6].state, ThreadStates::runnable);
	EXPECT_EQ(got[6].waker, std::nullopt);
	EXPECT_EQ(got[6].ts, 180);
}

TEST(RunningTasks, TheLastSwitchOfEachCpuNoneForIdle)
{
	RunningTasks r;
	EXPECT_EQ(r.running(0), std::nullopt); // before the first switch
	r.on_switch(0, 11);
	r.on_switch(1, 12);
	EXPECT_EQ(r.running(0), 11);
	EXPECT_EQ(r.running(1), 12);
	r.on_switch(0, 0); // the idle task
	EXPECT_EQ(r.running(0), std::nullopt);
	EXPECT_EQ(r.running(1), 12);
}

TEST(SyscallTracker, PairsPerThreadAndHandsBackTheAbandonedCall)
{
	SyscallTracker t;
	EXPECT_EQ(t.exit(11), nullptr); // an exit without its entry
	EXPECT_EQ(t.enter(11, 100, 0, "read"), nullptr);
	EXPECT_EQ(t.enter(12, 105, 1, "write"), nullptr); // another thread: its own call
	const SyscallTracker::Call *c = t.exit(11);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->tid, 11);
	EXPECT_EQ(c->cpu, 0);
	EXPECT_EQ(c->entry_ns, 100);
	EXPECT_EQ(c->name, "read");
	EXPECT_EQ(t.exit(11), nullptr); // one exit per entry
	c = t.exit(12);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->name, "write");
}

TEST(SyscallTracker, AnEntryWhileOpenReplacesTheCall)
{
	SyscallTracker t;
	EXPECT_EQ(t.enter(7, 10, 2, "execve"), nullptr);
	const SyscallTracker::Call *abandoned = t.enter(7, 20, 3, "brk");
	ASSERT_NE(abandoned, nullptr);
	EXPECT_EQ(abandoned->name, "execve");
	EXPECT_EQ(abandoned->entry_ns, 10);
	EXPECT_EQ(abandoned->cpu, 2);
	const SyscallTracker::Call *c = t.exit(7);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->name, "brk"); // the exit closes the newer call, under its entry's name
	EXPECT_EQ(c->entry_ns, 20);
	EXPECT_EQ(c->cpu, 3);
}

TEST(SyscallPairs, TheEntrysThreadCpuAndNameAcrossAMigration)
{
	SyscallPairs p;
	p.on_entry(5, 0, "read"); // nobody known on CPU 0
	EXPECT_EQ(p.on_exit(0), nullptr);
	p.on_switch(0, 11);
	EXPECT_EQ(p.running(0), 11);
	p.on_entry(10, 0, "futex");
	p.on_switch(0, 0);
	EXPECT_EQ(p.running(0), std::nullopt);
	p.on_switch(1, 11); // 11 migrates with its call open
	const SyscallTracker::Call *c = p.on_exit(1);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->tid, 11);
	EXPECT_EQ(c->cpu, 0);
	EXPECT_EQ(c->entry_ns, 10);
	EXPECT_EQ(c->name, "futex");
	EXPECT_EQ(p.on_exit(1), nullptr); // one exit per entry
}

TEST(SyscallPairs, ATidContextOutweighsAMissingSwitch)
{
	SyscallPairs p;
	p.on_switch(0, 1); // the last switch recorded on CPU 0; 42 runs there unseen
	p.on_entry(10, 0, "write", 42);
	EXPECT_EQ(p.on_exit(0), nullptr); // 1 made no call
	const SyscallTracker::Call *c = p.on_exit(0, 42);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->tid, 42);
	EXPECT_EQ(c->name, "write");
	EXPECT_EQ(p.running(0), 1); // the scheduling model is the switches'
}

TEST(OpenSpans, NestedPerKeyLastInFirstOut)
{
	OpenSpans<std::string, int> o;
	o.begin("a", 1);
	o.begin("a", 2);
	o.begin("b", 3);
	EXPECT_EQ(o.depth("a"), 2u);
	ASSERT_NE(o.innermost("a"), nullptr);
	EXPECT_EQ(*o.innermost("a"), 2);
	EXPECT_EQ(o.end("a"), 2);
	EXPECT_EQ(o.end("c"), std::nullopt);
	EXPECT_EQ(o.innermost("c"), nullptr);
	EXPECT_EQ(o.unfinished(), 2u);
	EXPECT_EQ(o.end("a"), 1);
	EXPECT_EQ(o.end("a"), std::nullopt);
	EXPECT_EQ(o.depth("a"), 0u);
}

TEST(TaskTable, KeepsWhatIsGiven)
{
	TaskTable t;
	t.set(101, 100, "worker");
	t.set(101, std::nullopt, ""); // nothing new: kept
	EXPECT_EQ(t.pid(101), 100);
	EXPECT_EQ(t.comm(101), "worker");
	t.set(101, std::nullopt, "renamed");
	EXPECT_EQ(t.comm(101), "renamed");
	EXPECT_EQ(t.pid(5), std::nullopt); // never seen
	EXPECT_EQ(t.comm(5), "");
	EXPECT_EQ(t.tasks().size(), 1u);
}

TEST(KernelEvents, KindsByNameAndTheNameAfterExec)
{
	EXPECT_EQ(KernelEvent::kind_of("sched_switch"), KernelEvent::sched_switch);
	EXPECT_EQ(KernelEvent::kind_of("sched_wakeup_new"), KernelEvent::sched_wake);
	EXPECT_EQ(KernelEvent::kind_of("lttng_statedump_process_state"), KernelEvent::process_statedump);
	EXPECT_EQ(KernelEvent::kind_of("syscall_entry_read"), KernelEvent::syscall_entry);
	EXPECT_EQ(KernelEvent::kind_of("syscall_exit_read"), KernelEvent::syscall_exit);
	EXPECT_EQ(KernelEvent::kind_of("syscall_entry_"), KernelEvent::other); // no call named
	EXPECT_EQ(KernelEvent::kind_of("app:tick"), KernelEvent::other);
	EXPECT_EQ(comm_of_exec("/usr/bin/a-very-long-program-name"), "a-very-long-pro");
	EXPECT_EQ(comm_of_exec("ls"), "ls");
}

} // namespace
