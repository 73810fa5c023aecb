// analysis/analyze/locks_calls_test.cpp — `analyze locks` and `analyze calls`
// on made-up sequences: waits, contention (by holder and by threshold),
// holds across recursion, rwlock readers, trylock failures, condition waits,
// a trace that starts or ends mid-lock; calls' inclusive and exclusive time,
// recursion counted once in the total, an exit that skips frames, exits
// without entries, the fast variant's exits, the tree and folded stacks;
// both narrowed (what ends at an event within counts, every event moves the
// state).
#include "analysis/analyze/calls.hpp"
#include "analysis/analyze/locks.hpp"
#include "analysis/analyze/report_lookup_testing.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using namespace tracery::analysis;

namespace {

using namespace tracery::analysis::testing;

using Who = LockStats::Who;
constexpr auto kMutex = LockStats::Kind::mutex;
constexpr auto kRw = LockStats::Kind::rwlock;

TEST(Locks, WaitsHoldsAndContention)
{
	LockStats s({.contended_ns = 500, .longest = 2});
	const Who a{1, 11, 0x100}, b{1, 12, 0x200};
	// a takes 0x10 at once (wait 100) and holds it 1000..4000; b asks at 2000 (held by a: contended), gets it at 4100
	s.on_request(900, a, kMutex, 0x10, true);
	s.on_acquire(1000, a, kMutex, 0x10, true, 0);
	s.on_request(2000, b, kMutex, 0x10, true);
	s.on_unlock(4000, a, kMutex, 0x10);
	s.on_acquire(4100, b, kMutex, 0x10, true, 0);
	s.on_unlock(4600, b, kMutex, 0x10);
	// a: a wait of 600 with nobody holding: contended by the threshold
	s.on_request(5000, {1, 11, 0x300}, kMutex, 0x10, true);
	s.on_acquire(5600, {1, 11, 0x300}, kMutex, 0x10, true, 0);
	s.on_unlock(5700, a, kMutex, 0x10);
	const Report r = s.report(0, 6000, hex_address);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "acquisitions")), 3);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "contended")), 2);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "wait_total_ns")), 100 + 2100 + 600);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "wait_max_ns")), 2100);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "hold_total_ns")), 3000 + 500 + 100);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "threads")), 2);
	EXPECT_EQ(std::get<std::string>(cell(r, "per_lock", "lock", "0x10", "tids")), "11 12");
	EXPECT_EQ(i64(cell(r, "per_call_site", "call_site", "0x200", "wait_total_ns")), 2100);
	EXPECT_EQ(i64(cell(r, "per_call_site", "call_site", "0x200", "contended")), 1);
	EXPECT_EQ(i64(cell(r, "per_call_site", "call_site", "0x100", "hold_total_ns")), 3000);
	// the two longest waits, longest first, with who held the lock
	const Table &w = table(r, "longest_waits");
	ASSERT_EQ(w.rows.size(), 2u);
	EXPECT_EQ(i64(w.rows[0][column(w, "wait_ns")]), 2100);
	EXPECT_EQ(i64(w.rows[0][column(w, "time")]), 4100);
	EXPECT_EQ(i64(w.rows[0][column(w, "holder_tid")]), 11);
	EXPECT_EQ(i64(w.rows[1][column(w, "wait_ns")]), 600);
	EXPECT_TRUE(std::holds_alternative<std::monostate>(w.rows[1][column(w, "holder_tid")]));
}

