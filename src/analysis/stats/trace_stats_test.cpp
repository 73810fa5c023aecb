// analysis/stats/trace_stats_test.cpp — `tracery stats` with payloads stepped over
// (stats_reads_fields) and with events only counted (stats_counts, the walk
// the command uses) against the same statistics over fully decoded events:
// the same report on a user trace with every field type and a per-event
// process context, on user traces whose process is the env's (every event
// counted: streams interleaved, equal times, times going back, a name in two
// stream classes), and on a kernel trace whose processes come from
// sched_switch and fork payloads while the other events are counted; the
// same error (file, offset, message) when a packet's content is cut at any
// byte; the reader's counting itself (its runs and tallies); system calls
// paired per thread across CPUs; and stats
// narrowed to a time, CPUs, processes, threads and names.
#include "analysis/stats/trace_stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ctf/reader/read_error.hpp"
#include "ctf/reader/test_bytes.hpp"

using namespace tracery::analysis;
namespace fs = std::filesystem;
using tracery::ctf::reader::TestBytes;

namespace {

const char *kTypes = R"(/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace { major = 1; minor = 8; byte_order = le;
	packet.header := struct { uint32_t magic; uint32_t stream_id; } align(8); };
clock { name = "c"; freq = 1000000000; offset_s = 100; };
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := clk64;
)";

const char *kPacketContext = R"(
	packet.context := struct { clk64 timestamp_begin; clk64 timestamp_end; uint64_t content_size;
		uint64_t packet_size; uint64_t events_discarded; uint32_t cpu_id; };
	event.header := struct { uint32_t id; clk64 timestamp; } align(8);)";

// A user trace: a process context per event, event classes of every field type.
std::string user_metadata()
{
	return std::string(kTypes) + R"(env { hostname = "h"; domain = "ust"; };
stream { id = 0;)" +
	       kPacketContext +
	       R"(
	event.context := struct { uint32_t vpid; string procname; };
};
event { name = "every"; id = 0; stream_id = 0; fields := struct {
	integer { size = 3; align = 1; signed = true; byte_order = be; } b3;
	integer { size = 13; align = 1; signed = false; } b13;
	enum : uint8_t { A = 0, B = 1 } e;
	variant <e> { string A; uint16_t B; } v;
	uint8_t n;
	struct { uint16_t k; uint8_t j; } align(32) fixed[n];
	integer { size = 8; align = 8; signed = false; encoding = UTF8; } txt[n];
	string words[2];
	floating_point { exp_dig = 11; mant_dig = 53; align = 64; } d;
	uint8_t m[2][3];
	integer { size = 8; align = 8; signed = false; encoding = UTF8; } name[4];
}; };
event { name = "fixed"; id = 1; stream_id = 0; fields := struct { uint64_t a; uint8_t m[2][3]; }; };
)";
}

// A kernel trace: no process context; the task running on each CPU comes
// from sched_switch, processes from fork. (kernel_packet's reads have no
// exit: each is an entry without exit.)
std::string kernel_metadata()
{
	return std::string(kTypes) + R"(env { hostname = "h"; domain = "kernel"; };
stream { id = 0;)" +
	       kPacketContext +
	       R"(
};
event { name = "sched_switch"; id = 0; stream_id = 0; fields := struct {
	string prev_comm; uint32_t prev_tid; string next_comm; uint32_t next_tid; }; };
event { name = "sched_process_fork"; id = 1; stream_id = 0; fields := struct {
	string parent_comm; uint32_t parent_pid; string child_comm; uint32_t child_tid; uint32_t child_pid; }; };
event { name = "syscall_entry_read"; id = 2; stream_id = 0; fields := struct { uint32_t fd; string path; }; };
event { name = "syscall_exit_read"; id = 3; stream_id = 0; fields := struct { uint32_t ret; }; };
)";
}

// A user trace whose process is its env's (a per-process buffer): no
// event context, so stats counts every event. Two stream classes; "tick"
// is in both.
// compact: LTTng's compact event headers (a 5-bit id and a 27-bit time, or
// id 31 and then a 32-bit id and a 64-bit time), which the reader's
// counting reads itself.
std::string env_metadata(bool compact = false)
{
	const std::string header = compact ? R"(
	event.header := struct {
		enum : integer { size = 5; align = 1; signed = false; } { compact = 0 ... 30, extended = 31 } id;
		variant <id> {
			struct { integer { size = 27; align = 1; signed = false; map = clock.c.value; } timestamp; } compact;
			struct { uint32_t id; clk64 timestamp; } extended;
		} v;
	} align(8);)"
	                                   : "";
	return std::string(kTypes) + R"(env { hostname = "h"; domain = "ust"; vpid = 77; procname = "envapp"; };
