// analysis/sql/derived_test.cpp — the SQL export's cores on made-up
// sequences: thread states (preempted or blocked by prev_state, wake-ups of
// blocked threads only, the exit's last switch, the idle task), processes
// from the task table, system calls paired across a migration, spans nested
// per key; and what the user sees of SQL: quoting of hostile names, UTF-8
// repair, JSON strings, and query output as text, CSV and JSON.
#include "analysis/sql/derived.hpp"
#include "analysis/output/json_text.hpp"
#include "analysis/sql/query.hpp"
#include "analysis/sql/sqlite.hpp"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tracery::analysis;
using namespace tracery::analysis::sql;

namespace {

struct Row {
	int64_t tid, ts, dur;
	std::string state;
	std::optional<int64_t> cpu;
	bool operator==(const Row &) const = default;
};

std::ostream &operator<<(std::ostream &o, const Row &r)
{
	return o << "{" << r.tid << " " << r.ts << "+" << r.dur << " " << r.state << " cpu "
	         << (r.cpu ? std::to_string(*r.cpu) : "-") << "}";
}

TEST(ThreadStates, IntervalsFromSwitchesAndWakeups)
{
	std::vector<Row> rows;
	ThreadStates s([&](const ThreadStates::Interval &i) {
		rows.push_back({i.tid, i.ts, i.dur, ThreadStates::name(i.state), i.cpu});
	});
	s.on_switch(100, 0, 0, 0, 5);     // idle -> 5 on CPU 0: 5 running from 100
	s.on_switch(150, 0, 5, 1, 6);     // 5 blocks (S), 6 runs
	s.on_wakeup(170, 5);              // 5 runnable from 170
	s.on_wakeup(175, 5);              // already runnable: nothing
	s.on_wakeup(176, 6);              // running: nothing
	s.on_switch(200, 0, 6, 0, 5);     // 6 preempted (runnable), 5 runs
	s.on_switch(230, 1, 0, 0, 6);     // 6 runs on CPU 1
	s.on_switch(260, 0, 5, 0x100, 0); // 5 preempted (the kernel's preempted bit only): runnable
	s.on_exit(6);
	s.on_switch(280, 1, 6, 0x100, 9); // 6 exiting, preempted: runnable still
	s.on_switch(290, 1, 9, 1, 6);
	s.on_switch(300, 1, 6, 0x10, 0); // 6's last switch out (EXIT_DEAD): no interval after it
	s.on_wakeup(310, 0);             // the idle task: ignored
	s.finish(400);
	const std::vector<Row> want = {
		{5, 100, 50, "running", 0},   {5, 150, 20, "blocked", {}},   {6, 150, 50, "running", 0},
		{5, 170, 30, "runnable", {}}, {6, 200, 30, "runnable", {}},  {5, 200, 60, "running", 0},
		{6, 230, 50, "running", 1},   {9, 280, 10, "running", 1},    {6, 280, 10, "runnable", {}},
		{6, 290, 10, "running", 1},   {5, 260, 140, "runnable", {}}, {9, 290, 110, "blocked", {}},
	};
	EXPECT_EQ(rows, want);
}

TEST(ThreadStates, ASwitchInWithoutAWakeupEndsTheBlockedInterval)
{
	std::vector<Row> rows;
	ThreadStates s([&](const ThreadStates::Interval &i) {
		rows.push_back({i.tid, i.ts, i.dur, ThreadStates::name(i.state), i.cpu});
	});
	s.on_switch(10, 0, 7, 2, 8); // 7 blocked (D) from 10; 8 running
	s.on_switch(50, 0, 8, 1, 7); // the wake-up was not recorded: 7 runs
	s.on_switch(50, 0, 7, 0, 7); // nothing happens in zero time
	s.finish(90);
	const std::vector<Row> want = {
		{8, 10, 40, "running", 0},
		{7, 10, 40, "blocked", {}},
		{7, 50, 40, "running", 0},
		{8, 50, 40, "blocked", {}},
	};
	EXPECT_EQ(rows, want);
}

TEST(Processes, FromTheMainThreadElseAnyThread)
{
	TaskTable t;
	t.set(101, 100, "worker");
	t.set(100, 100, "server");
	t.set(201, 200, "helper");          // its main thread unseen
	t.set(300, std::nullopt, "lonely"); // process unknown: its own
	const std::vector<ProcessRow> p = processes_of(t);
	ASSERT_EQ(p.size(), 3u);
	EXPECT_EQ(p[0].pid, 100);
	EXPECT_EQ(p[0].name, "server");
	EXPECT_EQ(p[0].threads, 2);
	EXPECT_EQ(p[1].pid, 200);
	EXPECT_EQ(p[1].name, "helper");
	EXPECT_EQ(p[2].pid, 300);
	EXPECT_EQ(p[2].name, "lonely");
	EXPECT_FALSE(p[0].ppid.has_value());
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
	const SyscallPairs::Call *c = p.on_exit(1);
	ASSERT_NE(c, nullptr);
	EXPECT_EQ(c->tid, 11);
	EXPECT_EQ(c->cpu, 0);
	EXPECT_EQ(c->entry_ns, 10);
	EXPECT_EQ(c->name, "futex");
	EXPECT_EQ(p.on_exit(1), nullptr); // one exit per entry
}

TEST(OpenSpans, NestedPerKeyLastInFirstOut)
{
	OpenSpans<int> o;
	o.begin("a", 1);
	o.begin("a", 2);
	o.begin("b", 3);
	EXPECT_EQ(o.end("a"), 2);
	EXPECT_EQ(o.end("c"), std::nullopt);
	EXPECT_EQ(o.unfinished(), 2u);
	EXPECT_EQ(o.end("a"), 1);
	EXPECT_EQ(o.end("a"), std::nullopt);
}

TEST(Sql, QuotingAndText)
{
	EXPECT_EQ(quote_ident("a\"b"), "\"a\"\"b\"");
	EXPECT_EQ(quote_text("it's"), "'it''s'");
	std::string s;
	append_utf8(s, "caf\xc3\xa9 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xff"); // overlong, surrogate, > U+10FFFF
	EXPECT_EQ(s, "caf\xc3\xa9 ?? ??? ???? ?");
	s.clear();
	append_json_string(s, std::string("q\"\\\n\x01\0\xc3\"\xc3\xa9", 10));
	EXPECT_EQ(s, "\"q\\\"\\\\\\u000a\\u0001\\u0000?\\\"\xc3\xa9\"");
}

std::string run(Db &db, const std::string &sql, OutputFormat f)
{
	char *buf = nullptr;
	size_t size = 0;
	FILE *out = open_memstream(&buf, &size);
	try {
		run_query(db, sql, f, out);
	} catch (...) {
		fclose(out);
		free(buf);
		throw;
	}
	fclose(out);
	std::string s(buf, size);
	free(buf);
	return s;
}

TEST(Sql, HostileNamesAndTheThreeOutputs)
{
	Db db(":memory:");
	const std::string table = quote_ident("app:x\"; DROP TABLE t; --");
	db.exec("CREATE TABLE " + table + " (n INTEGER, r REAL, s TEXT)");
	db.exec("INSERT INTO " + table + " VALUES (1, 0.5, 'a,b'), (-2, NULL, 'say \"hi\"'), (NULL, 1e300, NULL)");
	const std::string q = "SELECT n, r, s FROM " + table + " ORDER BY rowid";
	EXPECT_EQ(run(db, q, OutputFormat::csv), "n,r,s\r\n1,0.5,\"a,b\"\r\n-2,,\"say \"\"hi\"\"\"\r\n,1e+300,\r\n");
	EXPECT_EQ(run(db, q, OutputFormat::json),
	          "[{\"n\":1,\"r\":0.5,\"s\":\"a,b\"},\n{\"n\":-2,\"r\":null,\"s\":\"say \\\"hi\\\"\"},\n"
	          "{\"n\":null,\"r\":1e+300,\"s\":null}]\n");
	// numbers right-aligned, text left-aligned, NULL shown
	EXPECT_EQ(run(db, q, OutputFormat::text), "   n       r  s\n"
	                                          "   1     0.5  a,b\n"
	                                          "  -2    NULL  say \"hi\"\n"
	                                          "NULL  1e+300  NULL\n\n");
	// no row: the header alone; two statements: both printed
	EXPECT_EQ(run(db, q + " LIMIT 0", OutputFormat::csv), "n,r,s\r\n");
	EXPECT_EQ(run(db, "SELECT 1 AS a; SELECT 2 AS b", OutputFormat::json), "[{\"a\":1}]\n[{\"b\":2}]\n");
	try {
		run(db, "SELECT nope FROM " + table, OutputFormat::text);
		FAIL();
	} catch (const SqlError &e) {
		EXPECT_STREQ(e.what(),
		             ("SQLite: no such column: nope, in the query: SELECT nope FROM " + table).c_str());
	}
}

} // namespace