TEST(Locks, RecursionTrylockAndFailures)
{
	LockStats s;
	const Who a{1, 11, 0x100}, b{1, 12, 0x200};
	s.on_trylock(1000, a, kMutex, 0x10, true, 0); // acquired
	s.on_request(1100, a, kMutex, 0x10, true);    // recursive: held by itself, not contended
	s.on_acquire(1150, a, kMutex, 0x10, true, 0);
	s.on_trylock(1200, b, kMutex, 0x10, true, 16); // EBUSY
	s.on_unlock(1300, a, kMutex, 0x10);            // still held (depth 1)
	s.on_unlock(2000, a, kMutex, 0x10);            // hold 1000..2000
	s.on_request(2100, b, kMutex, 0x10, true);
	s.on_acquire(2200, b, kMutex, 0x10, true, 35); // EDEADLK: failed
	const Report r = s.report(0, 3000, hex_address);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "acquisitions")), 2);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "recursive")), 1);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "contended")), 0);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "trylock_failures")), 1);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "failed")), 1);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "hold_total_ns")), 1000);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "hold_p50_ns")), 1000);
}

TEST(Locks, ReadersShareWritersWait)
{
	LockStats s;
	const Who r1{1, 11, 0x1}, r2{1, 12, 0x2}, w{1, 13, 0x3};
	s.on_request(100, r1, kRw, 0x20, false);
	s.on_acquire(110, r1, kRw, 0x20, false, 0);
	s.on_request(120, r2, kRw, 0x20, false); // a reader holds it: not contended for a reader
	s.on_acquire(130, r2, kRw, 0x20, false, 0);
	s.on_request(140, w, kRw, 0x20, true); // readers hold it: contended
	s.on_unlock(200, r1, kRw, 0x20);
	s.on_unlock(300, r2, kRw, 0x20);
	s.on_acquire(310, w, kRw, 0x20, true, 0);
	s.on_unlock(400, w, kRw, 0x20);
	const Report r = s.report(0, 500, hex_address);
	EXPECT_EQ(std::get<std::string>(cell(r, "per_lock", "lock", "0x20", "kind")), "rwlock");
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x20", "acquisitions")), 3);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x20", "contended")), 1);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x20", "wait_total_ns")), 10 + 10 + 170);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x20", "hold_total_ns")), 90 + 170 + 90);
}

TEST(Locks, ConditionWaitsReleaseTheMutex)
{
	LockStats s;
	const Who a{1, 11, 0x1}, b{1, 12, 0x2};
	s.on_request(100, a, kMutex, 0x10, true);
	s.on_acquire(100, a, kMutex, 0x10, true, 0);
	s.on_cond_wait_begin(200, a, 0x50, 0x10); // hold 100..200, then the mutex is free
	s.on_request(300, b, kMutex, 0x10, true); // not contended: nobody holds it
	s.on_acquire(300, b, kMutex, 0x10, true, 0);
	s.on_cond_signal(b, 0x50, false);
	s.on_unlock(400, b, kMutex, 0x10);
	s.on_cond_wait_end(450, a, 0x50, 0x10, 0); // held again from 450, not a new acquisition
	s.on_unlock(500, a, kMutex, 0x10);
	s.on_cond_signal(b, 0x50, true);
	const Report r = s.report(0, 600, hex_address);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "acquisitions")), 2);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "contended")), 0);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "hold_total_ns")), 100 + 100 + 50);
	EXPECT_EQ(i64(cell(r, "per_condition", "cond", "0x50", "waits")), 1);
	EXPECT_EQ(i64(cell(r, "per_condition", "cond", "0x50", "wait_total_ns")), 250);
	EXPECT_EQ(i64(cell(r, "per_condition", "cond", "0x50", "signals")), 1);
	EXPECT_EQ(i64(cell(r, "per_condition", "cond", "0x50", "broadcasts")), 1);
}