stream { id = 0;)" +
	       kPacketContext + header + R"(
};
stream { id = 1;)" +
	       kPacketContext + header +
	       R"(
};
event { name = "tick"; id = 0; stream_id = 0; fields := struct { uint64_t a; uint32_t b; }; };
event { name = "say"; id = 1; stream_id = 0; fields := struct { string s; uint16_t n; string t; }; };
event { name = "seq"; id = 2; stream_id = 0; fields := struct { uint8_t n; uint16_t v[n]; }; };
event { name = "log"; id = 3; stream_id = 0; fields := struct { uint16_t level; string text; uint32_t code; }; };
event { name = "tick"; id = 0; stream_id = 1; fields := struct { uint8_t c; }; };
)";
}

// One packet: header, context (sizes filled in at the end), the events that
// `events` writes after each event header it asks for.
struct Packet {
	TestBytes p;
	uint64_t begin, end;
	Packet(uint64_t begin, uint64_t end, uint64_t discarded, uint32_t cpu, uint32_t stream_class = 0)
		: begin(begin), end(end)
	{
		p.put<uint32_t>(0xC1FC1FC1).put<uint32_t>(stream_class);
		p.put<uint64_t>(begin).put<uint64_t>(end).put<uint64_t>(0).put<uint64_t>(0).put<uint64_t>(discarded);
		p.put<uint32_t>(cpu);
	}
	bool compact = false; // (env_metadata(true)'s headers)
	TestBytes &event(uint32_t id, uint64_t ts, bool extended = false)
	{
		if (!compact)
			return p.put<uint32_t>(id).put<uint64_t>(ts);
		if (extended)
			return p.put<uint8_t>(31).put<uint32_t>(id).put<uint64_t>(ts);
		return p.put<uint32_t>(static_cast<uint32_t>(id | (ts & ((1u << 27) - 1)) << 5));
	}
	std::vector<uint8_t> done()
	{
		const uint64_t bits = p.b.size() * 8;
		memcpy(&p.b[24], &bits, 8); // content_size
		memcpy(&p.b[32], &bits, 8); // packet_size
		return p.b;
	}
};

void write_file(const fs::path &path, const void *data, size_t size)
{
	std::ofstream f(path, std::ios::binary);
	f.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
}

struct TraceDir {
	fs::path dir;
	explicit TraceDir(const std::string &metadata)
	{
		char tmpl[] = "/tmp/trace-stats-test-XXXXXX";
		dir = mkdtemp(tmpl);
		write_file(dir / "metadata", metadata.data(), metadata.size());
	}
	~TraceDir() { fs::remove_all(dir); }
	void stream(const std::string &name, const std::vector<std::vector<uint8_t>> &packets) const
	{
		std::vector<uint8_t> all;
		for (const auto &p : packets)
			all.insert(all.end(), p.begin(), p.end());
		write_file(dir / name, all.data(), all.size());
	}
};

void every_payload(TestBytes &b, uint8_t option, uint8_t n)
{
	b.pad(8).put<uint8_t>(0xA5).put<uint8_t>(0x3C).put<uint8_t>(option); // the struct aligned as its double
	if (option == 0)
		b.str("hi");
	else
		b.put<uint16_t>(0x0102);
	b.put<uint8_t>(n);
	for (uint8_t i = 0; i < n; ++i)
		b.put<uint16_t>(i, 4).put<uint8_t>(i);
	b.raw(std::string(n, 't')).str("a").str("bc").put<double>(1.5, 8).raw("123456").raw("abcd");
}

std::vector<uint8_t> user_packet(uint64_t t0, uint32_t cpu, uint64_t discarded, uint32_t pid, const std::string &comm)
{
	Packet p(t0, t0 + 100, discarded, cpu);
	for (uint8_t i = 0; i < 4; ++i) {
		p.event(0, t0 + 10 * i).put<uint32_t>(pid + i % 2).str(comm + std::to_string(i % 2));
		every_payload(p.p, i % 2, i);
		p.event(1, t0 + 10 * i + 5).put<uint32_t>(pid).str(comm).put<uint64_t>(i).raw("xyzxyz");
	}
	return p.done();
}

