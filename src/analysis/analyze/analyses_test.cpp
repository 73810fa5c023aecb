// analysis/analyze/analyses_test.cpp — the analyses' cores on made-up event
// sequences: cputop's rules (a task first seen leaving ran from the start, the
// idle task, a CPU busy from the start until its first switch), system calls
// counted for the task on the exit's CPU under the entry's name, wake-up
// latency from the earliest wake-up, IRQs paired per CPU, spans nested per key;
// each narrowed to a time range, CPUs, processes and threads.
#include "analysis/analyze/analyses.hpp"
#include "analysis/analyze/report_lookup_testing.hpp"

#include <gtest/gtest.h>

using namespace tracery::analysis;

namespace {

using namespace tracery::analysis::testing;

TEST(CpuTop, FollowsTheSwitchesOfEachCpu)
{
	CpuTop top;
	TaskTable tasks;
	tasks.set(101, 100, "worker");
	tasks.set(100, 100, "main");
	top.begin(1000);
	top.on_cpu(0);
	top.on_cpu(1);
	// CPU 0: 100 was running since the start; at 1100 it leaves for 101, which leaves for idle at 1300.
	top.on_switch(1100, 0, 100, 101);
	top.on_switch(1300, 0, 101, 0);
	// CPU 1: idle until 1200 (first switch leaves the idle task), then 100 migrated there runs to the end.
	top.on_migrate(100);
	top.on_switch(1200, 1, 0, 100);
	const Report r = top.report(2000, tasks);
	EXPECT_EQ(r.begin_ns, 1000);
	EXPECT_EQ(r.end_ns, 2000);
	// 100: [1000, 1100] + [1200, 2000]; 101: [1100, 1300]
	EXPECT_EQ(i64(cell(r, "per_thread", 100, "cpu_ns")), 900);
	EXPECT_EQ(i64(cell(r, "per_thread", 101, "cpu_ns")), 200);
	EXPECT_DOUBLE_EQ(dbl(cell(r, "per_thread", 100, "usage")), 0.9);
	EXPECT_EQ(i64(cell(r, "per_thread", 100, "migrations")), 1);
	EXPECT_EQ(i64(cell(r, "per_thread", 101, "pid")), 100);
	EXPECT_EQ(std::get<std::string>(cell(r, "per_thread", 101, "comm")), "worker");
	// the idle task is no thread
	for (const auto &row : table(r, "per_thread").rows)
		EXPECT_NE(i64(row[0]), 0);
	// the process adds up its threads
	EXPECT_EQ(i64(cell(r, "per_process", 100, "cpu_ns")), 1100);
	EXPECT_EQ(i64(cell(r, "per_process", 100, "threads")), 2);
	// CPU 0 busy from the start (a switch away from a task) to 1300; CPU 1 was busy from the start until
	// its first switch too (the rule knows nothing before it), then from 1200 to the end.
	EXPECT_EQ(i64(cell(r, "per_cpu", 0, "busy_ns")), 300);
	EXPECT_EQ(i64(cell(r, "per_cpu", 1, "busy_ns")), 200 + 800);
	EXPECT_DOUBLE_EQ(dbl(table(r, "total").rows[0][2]), 1300.0 / 1000 / 2);
	// busiest thread first
	EXPECT_EQ(i64(table(r, "per_thread").rows[0][0]), 100);
}

TEST(CpuTop, ATaskSeenOnlyMigratingHasNoTime)
{
	CpuTop top;
	top.begin(0);
	top.on_migrate(7);
	top.on_switch(10, 0, 5, 6);
	const Report r = top.report(100, TaskTable());
	EXPECT_EQ(i64(cell(r, "per_thread", 7, "cpu_ns")), 0);
	EXPECT_EQ(i64(cell(r, "per_thread", 5, "cpu_ns")), 10);
	EXPECT_EQ(i64(cell(r, "per_thread", 6, "cpu_ns")), 90);
}

// The sequence of FollowsTheSwitchesOfEachCpu, narrowed.
Report narrowed_cputop(NarrowOptions options)
{
	CpuTop top{Narrowing(std::move(options))};
	TaskTable tasks;
	tasks.set(101, 100, "worker");
	tasks.set(100, 100, "main");
	tasks.set(200, 200, "other");
	top.begin(1000);
	top.on_cpu(0);
	top.on_cpu(1);
	top.on_switch(1100, 0, 100, 101);
	top.on_switch(1300, 0, 101, 0);
	top.on_switch(1200, 1, 0, 100);
	top.on_switch(1500, 1, 100, 200); // 200 runs on CPU 1 to the end
	return top.report(2000, tasks);
}

TEST(CpuTop, NarrowedToATimeRangeCountsTheTimeWithinIt)
{
	const Report r = narrowed_cputop(between("1250", "1800"));
	EXPECT_EQ(r.begin_ns, 1250);
	EXPECT_EQ(r.end_ns, 1800);
	// 100: [1250, 1500] on CPU 1; 101: [1250, 1300] on CPU 0; 200: [1500, 1800]
	EXPECT_EQ(i64(cell(r, "per_thread", 100, "cpu_ns")), 250);
	EXPECT_EQ(i64(cell(r, "per_thread", 101, "cpu_ns")), 50);
	EXPECT_EQ(i64(cell(r, "per_thread", 200, "cpu_ns")), 300);
	EXPECT_DOUBLE_EQ(dbl(cell(r, "per_thread", 200, "usage")), 300.0 / 550);
	EXPECT_EQ(i64(cell(r, "per_cpu", 0, "busy_ns")), 50);
	EXPECT_EQ(i64(cell(r, "per_cpu", 1, "busy_ns")), 550);
}

TEST(CpuTop, NarrowedToACpuCountsOnlyItsTime)
{
	const Report r = narrowed_cputop(on_cpus({1}));
	// on CPU 1: 100 from 1200 to 1500, 200 from 1500 to 2000; 101 never ran there
	EXPECT_EQ(i64(cell(r, "per_thread", 100, "cpu_ns")), 300);
	EXPECT_EQ(i64(cell(r, "per_thread", 200, "cpu_ns")), 500);
	EXPECT_EQ(i64(cell(r, "per_thread", 101, "cpu_ns")), 0);
	EXPECT_EQ(table(r, "per_cpu").rows.size(), 1u);
	EXPECT_EQ(i64(table(r, "total").rows[0][0]), 1);
}

TEST(CpuTop, NarrowedToProcessesReportsOnlyTheirThreads)
{
	for (const NarrowOptions &o : {of_pids({100}), named({"main", "worker"})}) {
		const Report r = narrowed_cputop(o);
		const Table &t = table(r, "per_thread");
		ASSERT_EQ(t.rows.size(), 2u);
		EXPECT_EQ(i64(cell(r, "per_thread", 100, "cpu_ns")), 100 + 300);
		EXPECT_EQ(i64(cell(r, "per_thread", 101, "cpu_ns")), 200);
		ASSERT_EQ(table(r, "per_process").rows.size(), 1u);
		EXPECT_EQ(i64(cell(r, "per_process", 100, "cpu_ns")), 600);
	}
	const Report r = narrowed_cputop(of_tids({101}));
	ASSERT_EQ(table(r, "per_thread").rows.size(), 1u);
	EXPECT_EQ(i64(cell(r, "per_process", 100, "threads")), 1);
	EXPECT_EQ(i64(cell(r, "per_process", 100, "cpu_ns")), 200);
}

TEST(Narrowing, RefusesAnUnreadableTime)
{
	CpuTop top{Narrowing(between("noon", ""))};
	EXPECT_THROW(top.begin(0), std::invalid_argument);
}

TEST(Syscalls, NarrowedCountsTheCallsThatExitWithinOnTheCpusOfTheTasks)
{
	const auto run = [](NarrowOptions options) {
		Syscalls s{Narrowing(std::move(options))};
		TaskTable tasks;
		tasks.set(11, 10, "app");
		tasks.set(21, 20, "db");
		s.begin(0);
		s.on_switch(0, 11);
		s.on_switch(1, 21);
		s.on_entry(10, 0, "read");
		s.on_exit(20, 0, 1); // app read, 10 ns, CPU 0
		s.on_entry(30, 1, "write");
		s.on_exit(60, 1, 1); // db write, 30 ns, CPU 1
		s.on_entry(90, 0, "read");
		s.on_exit(110, 0, 1); // app read, 20 ns, exits at 110
		return s.report(0, 200, tasks);
	};
	Report r = run(between("50", ""));
	EXPECT_EQ(r.begin_ns, 50);
	EXPECT_EQ(i64(cell(r, "per_syscall", "read", "count")), 1);
	EXPECT_EQ(i64(cell(r, "per_syscall", "read", "max_ns")), 20);
	EXPECT_EQ(i64(cell(r, "per_syscall", "write", "count")), 1);
	r = run(between("", "100"));
	EXPECT_EQ(i64(cell(r, "per_syscall", "read", "count")), 1);
	EXPECT_EQ(i64(cell(r, "per_syscall", "read", "max_ns")), 10);
	r = run(on_cpus({1}));
	ASSERT_EQ(table(r, "per_syscall").rows.size(), 1u);
	EXPECT_EQ(i64(cell(r, "per_syscall", "write", "count")), 1);
	for (const NarrowOptions &o : {of_pids({10}), of_tids({11}), named({"app"})}) {
		r = run(o);
		ASSERT_EQ(table(r, "per_thread").rows.size(), 1u);
		EXPECT_EQ(i64(cell(r, "per_syscall", "read", "count")), 2);
		EXPECT_EQ(table(r, "per_syscall").rows.size(), 1u);
	}
}

TEST(Syscalls, CountsForTheTaskOnTheExitsCpuUnderTheEntrysName)
{
	Syscalls s;
	TaskTable tasks;
	tasks.set(11, 10, "app");
	s.on_entry(5, 0, "read"); // no task known on CPU 0 yet: not counted
	s.on_exit(6, 0, 3);
	s.on_switch(0, 11);
	s.on_entry(10, 0, "read");
	s.on_exit(25, 0, 3); // 15 ns
	s.on_entry(30, 0, "openat");
	s.on_exit(70, 0, -2); // 40 ns, an error
	s.on_exit(80, 0, 0);  // no entry since the last counted exit
	s.on_entry(100, 0, "read");
	s.on_switch(0, 0);    // to idle
	s.on_exit(120, 0, 1); // nobody runs: not counted
	s.on_switch(1, 11);   // 11 goes on on CPU 1, its read still open
	s.on_exit(160, 1, 1); // 60 ns, the exit's CPU runs 11
	s.on_switch(1, 12);
	s.on_entry(200, 1, "getpid");
	s.on_exit(201, 1, 12);
	const Report r = s.report(0, 300, tasks);
	const Table &t = table(r, "per_thread");
	ASSERT_EQ(t.rows.size(), 3u);
	const auto row = [&](int64_t tid, const std::string &call) {
		for (const auto &row : t.rows)
			if (i64(row[0]) == tid && std::get<std::string>(row[column(t, "syscall")]) == call)
				return row;
		throw std::runtime_error("no row");
	};
	const auto read = row(11, "read");
	EXPECT_EQ(i64(read[column(t, "count")]), 2);
	EXPECT_EQ(i64(read[column(t, "min_ns")]), 15);
	EXPECT_EQ(i64(read[column(t, "max_ns")]), 60);
	EXPECT_DOUBLE_EQ(dbl(read[column(t, "mean_ns")]), 37.5);
	EXPECT_EQ(i64(read[column(t, "errors")]), 0);
	EXPECT_EQ(i64(read[column(t, "pid")]), 10);
	EXPECT_EQ(i64(row(11, "openat")[column(t, "errors")]), 1);
	EXPECT_EQ(i64(row(12, "getpid")[column(t, "max_ns")]), 1);
	EXPECT_EQ(i64(cell(r, "per_syscall", "read", "count")), 2);
	// per process: 11 counts under its process 10; 12 (process unknown) under itself
	const Table &p = table(r, "per_process");
	EXPECT_EQ(p.rows.size(), 3u);
	EXPECT_EQ(i64(p.rows[0][0]), 10);
	// the histogram holds all 4 calls: 1 ns [0, 2), 15 [8, 16), 40 [32, 64), 60 [32, 64)
	const Table &h = table(r, "histogram");
	int64_t n = 0;
	for (const auto &row : h.rows)
		n += i64(row[2]);
	EXPECT_EQ(n, 4);
	EXPECT_EQ(i64(h.rows.front()[0]), 0);
	EXPECT_EQ(i64(h.rows.back()[0]), 32);
	EXPECT_EQ(i64(h.rows.back()[2]), 2);
}

TEST(SchedLat, FromTheEarliestWakeupToTheSwitchIn)
{
	SchedLat s;
	s.on_wakeup(100, 5);    // waking
	s.on_wakeup(110, 5);    // wakeup of the same wake-up: the earlier counts
	s.on_switch(150, 9, 5); // 50
	s.on_wakeup(200, 6);
	s.on_switch(210, 6, 7); // 6 left the CPU after its wake-up: it did not wait
	s.on_switch(300, 7, 6); // not counted
	s.on_wakeup(400, 5);
	s.on_switch(420, 6, 5); // 20
	s.on_wakeup(500, 0);    // the idle task: ignored
	s.on_switch(600, 5, 0);
	const Report r = s.report(0, 1000, TaskTable());
	EXPECT_EQ(i64(cell(r, "per_thread", 5, "count")), 2);
	EXPECT_EQ(i64(cell(r, "per_thread", 5, "min_ns")), 20);
	EXPECT_EQ(i64(cell(r, "per_thread", 5, "max_ns")), 50);
	EXPECT_EQ(table(r, "per_thread").rows.size(), 1u);
	EXPECT_EQ(i64(table(r, "all").rows[0][0]), 2);
}

TEST(Irq, PairsEntriesAndExitsPerCpu)
{
	IrqStats s;
	EXPECT_FALSE(s.any());
	s.on_irq_entry(100, 0, 24, "eth0");
	s.on_irq_entry(105, 1, 24, "eth0");
	s.on_irq_exit(130, 1, 24); // 25 on CPU 1
	s.on_irq_exit(140, 0, 24); // 40 on CPU 0
	s.on_irq_exit(150, 0, 24); // no entry open
	s.on_softirq_entry(200, 0, 3);
	s.on_softirq_exit(260, 0, 2); // another vector: not paired
	s.on_softirq_entry(300, 0, 3);
	s.on_softirq_exit(307, 0, 3);
	EXPECT_TRUE(s.any());
	const Report r = s.report(0, 1000);
	EXPECT_EQ(i64(cell(r, "hard", 24, "count")), 2);
	EXPECT_EQ(i64(cell(r, "hard", 24, "min_ns")), 25);
	EXPECT_EQ(i64(cell(r, "hard", 24, "max_ns")), 40);
	EXPECT_EQ(std::get<std::string>(cell(r, "hard", 24, "name")), "eth0");
	EXPECT_EQ(i64(cell(r, "soft", 3, "count")), 1);
	EXPECT_EQ(i64(cell(r, "soft", 3, "max_ns")), 7);
	EXPECT_EQ(std::get<std::string>(cell(r, "soft", 3, "name")), "NET_RX");
}

TEST(Spans, PairPerKeyLastInFirstOut)
{
	Spans s;
	s.on_end(5, "1", 10, "app"); // no begin yet
	s.on_begin(10, "1");
	s.on_begin(12, "2");
	s.on_begin(20, "1");          // nested in the first
	s.on_end(25, "1", 10, "app"); // 5
	s.on_end(40, "1", 10, "app"); // 30
	s.on_end(52, "2", 20, "db");  // 40
	s.on_begin(60, "2");          // never ended
	const Report r = s.report(0, 100, "a to b");
	const Table &all = table(r, "all");
	EXPECT_EQ(i64(all.rows[0][column(all, "count")]), 3);
	EXPECT_EQ(i64(all.rows[0][column(all, "min_ns")]), 5);
	EXPECT_EQ(i64(all.rows[0][column(all, "max_ns")]), 40);
	EXPECT_EQ(i64(all.rows[0][column(all, "p50_ns")]), 30);
	EXPECT_EQ(i64(cell(r, "per_process", 10, "count")), 2);
	EXPECT_EQ(i64(cell(r, "per_process", 20, "max_ns")), 40);
	ASSERT_EQ(r.notes.size(), 2u);
	EXPECT_NE(r.notes[0].find("1 span(s) begun and not ended"), std::string::npos);
	EXPECT_NE(r.notes[1].find("1 end event(s) without a begin"), std::string::npos);
}

TEST(SchedLat, NarrowedCountsTheSwitchesInWithinOnTheCpusOfTheTasks)
{
	const auto run = [](NarrowOptions options) {
		SchedLat s{Narrowing(std::move(options))};
		TaskTable tasks;
		tasks.set(5, 5, "app");
		tasks.set(6, 6, "db");
		s.begin(0);
		s.on_wakeup(100, 5);
		s.on_switch(150, 9, 5, 0); // 5 waited 50 for CPU 0
		s.on_wakeup(200, 6);
		s.on_switch(230, 5, 6, 1); // 6 waited 30 for CPU 1
		s.on_wakeup(400, 5);
		s.on_switch(420, 6, 5, 1); // 5 waited 20 for CPU 1
		return s.report(0, 1000, tasks);
	};
	const auto all = [](const Report &r, const std::string &key) {
		const Table &t = table(r, "all");
		return i64(t.rows[0][column(t, key)]);
	};
	Report r = run(between("160", ""));
	EXPECT_EQ(r.begin_ns, 160);
	EXPECT_EQ(all(r, "count"), 2);
	EXPECT_EQ(all(r, "max_ns"), 30);
	EXPECT_EQ(i64(cell(r, "per_thread", 5, "count")), 1);
	EXPECT_EQ(i64(cell(r, "per_thread", 5, "max_ns")), 20);
	r = run(on_cpus({0}));
	EXPECT_EQ(all(r, "count"), 1);
	EXPECT_EQ(all(r, "max_ns"), 50);
	EXPECT_EQ(table(r, "per_thread").rows.size(), 1u);
	for (const NarrowOptions &o : {of_pids({6}), of_tids({6}), named({"db"})}) {
		r = run(o);
		ASSERT_EQ(table(r, "per_thread").rows.size(), 1u);
		EXPECT_EQ(i64(table(r, "per_thread").rows[0][0]), 6);
		EXPECT_EQ(all(r, "count"), 1);
		EXPECT_EQ(all(r, "total_ns"), 30);
		int64_t n = 0;
		for (const auto &row : table(r, "histogram").rows)
			n += i64(row[2]);
		EXPECT_EQ(n, 1);
	}
}

TEST(Irq, NarrowedCountsTheHandlersThatExitWithinOnTheCpus)
{
	const auto run = [](NarrowOptions options) {
		IrqStats s{Narrowing(std::move(options))};
		s.begin(0);
		s.on_irq_entry(100, 0, 24, "eth0");
		s.on_irq_entry(105, 1, 24, "eth0");
		s.on_irq_exit(130, 1, 24); // 25 on CPU 1
		s.on_irq_exit(140, 0, 24); // 40 on CPU 0
		s.on_softirq_entry(300, 1, 3);
		s.on_softirq_exit(307, 1, 3); // 7 on CPU 1
		return s.report(0, 1000);
	};
	Report r = run(on_cpus({1}));
	EXPECT_EQ(i64(cell(r, "hard", 24, "count")), 1);
	EXPECT_EQ(i64(cell(r, "hard", 24, "max_ns")), 25);
	EXPECT_EQ(i64(cell(r, "soft", 3, "count")), 1);
	r = run(between("", "135"));
	EXPECT_EQ(r.end_ns, 135);
	EXPECT_EQ(i64(cell(r, "hard", 24, "count")), 1);
	EXPECT_EQ(i64(cell(r, "hard", 24, "min_ns")), 25);
	EXPECT_TRUE(table(r, "soft").rows.empty());
	// an IRQ is no process's
	EXPECT_THROW(IrqStats{Narrowing(of_pids({1}))}, std::invalid_argument);
}

TEST(Spans, NarrowedCountsTheSpansThatEndWithinOnTheCpusOfTheTasks)
{
	const auto run = [](NarrowOptions options) {
		Spans s{Narrowing(std::move(options))};
		s.begin(0);
		s.on_begin(10, "11");
		s.on_end(40, "11", 10, "web", 11, 0); // 30, thread 11 on CPU 0
		s.on_begin(50, "21");
		s.on_end(150, "21", 20, "db", 21, 1); // 100, thread 21 on CPU 1
		s.on_begin(160, "11");
		s.on_end(170, "11", 10, "web", 11, 1); // 10, thread 11 on CPU 1
		return s.report(0, 200, "a to b");
	};
	const auto all = [](const Report &r, const std::string &key) {
		const Table &t = table(r, "all");
		return i64(t.rows[0][column(t, key)]);
	};
	Report r = run(of_pids({10}));
	EXPECT_EQ(all(r, "count"), 2);
	EXPECT_EQ(all(r, "total_ns"), 40);
	ASSERT_EQ(table(r, "per_process").rows.size(), 1u);
	EXPECT_EQ(i64(cell(r, "per_process", 10, "max_ns")), 30);
	r = run(on_cpus({1}));
	EXPECT_EQ(all(r, "count"), 2);
	EXPECT_EQ(all(r, "min_ns"), 10);
	EXPECT_EQ(all(r, "max_ns"), 100);
	r = run(between("100", ""));
	EXPECT_EQ(all(r, "count"), 2);
	EXPECT_EQ(all(r, "total_ns"), 110);
	for (const NarrowOptions &o : {of_tids({21}), named({"db"})}) {
		r = run(o);
		EXPECT_EQ(all(r, "count"), 1);
		EXPECT_EQ(all(r, "max_ns"), 100);
	}
	// what is left out is no unmatched end
	EXPECT_TRUE(r.notes.empty());
}

} // namespace