TEST(Locks, TraceCutMidLockIsCountedNotGuessed)
{
	LockStats s;
	const Who a{1, 11, 0x1}, b{1, 12, 0x2};
	s.on_unlock(100, a, kMutex, 0x10);           // locked before the trace
	s.on_acquire(200, b, kMutex, 0x10, true, 0); // requested before the trace
	s.on_request(300, a, kMutex, 0x10, true);    // still waiting at the end
	s.on_lost(7);
	const Report r = s.report(0, 400, hex_address);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "acquisitions")), 1);
	EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(r, "per_lock", "lock", "0x10", "wait_total_ns")));
	EXPECT_TRUE(std::holds_alternative<std::monostate>(cell(r, "per_lock", "lock", "0x10", "hold_total_ns")));
	EXPECT_TRUE(has_note(r, "the trace lost 7 event(s)"));
	EXPECT_TRUE(has_note(r, "1 acquisition(s) without their request"));
	EXPECT_TRUE(has_note(r, "1 unlock(s) of a lock not known held"));
	EXPECT_TRUE(has_note(r, "1 lock(s) still held at the end"));
	EXPECT_TRUE(has_note(r, "1 request(s) still waiting at the end"));
}

// What write (write_tree or write_folded) writes.
template <class Write>
std::string written(Write &&write)
{
	char *text = nullptr;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	write(out);
	fclose(out);
	std::string s(text, size);
	free(text);
	return s;
}

// Names functions by letter: 0xa -> "a".
std::string letter(uint64_t addr, int64_t) { return std::string(1, static_cast<char>('a' + addr - 0xa)); }

TEST(Locks, NarrowedCountsWhatEndsAtTheEventsWithin)
{
	LockStats s({.contended_ns = 500, .longest = 10});
	const Who a{1, 11, 0x100}, b{1, 12, 0x200};
	// narrowed to thread 12 (b): a's events move the state and count nothing
	const auto as = [&](const Who &who) {
		s.counting(who.tid == 12);
		return who;
	};
	s.on_request(900, as(a), kMutex, 0x10, true);
	s.on_acquire(1000, as(a), kMutex, 0x10, true, 0);
	s.on_request(2000, as(b), kMutex, 0x10, true); // held by a: contended
	s.on_unlock(4000, as(a), kMutex, 0x10);        // a's hold of 3000: not counted
	s.on_acquire(4100, as(b), kMutex, 0x10, true, 0);
	s.on_unlock(4600, as(b), kMutex, 0x10);
	s.on_trylock(5000, as(a), kMutex, 0x20, true, 0); // a lock only a touches
	s.on_unlock(5100, as(a), kMutex, 0x20);
	const Report r = s.report(0, 6000, hex_address);
	ASSERT_EQ(table(r, "per_lock").rows.size(), 1u);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "acquisitions")), 1);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "contended")), 1);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "wait_total_ns")), 2100);
	EXPECT_EQ(i64(cell(r, "per_lock", "lock", "0x10", "hold_total_ns")), 500);
	EXPECT_EQ(std::get<std::string>(cell(r, "per_lock", "lock", "0x10", "tids")), "12");
	const Table &w = table(r, "longest_waits");
	ASSERT_EQ(w.rows.size(), 1u);
	EXPECT_EQ(i64(w.rows[0][column(w, "holder_tid")]), 11);
	EXPECT_FALSE(has_note(r, "1 acquisition(s) without their request"));
}

TEST(Calls, NarrowedCountsTheCallsThatExitWithin)
{
	CallStats c;
	// a(0..100) calls b(10..40) on thread 11; b(0..5) on thread 12; from 50 on, thread 11 only
	const auto at = [&](int64_t ns, int64_t tid) {
		c.counting(ns >= 50 && tid == 11);
		return ns;
	};
	c.on_entry(at(0, 11), 1, 11, 0xa);
	c.on_entry(at(10, 11), 1, 11, 0xb);
	c.on_exit(at(40, 11), 1, 11, 0xb);
	c.on_entry(at(0, 12), 1, 12, 0xb);
	c.on_exit(at(5, 12), 1, 12, 0xb);
	c.on_exit(at(100, 11), 1, 11, 0xa);
	c.set_range(50, 100);
	const Report r = c.report(letter, {});
	ASSERT_EQ(table(r, "per_function").rows.size(), 1u);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "calls")), 1);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "inclusive_total_ns")), 100);
	// b's call, left out, still is not a's own time
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "exclusive_total_ns")), 70);
	EXPECT_EQ(r.begin_ns, 50);
	// per thread, the calls counted where their durations are: a's, whose entry was before 50
	const Table &threads = table(r, "per_thread");
	ASSERT_EQ(threads.rows.size(), 1u);
	EXPECT_EQ(i64(threads.rows[0][column(threads, "tid")]), 11);
	EXPECT_EQ(i64(threads.rows[0][column(threads, "calls")]), 1);
}