std::vector<uint8_t> kernel_packet(uint64_t t0, uint32_t cpu, uint32_t tid)
{
	Packet p(t0, t0 + 100, 0, cpu);
	p.event(1, t0).str("sh").put<uint32_t>(1).str("worker").put<uint32_t>(tid + 1).put<uint32_t>(tid);
	p.event(2, t0 + 1).put<uint32_t>(3).str("/before/any/switch");
	p.event(0, t0 + 2).str("swapper").put<uint32_t>(0).str("worker").put<uint32_t>(tid + 1);
	p.event(2, t0 + 3).put<uint32_t>(4).str("/etc/passwd");
	p.event(2, t0 + 4).put<uint32_t>(5).str("/etc/group");
	p.event(0, t0 + 5).str("worker").put<uint32_t>(tid + 1).str("swapper").put<uint32_t>(0);
	p.event(2, t0 + 6).put<uint32_t>(6).str("/idle");
	return p.done();
}

// Events of stream class 0 of env_metadata() at those times: tick, say or
// log, seq in turn (then a "seq" of 255 elements if long_seq).
std::vector<uint8_t> env_packet(uint64_t t0, uint32_t cpu, const std::vector<uint64_t> &times, bool long_seq = false,
                                bool compact = false)
{
	Packet p(t0, times.empty() ? t0 : times.back(), 0, cpu);
	p.compact = compact;
	for (size_t i = 0; i < times.size(); ++i) {
		switch (i % 3) {
		case 0:
			p.event(0, times[i]).put<uint64_t>(i).put<uint32_t>(7);
			break;
		case 1:
			if (i % 2)
				p.event(1, times[i]).str(std::string(i % 20, 'w')).put<uint16_t>(3).str("abcdefghijk");
			else
				p.event(3, times[i]).put<uint16_t>(2).str(std::string(i, 'l')).put<uint32_t>(9);
			break;
		default:
			p.event(2, times[i]).put<uint8_t>(2).put<uint16_t>(1).put<uint16_t>(2);
			break;
		}
	}
	if (long_seq) {
		TestBytes &b = p.event(2, times.back(), true).put<uint8_t>(255);
		for (int i = 0; i < 255; ++i)
			b.put<uint16_t>(static_cast<uint16_t>(i));
	}
	return p.done();
}

// A packet of stream class 1 of env_metadata(): one "tick" at each time.
std::vector<uint8_t> tick_packet(uint64_t t0, uint32_t cpu, const std::vector<uint64_t> &times, bool compact = false)
{
	Packet p(t0, times.back(), 0, cpu, 1);
	p.compact = compact;
	for (size_t i = 0; i < times.size(); ++i)
		p.event(0, times[i], i == 2).put<uint8_t>(1);
	return p.done();
}

// A packet of stream class 0 of env_metadata(): one "log" at each time,
// their strings of 0, 5, 10... bytes.
std::vector<uint8_t> log_packet(uint64_t t0, uint32_t cpu, const std::vector<uint64_t> &times, bool compact)
{
	Packet p(t0, times.back(), 0, cpu);
	p.compact = compact;
	for (size_t i = 0; i < times.size(); ++i)
		p.event(3, times[i]).put<uint16_t>(1).str(std::string(5 * i, 'x')).put<uint32_t>(7);
	return p.done();
}

// How the walk reads: every payload decoded, payloads stepped over but
// stats' (stats_reads_fields), or events counted too (stats_counts: the command).
enum class Mode { all_fields, skipping, counting };

// The report as JSON; after the error where a damaged packet stopped the
// walk (the report then counts what came before it, as `tracery stats`
// prints it), or the error alone if the traces could not be opened.
std::string stats_of(const fs::path &dir, Mode mode)
{
	try {
		using tracery::ctf::reader::TraceSet;
		EventWalk walk({{dir.string(), ""}}, "stats",
		               mode == Mode::all_fields ? TraceSet::FieldsWanted{} : stats_reads_fields,
		               mode == Mode::counting ? stats_counts : TraceSet::Counted{}, stats_notes);
		const std::string report = to_json(trace_stats(walk));
		return walk.stopped() ? std::string("error: ") + walk.stopped()->what() + "\n" + report : report;
	} catch (const tracery::ctf::reader::ReadError &e) {
		return std::string("error: ") + e.what();
	}
}

