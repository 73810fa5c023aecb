// analysis/trace_stats_test.cpp — `tracery stats` with payloads stepped over
// (stats_reads_fields, the walk the command uses) against the same
// statistics over fully decoded events: the same report on a user trace
// with every field type and a per-event process context, and on a kernel
// trace whose processes come from sched_switch and fork payloads; and the
// same error (file, offset, message) when a packet's content is cut at any
// byte.
#include "analysis/trace_stats.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
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
// from sched_switch, processes from fork.
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
)";
}

// One packet: header, context (sizes filled in at the end), the events that
// `events` writes after each event header it asks for.
struct Packet {
	TestBytes p;
	uint64_t begin, end;
	Packet(uint64_t begin, uint64_t end, uint64_t discarded, uint32_t cpu) : begin(begin), end(end)
	{
		p.put<uint32_t>(0xC1FC1FC1).put<uint32_t>(0);
		p.put<uint64_t>(begin).put<uint64_t>(end).put<uint64_t>(0).put<uint64_t>(0).put<uint64_t>(discarded);
		p.put<uint32_t>(cpu);
	}
	TestBytes &event(uint32_t id, uint64_t ts) { return p.put<uint32_t>(id).put<uint64_t>(ts); }
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

// The report as JSON, or the error; fields: the payloads decoded (all, or stats').
std::string stats_of(const fs::path &dir, bool all_fields)
{
	try {
		EventWalk walk({{dir.string(), ""}}, "stats",
		               all_fields ? tracery::ctf::reader::TraceSet::FieldsWanted{} : stats_reads_fields);
		return to_json(trace_stats(walk));
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
	const std::string skipped = stats_of(t.dir, false);
	EXPECT_EQ(skipped, stats_of(t.dir, true));
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
	const std::string skipped = stats_of(t.dir, false);
	EXPECT_EQ(skipped, stats_of(t.dir, true));
	// the two reads after each switch count for the worker forked before it
	EXPECT_EQ(count_of(skipped, "pid", "100"), "3");
	EXPECT_EQ(count_of(skipped, "pid", "200"), "3");
	EXPECT_EQ(count_of(skipped, "name", "\"syscall_entry_read\""), "8");
}

TEST(TraceStats, SkippingPayloadsFailsAsDecodingThem)
{
	// each packet's content cut at every byte after its context: the same
	// error (file, offset, message) or the same report
	for (const bool kernel : {false, true}) {
		const TraceDir t(kernel ? kernel_metadata() : user_metadata());
		std::vector<uint8_t> p = kernel ? kernel_packet(1000, 0, 100) : user_packet(1000, 0, 0, 40, "app");
		size_t errors = 0;
		for (uint64_t bytes = 52; bytes < p.size(); ++bytes) {
			const uint64_t bits = bytes * 8;
			memcpy(&p[24], &bits, 8);
			t.stream("chan_0", {p});
			const std::string skipped = stats_of(t.dir, false);
			EXPECT_EQ(skipped, stats_of(t.dir, true)) << "content cut to " << bytes << " bytes";
			if (skipped.rfind("error: " + (t.dir / "chan_0").string() + ": at offset ", 0) == 0)
				++errors;
		}
		EXPECT_GT(errors, (p.size() - 52) / 2) << "kernel " << kernel;
	}
}

} // namespace