TEST(Calls, NarrowedToAnEndCountsNoCallThatExitsAfter)
{
	CallStats c;
	// until 50: a(0..100) on thread 11 enters within and exits after; b(10..40) and c(20..30) end within
	const auto at = [&](int64_t ns) {
		c.counting(ns <= 50);
		return ns;
	};
	c.on_entry(at(0), 1, 11, 0xa);
	c.on_entry(at(10), 1, 11, 0xb);
	c.on_exit(at(40), 1, 11, 0xb);
	c.on_entry(at(20), 1, 12, 0xc);
	c.on_exit(at(30), 1, 12, 0xc);
	c.on_exit(at(100), 1, 11, 0xa);
	c.set_range(0, 50);
	const Report r = c.report(letter, {});
	EXPECT_EQ(table(r, "per_function").rows.size(), 2u);
	EXPECT_EQ(i64(find_cell(r, "per_thread", "tid", int64_t{11}, "calls")),
	          1); // b; a's entry is within, its exit not
	EXPECT_EQ(i64(find_cell(r, "per_thread", "tid", int64_t{12}, "calls")), 1);
}

TEST(Calls, InclusiveExclusiveAndRecursion)
{
	CallStats c;
	// thread 11: a(0..100) calls b(10..40) which calls b(20..30) (recursion), then c(50..90)
	c.on_entry(0, 1, 11, 0xa);
	c.on_entry(10, 1, 11, 0xb);
	c.on_entry(20, 1, 11, 0xb);
	c.on_exit(30, 1, 11, 0xb);
	c.on_exit(40, 1, 11, 0xb);
	c.on_entry(50, 1, 11, 0xc);
	c.on_exit(90, 1, 11, std::nullopt); // the fast variant's exit: the innermost call
	c.on_exit(100, 1, 11, 0xa);
	// thread 12: b(0..5)
	c.on_entry(0, 1, 12, 0xb);
	c.on_exit(5, 1, 12, 0xb);
	c.set_range(0, 100);
	Report r = c.report(letter, {.tree = true});
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "calls")), 1);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "inclusive_total_ns")), 100);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "exclusive_total_ns")), 100 - 30 - 40);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "b", "calls")), 3);
	// the outer b of thread 11 (30) and thread 12's (5): the inner one is inside the outer
	EXPECT_EQ(i64(cell(r, "per_function", "function", "b", "inclusive_total_ns")), 35);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "b", "inclusive_max_ns")), 30);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "b", "exclusive_total_ns")), 20 + 10 + 5);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "c", "exclusive_total_ns")), 40);
	// the tree: a > b > b, a > c; b (thread 12) a root of its own
	const Table &t = table(r, "call_tree");
	ASSERT_EQ(t.rows.size(), 5u);
	std::string order;
	for (const auto &row : t.rows)
		order += std::to_string(i64(row[column(t, "depth")])) +
		         std::get<std::string>(row[column(t, "function")]) + " ";
	EXPECT_EQ(order, "0a 1b 2b 1c 0b ");
	EXPECT_EQ(written([&](FILE *out) { c.write_folded(out, letter, false); }),
	          "a 30\na;b 20\na;b;b 10\na;c 40\nb 5\n");
	EXPECT_EQ(written([&](FILE *out) { c.write_folded(out, letter, true); }), "a 1\na;b 1\na;b;b 1\na;c 1\nb 1\n");
	EXPECT_EQ(written([&](FILE *out) { c.write_tree(out, letter, {.fixed_units = true}); }),
	          "process 1\n   total (µs)     self (µs)       calls  function\n"
	          "        0.100         0.030           1  a\n"
	          "        0.030         0.020           1  +- b\n"
	          "        0.010         0.010           1     +- b\n"
	          "        0.040         0.040           1  +- c\n"
	          "        0.005         0.005           1  b\n");
	EXPECT_EQ(written([&](FILE *out) { c.write_tree(out, letter); }),
	          "process 1\n        total          self       calls  function\n"
	          "       100 ns         30 ns           1  a\n"
	          "        30 ns         20 ns           1  +- b\n"
	          "        10 ns         10 ns           1     +- b\n"
	          "        40 ns         40 ns           1  +- c\n"
	          "         5 ns          5 ns           1  b\n");
}