// The count of the JSON report's first row that has `"key": value`.
std::string count_of(const std::string &json, const std::string &key, const std::string &value)
{
	const std::string what = "\"" + key + "\": " + value;
	const size_t at = json.find(what);
	if (at == std::string::npos)
		return "no " + what;
	const size_t c = json.find("\"count\": ", at) + 9;
	return json.substr(c, json.find_first_of(",\n}", c) - c);
}

TEST(TraceStats, SkippingPayloadsGivesTheSameReportOnEveryFieldType)
{
	const TraceDir t(user_metadata());
	t.stream("chan_0", {user_packet(1000, 0, 0, 40, "app"), user_packet(2000, 0, 3, 40, "app")});
	t.stream("chan_1", {user_packet(1500, 1, 0, 50, "other")});
	const std::string skipped = stats_of(t.dir, Mode::skipping);
	EXPECT_EQ(skipped, stats_of(t.dir, Mode::all_fields));
	EXPECT_EQ(skipped, stats_of(t.dir, Mode::counting));
	EXPECT_EQ(skipped.find("error"), std::string::npos) << skipped;
	EXPECT_EQ(count_of(skipped, "name", "\"every\""), "12");
	EXPECT_EQ(count_of(skipped, "name", "\"fixed\""), "12");
	EXPECT_EQ(count_of(skipped, "pid", "40"), "12"); // "every" events alternate between 40 and 41
	EXPECT_EQ(count_of(skipped, "procname", "\"app1\""), "4");
	EXPECT_EQ(count_of(skipped, "procname", "\"other\""), "6"); // 50's last name
	EXPECT_EQ(count_of(skipped, "cpu", "1"), "8");
	EXPECT_NE(skipped.find("\"discarded_events\": 3"), std::string::npos) << skipped;
}

TEST(TraceStats, SkippingPayloadsKeepsTheKernelsTasks)
{
	const TraceDir t(kernel_metadata());
	t.stream("chan_0", {kernel_packet(1000, 0, 100)});
	t.stream("chan_1", {kernel_packet(1003, 1, 200)});
	const std::string skipped = stats_of(t.dir, Mode::skipping);
	EXPECT_EQ(skipped, stats_of(t.dir, Mode::all_fields));
	EXPECT_EQ(skipped, stats_of(t.dir, Mode::counting));
	// the two reads after each switch count for the worker forked before it
	EXPECT_EQ(count_of(skipped, "pid", "100"), "3");
	EXPECT_EQ(count_of(skipped, "pid", "200"), "3");
	EXPECT_EQ(count_of(skipped, "name", "\"syscall read (entry without exit)\""), "8");
}

TEST(TraceStats, SkippingPayloadsFailsAsDecodingThem)
{
	// each packet's content cut at every byte after its context: the same
	// error (file, offset, message) and report of the events before it, or
	// the same report
	for (const bool kernel : {false, true}) {
		const TraceDir t(kernel ? kernel_metadata() : user_metadata());
		std::vector<uint8_t> p = kernel ? kernel_packet(1000, 0, 100) : user_packet(1000, 0, 0, 40, "app");
		size_t errors = 0;
		for (uint64_t bytes = 52; bytes < p.size(); ++bytes) {
			const uint64_t bits = bytes * 8;
			memcpy(&p[24], &bits, 8);
			t.stream("chan_0", {p});
			const std::string skipped = stats_of(t.dir, Mode::skipping);
			EXPECT_EQ(skipped, stats_of(t.dir, Mode::all_fields)) << "content cut to " << bytes << " bytes";
			EXPECT_EQ(skipped, stats_of(t.dir, Mode::counting)) << "content cut to " << bytes << " bytes";
			if (skipped.rfind("error: " + (t.dir / "chan_0").string() + ": at offset ", 0) == 0)
				++errors;
		}
		EXPECT_GT(errors, (p.size() - 52) / 2) << "kernel " << kernel;
	}
}

void interleaved_streams(bool compact);

TEST(TraceStats, CountingGivesTheSameReportOnInterleavedStreams)
{
	for (const bool compact : {false, true}) {
		SCOPED_TRACE(compact ? "compact headers" : "plain headers");
		interleaved_streams(compact);
	}
}

void interleaved_streams(bool compact)
{
	const TraceDir t(env_metadata(compact));
	// two streams of class 0 on CPUs 0 and 1 whose events alternate, some at
	// the same time; a stream of class 1 ("tick" again) in between; times
	// that go back in chan_1's second packet (the merge's order, not the
	// smallest time, makes first and last)
	t.stream("chan_0", {env_packet(1000, 0, {1000, 1010, 1020, 1030, 1040, 1050}, false, compact),
	                    env_packet(2000, 0, {2000, 2005, 2010, 2015, 2020, 2025, 2030}, true, compact)});
	t.stream("chan_1", {env_packet(1005, 1, {1005, 1010, 1020, 1025, 1045, 1050, 1055}, false, compact),
	                    env_packet(1990, 1, {2100, 1995, 1999, 2200}, false, compact)});
	t.stream("tick_0", {tick_packet(900, 2, {900, 1010, 1030, 1999, 3000}, compact)});
	{
		tracery::ctf::reader::TraceSet set; // (the headers the reader reads itself when compact)
		set.add_trace(t.dir.string(), "");
		EXPECT_EQ(set.stream(0).compact_header(), compact);
	}
	const std::string all = stats_of(t.dir, Mode::all_fields);
	EXPECT_EQ(all.find("error"), std::string::npos) << all;
	EXPECT_EQ(stats_of(t.dir, Mode::counting), all);
	EXPECT_EQ(stats_of(t.dir, Mode::skipping), all);
	// 25 events of class 0 (10 ticks, 4 says, 3 logs, 8 seqs: one of them
	// long), 5 ticks of class 1
	EXPECT_EQ(count_of(all, "name", "\"tick\""), "15");
	EXPECT_EQ(count_of(all, "name", "\"say\""), "4");
	EXPECT_EQ(count_of(all, "name", "\"log\""), "3");
	EXPECT_EQ(count_of(all, "name", "\"seq\""), "8");
	EXPECT_EQ(count_of(all, "pid", "77"), "30");
	EXPECT_NE(all.find("\"procname\": \"envapp\""), std::string::npos) << all;
	EXPECT_EQ(count_of(all, "cpu", "1"), "11");
	EXPECT_EQ(count_of(all, "cpu", "2"), "5");
}

void cut_at_every_byte(bool compact);

TEST(TraceStats, CountingFailsAsDecoding)
{
	for (const bool compact : {false, true}) {
		SCOPED_TRACE(compact ? "compact headers" : "plain headers");
		cut_at_every_byte(compact);
	}
}

// The env trace's packets cut at every byte after their context, one at a
// time, beside a whole one: events of every class, runs of one class
// (ticks: one step; logs: one string).
void cut_at_every_byte(bool compact)
{
	const TraceDir t(env_metadata(compact));
	const std::vector<uint64_t> times = {1000, 1010, 1020, 1030, 1040, 1050, 1060, 1070};
	const std::vector<std::vector<uint8_t>> packets = {env_packet(1000, 0, times, true, compact),
	                                                   log_packet(1000, 0, times, compact),
	                                                   tick_packet(1000, 0, times, compact)};
	const std::vector<uint8_t> other = env_packet(1005, 1, {1005, 1015, 1025, 1035}, false, compact);
	for (std::vector<uint8_t> p : packets) {
		const std::string file = p[4] == 1 ? "tick_0" : "chan_0"; // (its stream class)
		fs::remove(t.dir / "chan_0");
		fs::remove(t.dir / "tick_0");
		size_t errors = 0;
		for (uint64_t bytes = 52; bytes < p.size(); ++bytes) {
			const uint64_t bits = bytes * 8;
			memcpy(&p[24], &bits, 8);
			t.stream(file, {p});
			t.stream("chan_1", {other});
			const std::string all = stats_of(t.dir, Mode::all_fields);
			EXPECT_EQ(stats_of(t.dir, Mode::counting), all) << file << " cut to " << bytes << " bytes";
			if (all.rfind("error: " + (t.dir / file).string() + ": at offset ", 0) == 0)
				++errors;
		}
		EXPECT_GT(errors, (p.size() - 52) / 2) << file;
	}
}