TEST(Calls, TreeDurationsInTheUnitThatFitsThem)
{
	CallStats c;
	// a: 1.285 s, calling b: 12.5 µs; each column as wide as its widest text
	c.on_entry(0, 7, 7, 0xa);
	c.on_entry(1000, 7, 7, 0xb);
	c.on_exit(13500, 7, 7, 0xb);
	c.on_exit(1285000000, 7, 7, 0xa);
	EXPECT_EQ(written([&](FILE *out) { c.write_tree(out, letter); }),
	          "process 7\n        total          self       calls  function\n"
	          "      1.285 s       1.285 s           1  a\n"
	          "    12.500 µs     12.500 µs           1  +- b\n");
	EXPECT_EQ(written([&](FILE *out) { c.write_tree(out, letter, {.fixed_units = true}); }),
	          "process 7\n   total (µs)     self (µs)       calls  function\n"
	          "  1285000.000   1284987.500           1  a\n"
	          "       12.500        12.500           1  +- b\n");
}

TEST(Calls, SkippedAndUnmatchedExits)
{
	CallStats c;
	c.on_exit(0, 1, 11, 0xd); // entered before the trace
	c.on_entry(10, 1, 11, 0xa);
	c.on_entry(20, 1, 11, 0xb);
	c.on_entry(30, 1, 11, 0xc);
	c.on_exit(60, 1, 11, 0xa);  // longjmp: b and c end here too
	c.on_entry(70, 1, 11, 0xe); // never returns
	c.on_lost(3);
	c.set_range(0, 80);
	const Report r = c.report(letter, {});
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "inclusive_total_ns")), 50);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "b", "inclusive_total_ns")), 40);
	EXPECT_EQ(i64(cell(r, "per_function", "function", "c", "inclusive_total_ns")), 30);
	EXPECT_EQ(table(r, "per_function").rows.size(), 3u);
	EXPECT_TRUE(has_note(r, "the trace lost 3 event(s)"));
	EXPECT_TRUE(has_note(r, "1 exit(s) without their entry"));
	EXPECT_TRUE(has_note(r, "2 call(s) closed by the exit of a function that called them"));
	EXPECT_TRUE(has_note(r, "1 call(s) not returned by the end of the trace"));
}

TEST(Calls, DepthIsBounded)
{
	CallStats c;
	const size_t depth = CallStats::kMaxDepth + 10;
	for (size_t i = 0; i < depth; ++i)
		c.on_entry(static_cast<int64_t>(i), 1, 11, 0xa);
	for (size_t i = 0; i < depth; ++i)
		c.on_exit(static_cast<int64_t>(depth + i), 1, 11, 0xa);
	c.set_range(0, 2 * static_cast<int64_t>(depth));
	const Report r = c.report(letter, {});
	EXPECT_EQ(i64(cell(r, "per_function", "function", "a", "calls")), static_cast<int64_t>(CallStats::kMaxDepth));
	EXPECT_TRUE(has_note(r, "10 call(s) deeper than 4096"));
	EXPECT_FALSE(has_note(r, "1 call(s) not returned"));
}

} // namespace