TEST(TraceStats, CountingKeepsTheKernelsTasksAcrossCpus)
{
	// reads on CPU 1 while CPU 0's worker forks and switches, and the
	// other way round: each read counts for the task running on its CPU then
	const TraceDir t(kernel_metadata());
	t.stream("chan_0", {kernel_packet(1000, 0, 100), kernel_packet(1010, 0, 300)});
	t.stream("chan_1", {kernel_packet(1002, 1, 200), kernel_packet(1012, 1, 400)});
	const std::string all = stats_of(t.dir, Mode::all_fields);
	EXPECT_EQ(stats_of(t.dir, Mode::counting), all);
	EXPECT_EQ(count_of(all, "pid", "100"), "3");
	EXPECT_EQ(count_of(all, "pid", "400"), "3");
	EXPECT_EQ(count_of(all, "name", "\"syscall read (entry without exit)\""), "16");
}

// The reader's counting: runs, tallies and the items between them.
TEST(TraceStats, CountingReaderGivesRunsAndTallies)
{
	namespace reader = tracery::ctf::reader;
	const TraceDir t(env_metadata());
	t.stream("chan_0", {env_packet(1000, 0, {1000, 1010, 1020, 1030}), env_packet(2000, 0, {2000, 2010, 2020})});
	t.stream("tick_0", {tick_packet(900, 2, {900, 1015, 1015, 3000})});
	reader::TraceSet set;
	set.add_trace(t.dir.string(), "");
	// "say" given as items, the rest counted
	set.count_events_of([](const reader::Trace &, const reader::TracePlans::StreamPlans &,
	                       const reader::TracePlans::EventPlans &e) { return e.cls->name != "say"; });
	set.start();
	std::vector<std::string> got;
	uint64_t counted = 0;
	while (const reader::Item *it = set.next()) {
		const std::string stream = fs::path(it->stream->name()).filename().string();
		if (it->kind == reader::ItemKind::counted) {
			counted += it->count;
			got.push_back(stream + " run of " + std::to_string(it->count) + " from " +
			              std::to_string(it->seq) + ", " + std::to_string(it->bits / 8) + " bytes, cpu " +
			              std::to_string(it->packet_context.back().u));
		} else {
			got.push_back(stream + " " + it->event->cls->name + " at " + std::to_string(it->cycles) + " #" +
			              std::to_string(it->seq));
		}
	}
	// In the order: tick_0 900 (#1), chan_0 tick 1000 (#2), say 1010 (#3),
	// tick_0 1015 1015 (#4, #5), chan_0 seq 1020 and tick 1030 (#6, #7: its
	// first packet's end) | tick 2000 (#8), say 2010 (#9), seq 2020 (#10:
	// the end); tick_0 3000 (#11). Before each "say", the runs of the streams
	// that have one; and each at its packet's end. A tick of class 0 has 24
	// bytes, of class 1 13, a seq 17.
	const std::vector<std::string> want = {
		"chan_0 run of 1 from 2, 24 bytes, cpu 0",
		"tick_0 run of 1 from 1, 13 bytes, cpu 2",
		"chan_0 say at 1010 #3",
		"chan_0 run of 2 from 6, 41 bytes, cpu 0",
		"chan_0 run of 1 from 8, 24 bytes, cpu 0",
		"tick_0 run of 2 from 4, 26 bytes, cpu 2",
		"chan_0 say at 2010 #9",
		"chan_0 run of 1 from 10, 17 bytes, cpu 0",
		"tick_0 run of 1 from 11, 13 bytes, cpu 2",
	};
	EXPECT_EQ(got, want);
	EXPECT_EQ(counted, 9u);
	const reader::Stream *chan = nullptr, *tick = nullptr;
	for (size_t i = 0; i < set.streams(); ++i)
		(set.stream(i).class_id() == 0 ? chan : tick) = &set.stream(i);
	ASSERT_TRUE(chan && tick);
	const auto tally = [](const reader::Stream &s, size_t k) {
		const reader::Stream::Tally &t = s.tallies().at(k);
		return std::to_string(t.events) + " " + std::to_string(t.bits / 8) + " " +
		       std::to_string(t.first_cycles) + "#" + std::to_string(t.first_seq) + " " +
		       std::to_string(t.last_cycles) + "#" + std::to_string(t.last_seq);
	};
	EXPECT_EQ(tally(*chan, 0), "3 72 1000#2 2000#8");
	EXPECT_EQ(tally(*chan, 1), "0 0 0#0 0#0"); // say: given, not counted
	EXPECT_EQ(tally(*chan, 2), "2 34 1020#6 2020#10");
	EXPECT_EQ(tally(*tick, 0), "4 52 900#1 3000#11");
}

TEST(TraceStats, SystemCallsAreEntriesAndExitsPairedPerThread)
{
	// thread 101 (process 100) reads on CPU 0 (1002..1003), enters another read and sleeps; woken on CPU 1 it
	// returns from it (1004..1007), then an exit without entry, and an entry never exited
	const TraceDir t(kernel_metadata());
	Packet a(1000, 1005, 0, 0);
	a.event(1, 1000).str("sh").put<uint32_t>(1).str("worker").put<uint32_t>(101).put<uint32_t>(100);
	a.event(0, 1001).str("swapper").put<uint32_t>(0).str("worker").put<uint32_t>(101);
	a.event(2, 1002).put<uint32_t>(3).str("/a");
	a.event(3, 1003).put<uint32_t>(1);
	a.event(2, 1004).put<uint32_t>(3).str("/bc");
	a.event(0, 1005).str("worker").put<uint32_t>(101).str("swapper").put<uint32_t>(0);
	Packet b(1006, 1009, 0, 1);
	b.event(0, 1006).str("swapper").put<uint32_t>(0).str("worker").put<uint32_t>(101);
	b.event(3, 1007).put<uint32_t>(1);
	b.event(3, 1008).put<uint32_t>(1);
	b.event(2, 1009).put<uint32_t>(4).str("");
	t.stream("chan_0", {a.done()});
	t.stream("chan_1", {b.done()});
	const std::string s = stats_of(t.dir, Mode::counting);
	EXPECT_EQ(s, stats_of(t.dir, Mode::all_fields));
	const nlohmann::json j = nlohmann::json::parse(s);
	std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> rows; // name: count, first and last (less 100 s)
	int64_t bytes = 0;
	for (const auto &r : j["per_event"]) {
		rows[r["name"]] = {r["count"], r["first_ns"].get<int64_t>() - 100000000000,
		                   r["last_ns"].get<int64_t>() - 100000000000};
		bytes += r["bytes"].get<int64_t>();
	}
	using Row = std::tuple<int64_t, int64_t, int64_t>;
	EXPECT_EQ(rows["syscall read"], Row(2, 1002, 1007));
	EXPECT_EQ(rows["syscall read (exit without entry)"], Row(1, 1008, 1008));
	EXPECT_EQ(rows["syscall read (entry without exit)"], Row(1, 1009, 1009));
	EXPECT_EQ(rows.size(), 5u); // and sched_switch, sched_process_fork
	// every event in one row: the rows' bytes are the total's, the total still counts events
	EXPECT_EQ(bytes, j["total"][0]["bytes"].get<int64_t>());
	EXPECT_EQ(j["total"][0]["count"], 10);
	EXPECT_EQ(count_of(s, "pid", "100"), "7"); // every event but the fork and the switches to 101
}

TEST(TraceStats, SystemCallsWithoutTheSchedulersEventsArePairedPerCpu)
{
	// no sched_switch, no tid context: CPU 0 reads (1002..1003) and enters a read; CPU 1 exits a read
	const TraceDir t(kernel_metadata());
	Packet a(1002, 1004, 0, 0);
	a.event(2, 1002).put<uint32_t>(3).str("/a");
	a.event(3, 1003).put<uint32_t>(1);
	a.event(2, 1004).put<uint32_t>(3).str("/bc");
	Packet b(1005, 1005, 0, 1);
	b.event(3, 1005).put<uint32_t>(1);
	t.stream("chan_0", {a.done()});
	t.stream("chan_1", {b.done()});
	const std::string s = stats_of(t.dir, Mode::counting);
	EXPECT_EQ(count_of(s, "name", "\"syscall read\""), "1");
	EXPECT_EQ(count_of(s, "name", "\"syscall read (entry without exit)\""), "1");
	EXPECT_EQ(count_of(s, "name", "\"syscall read (exit without entry)\""), "1");
}

TEST(TraceStats, SystemCallsCountedInRunsPairAcrossPacketsAndSwitches)
{
	// CPU 0: a read, a read entered in one packet and exited in the next, then thread 101 switched in
	// enters a read, switched out and back in (its call still open) exits it, and enters one more
	const TraceDir t(kernel_metadata());
	Packet a(1000, 1003, 0, 0);
	a.event(2, 1000).put<uint32_t>(3).str("/a");
	a.event(3, 1001).put<uint32_t>(1);
	a.event(2, 1002).put<uint32_t>(3).str("/b");
	Packet b(1004, 1010, 0, 0);
	b.event(3, 1004).put<uint32_t>(1);
	b.event(0, 1005).str("swapper").put<uint32_t>(0).str("worker").put<uint32_t>(101);
	b.event(2, 1006).put<uint32_t>(3).str("/c");
	b.event(0, 1007).str("worker").put<uint32_t>(101).str("swapper").put<uint32_t>(0);
	b.event(0, 1008).str("swapper").put<uint32_t>(0).str("worker").put<uint32_t>(101);
	b.event(3, 1009).put<uint32_t>(1);
	b.event(2, 1010).put<uint32_t>(4).str("");
	t.stream("chan_0", {a.done(), b.done()});
	const std::string s = stats_of(t.dir, Mode::counting);
	EXPECT_EQ(s, stats_of(t.dir, Mode::all_fields));
	EXPECT_EQ(count_of(s, "name", "\"syscall read\""), "3");
	EXPECT_EQ(count_of(s, "name", "\"syscall read (entry without exit)\""), "1");
	EXPECT_EQ(s.find("exit without entry"), std::string::npos) << s;
	EXPECT_EQ(count_of(s, "name", "\"sched_switch\""), "3");
}

// The report as JSON, narrowed (every event an item, as the command walks then).
std::string narrowed_stats_of(const fs::path &dir, const NarrowOptions &options)
{
	EventWalk walk({{dir.string(), ""}}, "stats");
	return to_json(trace_stats(walk, std::nullopt, Narrowing(options)));
}

TEST(TraceStats, NarrowedCountsOnlyTheEventsOfItsTimeCpusAndTasks)
{
	// per CPU: fork, a read before any switch, switch to the worker (thread
	// tid + 1 of process tid), two reads, switch to idle, a read
	const TraceDir t(kernel_metadata());
	t.stream("chan_0", {kernel_packet(1000, 0, 100)});
	t.stream("chan_1", {kernel_packet(1003, 1, 200)});
	const std::string read = "\"syscall read (entry without exit)\"";
	NarrowOptions o;
	o.cpus = {1};
	std::string s = narrowed_stats_of(t.dir, o);
	EXPECT_EQ(count_of(s, "name", read), "4");
	EXPECT_EQ(count_of(s, "cpu", "1"), "7");
	EXPECT_EQ(count_of(s, "cpu", "0"), "no \"cpu\": 0");

	o = {};
	o.pids = {100};
	s = narrowed_stats_of(t.dir, o);
	EXPECT_EQ(count_of(s, "name", read), "2"); // the worker's two reads
	EXPECT_EQ(count_of(s, "name", "\"sched_switch\""), "1");
	EXPECT_EQ(count_of(s, "pid", "200"), "no \"pid\": 200");

	o = {};
	o.tids = {201};
	EXPECT_EQ(count_of(narrowed_stats_of(t.dir, o), "name", read), "2");
	o = {};
	o.procnames = {"worker"};
	s = narrowed_stats_of(t.dir, o);
	EXPECT_EQ(count_of(s, "name", read), "4");
	EXPECT_EQ(count_of(s, "pid", "100"), "3");
	EXPECT_EQ(count_of(s, "pid", "200"), "3");

	// the clock's offset is 100 s: from CPU 0's first read after its switch
	// to CPU 1's read before its switch
	o = {};
	o.begin = "100000001003";
	o.end = "100000001004";
	s = narrowed_stats_of(t.dir, o);
	EXPECT_EQ(count_of(s, "name", read), "3");
	EXPECT_EQ(count_of(s, "name", "\"sched_process_fork\""), "1");
	EXPECT_NE(s.find("\"begin_ns\": 100000001003"), std::string::npos) << s;
}

} // namespace
