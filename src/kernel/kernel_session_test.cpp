// kernel/kernel_session_test.cpp — a KernelSession tracing a real program
// (root with tracefs and babeltrace2; skipped with a message otherwise).
// kernel-workload (tests/apps) records a daemonless user trace in
// OUTPUT/ust, the kernel session its kernel trace in OUTPUT/kernel (LTTng's
// layout: babeltrace2 takes a directory holding a metadata file for one
// trace and does not look into its subdirectories, so a user trace written
// in OUTPUT itself would hide OUTPUT/kernel); it scopes to the program's pid. Checked: every getpid
// is a syscall_entry_getpid / syscall_exit_getpid pair returning its pid,
// each after the user event emitted just before it in the merged timeline;
// sched_switch names its two threads with LTTng's prio; the state dump
// holds it; nothing lost; babeltrace2 reads OUTPUT/kernel and OUTPUT without
// a warning; both clock classes are the same text; the instance is gone and
// the global tracefs settings are unchanged. A session started again
// continues its streams with the events it was given meanwhile; snapshots
// hold the newest events since the previous one. Plus the unit parts: the
// LTTng event classes of this kernel's formats, the stats parser, and
// packets that span pages read back to back.
#include "kernel/kernel_session.hpp"
#include "kernel/kernel_events.hpp"
#include "kernel/kernel_trace.hpp"
#include "kernel/page_builder_testing.hpp"
#include "kernel/tracefs_testing.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

using namespace tracery;
using namespace tracery::kernel;

namespace {

std::string read_file(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

EventFormat testdata_format(const std::string &system, const std::string &name)
{
	return parse_event_format(
		read_file(std::string(TRACERY_KERNEL_TESTDATA) + "/events/" + system + "/" + name + "/format"), system);
}

// Runs a shell command; its exit status, stdout and stderr.
int run(const std::string &cmd, std::string &out, std::string &err)
{
	const std::string err_file = ::testing::TempDir() + "/kernel_session_stderr";
	FILE *p = ::popen((cmd + " 2>'" + err_file + "'").c_str(), "r");
	if (!p)
		return -1;
	char buf[65536];
	size_t n;
	out.clear();
	while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
		out.append(buf, n);
	const int status = ::pclose(p);
	err = read_file(err_file);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The "clock { ... };" block of a metadata text.
std::string clock_block(const std::string &metadata)
{
	const size_t begin = metadata.find("clock {");
	const size_t end = metadata.find("};", begin);
	return begin == std::string::npos || end == std::string::npos ? "" : metadata.substr(begin, end + 2 - begin);
}

std::string clock_value(const std::string &block, const std::string &key)
{
	const size_t at = block.find("\t" + key + " = ");
	if (at == std::string::npos)
		return "";
	const size_t begin = at + key.size() + 4;
	std::string v = block.substr(begin, block.find(';', begin) - begin);
	if (v.size() >= 2 && v.front() == '"')
		v = v.substr(1, v.size() - 2);
	return v;
}

} // namespace

TEST(KernelEvents, SyscallsAndSchedFollowLttng)
{
	const KernelEventClass enter = make_event_class(testdata_format("syscalls", "sys_enter_openat"), 3);
	EXPECT_EQ(enter.name, "syscall_entry_openat");
	EXPECT_EQ(enter.id, 3u);
	ASSERT_EQ(enter.fields.size(), 4u); // __syscall_nr dropped
	EXPECT_EQ(enter.fields[0].name, "dfd");
	EXPECT_EQ(enter.fields[1].name, "filename");
	const KernelEventClass exit = make_event_class(testdata_format("syscalls", "sys_exit_getpid"), 4);
	EXPECT_EQ(exit.name, "syscall_exit_getpid");
	ASSERT_EQ(exit.fields.size(), 1u);
	EXPECT_EQ(exit.fields[0].name, "ret");
	EXPECT_TRUE(exit.fields[0].is_signed);
	EXPECT_EQ(exit.fields[0].size, 8);

	const KernelEventClass sw = make_event_class(testdata_format("sched", "sched_switch"), 0);
	std::vector<std::string> names;
	for (const CtfField &f : sw.fields)
		names.push_back(f.name);
	EXPECT_EQ(names, (std::vector<std::string>{"prev_comm", "prev_tid", "prev_prio", "prev_state", "next_comm",
	                                           "next_tid", "next_prio"}));
	EXPECT_EQ(sw.fields[0].type, CtfField::Type::string);
	EXPECT_EQ(sw.sources[2].bias, -100);

	// A payload: prev "a\xff" (invalid UTF-8 made '?'), tid 7, prio 120,
	// state 1, next "b", tid 9, prio 98.
	const EventFormat f = testdata_format("sched", "sched_switch");
	std::vector<uint8_t> payload(f.fixed_size(), 0);
	const auto put = [&](const char *field, uint64_t v) {
		const FieldFormat *ff = f.field(field);
		for (uint32_t i = 0; i < ff->size; ++i)
			payload[ff->offset + i] = static_cast<uint8_t>(v >> (8 * i));
	};
	payload[f.field("prev_comm")->offset] = 'a';
	payload[f.field("prev_comm")->offset + 1] = 0xff;
	payload[f.field("next_comm")->offset] = 'b';
	put("prev_pid", 7);
	put("prev_prio", 120);
	put("prev_state", 1);
	put("next_pid", 9);
	put("next_prio", 98);
	std::vector<uint8_t> out;
	encode_payload(
		sw, payload, [](int32_t tid) { return tid; }, out);
	const std::vector<uint8_t> expected = {'a',  '?',  0,   7, 0, 0, 0,   20, 0, 0, 0, 1, 0,
	                                       0,    0,    0,   0, 0, 0, 'b', 0,  9, 0, 0, 0, static_cast<uint8_t>(-2),
	                                       0xff, 0xff, 0xff};
	EXPECT_EQ(out, expected);
	// Cut short: fields outside the payload are 0 / empty, nothing read beyond.
	out.clear();
	encode_payload(
		sw, std::span<const uint8_t>(payload.data(), 10), [](int32_t tid) { return tid; }, out);
	EXPECT_EQ(out, std::vector<uint8_t>(1 + 4 + 4 + 8 + 1 + 4 + 4, 0));

	const KernelEventClass fork = make_event_class(testdata_format("sched", "sched_process_fork"), 1);
	names.clear();
	for (const CtfField &c : fork.fields)
		names.push_back(c.name);
	EXPECT_EQ(names, (std::vector<std::string>{"parent_comm", "parent_tid", "parent_pid", "child_comm", "child_tid",
	                                           "child_pid"}));
	EXPECT_TRUE(fork.sources[2].tgid);
	EXPECT_FALSE(fork.sources[1].tgid);
}

TEST(KernelEvents, LostTotalIsOverrunsPlusDropped)
{
	EXPECT_EQ(parse_lost_total("entries: 3\noverrun: 5\ncommit overrun: 1\nbytes: 9\ndropped events: 7\n"), 13u);
	EXPECT_THROW(parse_lost_total("entries: 3\n"), FormatError);
	EXPECT_THROW(parse_lost_total("overrun: x\n"), FormatError);
}

// The root tests of whole sessions: tracefs (else skipped, saying why),
// babeltrace2 to read traces back (where needed), a temporary directory
// `tmpl` (kept with TRACERY_KEEP_TRACE set), and tracefs's global settings
// as they were before, checked after.
class KernelSessionRoot : public ::testing::Test {
protected:
	explicit KernelSessionRoot(bool reads_back = true) : reads_back_(reads_back) {}

	void SetUp() override
	{
		std::string why;
		root = test_support::tracefs_for_tests(why);
		if (root.empty())
			GTEST_SKIP() << why;
		if (reads_back_ && std::system("command -v babeltrace2 >/dev/null 2>&1") != 0)
			GTEST_SKIP() << "babeltrace2 is not installed: cannot read the trace back";
		before_ = test_support::global_settings(root);
		char dir[] = "/tmp/tracery-kernel-session-XXXXXX";
		ASSERT_NE(::mkdtemp(dir), nullptr);
		tmpl = dir;
	}

	void TearDown() override
	{
		if (tmpl.empty())
			return;
		EXPECT_EQ(test_support::global_settings(root), before_);
		if (!std::getenv("TRACERY_KEEP_TRACE"))
			std::filesystem::remove_all(tmpl);
		else
			std::printf("trace kept in %s\n", tmpl.c_str());
	}

	std::string root, tmpl;

private:
	bool reads_back_;
	decltype(test_support::global_settings("")) before_;
};

TEST_F(KernelSessionRoot, ChildGetpidsAndSwitchesInOneMergedTimeline)
{
	const std::string output = tmpl + "/out";
	constexpr int kCalls = 2000, kRounds = 300;

	int to_child[2], from_child[2];
	ASSERT_EQ(::pipe(to_child), 0);
	ASSERT_EQ(::pipe(from_child), 0);
	const pid_t child = ::fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		::dup2(to_child[0], 0);
		::dup2(from_child[1], 1);
		::setenv("TRACERY_OUTPUT", (output + "/ust").c_str(), 1);
		::execl(TRACERY_KERNEL_WORKLOAD, TRACERY_KERNEL_WORKLOAD, std::to_string(kCalls).c_str(),
		        std::to_string(kRounds).c_str(), nullptr);
		::_exit(127);
	}
	::close(to_child[0]);
	::close(from_child[1]);
	FILE *child_out = ::fdopen(from_child[0], "r");
	char line[64] = {};
	ASSERT_NE(std::fgets(line, sizeof line, child_out), nullptr);
	ASSERT_EQ(std::string(line), "ready " + std::to_string(child) + "\n");
	const std::string user_clock = clock_block(read_file(output + "/ust/metadata"));
	ASSERT_FALSE(user_clock.empty()) << "no user trace in " << output;

	KernelSessionConfig config;
	config.session_name = "session-test";
	config.output = output;
	config.tracepoints = {"sched:sched_switch"};
	config.syscalls = {"getpid"};
	config.processes.pid = std::set<uint64_t>{static_cast<uint64_t>(child)};
	config.trace_uuid = ctf::Uuid::random();
	const std::optional<ctf::Uuid> clock_uuid = ctf::Uuid::parse(clock_value(user_clock, "uuid"));
	ASSERT_TRUE(clock_uuid.has_value());
	config.clock_uuid = *clock_uuid;
	config.clock_scale.freq_hz = std::stoull(clock_value(user_clock, "freq"));
	config.clock_scale.offset_s = std::stoll(clock_value(user_clock, "offset_s"));
	config.clock_scale.offset_ticks = std::stoull(clock_value(user_clock, "offset"));
	const std::string description = clock_value(user_clock, "description");
	config.clock_scale.description = description.c_str();
	config.tick_unit = description == "Monotonic Clock" ? clock::TickUnit::ns : clock::TickUnit::tsc;
	std::string instance;
	KernelTraceCounts counts;
	{
		KernelSession session(root, config);
		session.start();
		instance = session.instance_path();
		EXPECT_EQ(read_file(instance + "/trace_clock")
		                          .find(std::string("[") + trace_clock_for(config.tick_unit) + "]") !=
		                  std::string::npos,
		          true);
		ASSERT_EQ(::write(to_child[1], "go\n", 3), 3);
		ASSERT_NE(std::fgets(line, sizeof line, child_out), nullptr);
		EXPECT_EQ(std::string(line), "done\n");
		int status = 0;
		ASSERT_EQ(::waitpid(child, &status, 0), child);
		EXPECT_EQ(status, 0);
		session.stop();
		counts = session.counts();
		session.destroy();
	}
	std::fclose(child_out);
	::close(to_child[1]);
	struct stat st;
	EXPECT_NE(::stat(instance.c_str(), &st), 0) << instance << " is still there";
	EXPECT_EQ(counts.discarded, 0u);
	EXPECT_EQ(counts.unknown, 0u);
	EXPECT_EQ(counts.malformed, 0u);
	EXPECT_EQ(counts.bad_pages, 0u);
	EXPECT_GT(counts.statedump, 0u);

	const std::string kernel_metadata = read_file(output + "/kernel/metadata");
	EXPECT_EQ(clock_block(kernel_metadata), user_clock);
	EXPECT_NE(kernel_metadata.find("domain = \"kernel\";"), std::string::npos);
	EXPECT_NE(kernel_metadata.find("tracer_name = \"lttng-modules\";"), std::string::npos);

	std::string out, err;
	for (const std::string &dir : {output + "/kernel", output}) {
		EXPECT_EQ(run("babeltrace2 '" + dir + "' >/dev/null", out, err), 0) << dir;
		EXPECT_EQ(err, "") << dir;
	}
	ASSERT_EQ(run(std::string("/usr/bin/python3 '") + TRACERY_KERNEL_DUMP + "' '" + output + "'", out, err), 0)
		<< err;
	EXPECT_EQ(err, "");

	std::istringstream lines(out);
	int64_t last_t = INT64_MIN;
	int entries = 0, exits = 0, user_events = 0, discarded = 0;
	bool open_call = false, user_before = false, statedump_child = false;
	std::map<std::string, int> switched_out; // prev_comm -> count
	int prio_checked = 0;
	bool runtime_call = false;
	for (std::string l; std::getline(lines, l);) {
		const nlohmann::json j = nlohmann::json::parse(l);
		if (j.contains("discarded")) {
			++discarded;
			continue;
		}
		const int64_t t = j["t"];
		EXPECT_GE(t, last_t) << l;
		last_t = t;
		const std::string name = j["e"], domain = j["d"];
		if (name == "kw:before_getpid") {
			EXPECT_EQ(domain, "ust");
			EXPECT_EQ(j["f"]["i"], user_events);
			++user_events;
			user_before = true;
		} else if (name == "syscall_entry_getpid" && (user_events == 0 || entries == kCalls)) {
			runtime_call =
				true; // not the loop's: the C library's or a sanitizer's own (at exit, under ASan)
		} else if (name == "syscall_exit_getpid" && runtime_call) {
			runtime_call = false;
		} else if (name == "syscall_entry_getpid") {
			EXPECT_EQ(domain, "kernel");
			EXPECT_FALSE(open_call) << "entry " << entries << " follows an entry";
			EXPECT_TRUE(user_before) << "entry " << entries << " without its user event before it";
			open_call = true;
			user_before = false;
			++entries;
		} else if (name == "syscall_exit_getpid") {
			EXPECT_TRUE(open_call) << "exit " << exits << " without an entry";
			EXPECT_EQ(j["f"]["ret"], child);
			open_call = false;
			++exits;
		} else if (name == "sched_switch") {
			EXPECT_GE(j["cpu"], 0);
			const std::string prev = j["f"]["prev_comm"];
			++switched_out[prev];
			if (prev == "kw-ping" || prev == "kw-pong") {
				EXPECT_EQ(j["f"]["prev_prio"], 20) << l; // nice 0: 120 - 100
				++prio_checked;
			}
		} else if (name == "lttng_statedump_process_state" && j["f"]["tid"] == child) {
			EXPECT_EQ(j["f"]["pid"], child);
			EXPECT_EQ(j["f"]["name"], "kernel-workload");
			statedump_child = true;
		}
	}
	EXPECT_EQ(user_events, kCalls);
	EXPECT_EQ(entries, kCalls);
	EXPECT_EQ(exits, kCalls);
	EXPECT_EQ(discarded, 0);
	EXPECT_GT(switched_out["kw-ping"], 0);
	EXPECT_GT(switched_out["kw-pong"], 0);
	EXPECT_GT(prio_checked, 0);
	EXPECT_TRUE(statedump_child);
}

// With a 4 KiB buffer per CPU a program's 100,000 getpid calls overflow it:
// in discard mode (lost events only in per_cpu stats' "dropped events") and
// in overwrite mode (pages' lost counts, stats' "overrun"), the events
// written plus events_discarded are exactly the calls made.
class KernelSessionLost : public KernelSessionRoot, public ::testing::WithParamInterface<bool> {
protected:
	KernelSessionLost() : KernelSessionRoot(false) {}
};

TEST_P(KernelSessionLost, WrittenPlusDiscardedIsEveryEvent)
{
	constexpr int kCalls = 100000;
	int go[2];
	ASSERT_EQ(::pipe(go), 0);
	const pid_t child = ::fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		char c;
		if (::read(go[0], &c, 1) != 1)
			::_exit(1);
		for (int i = 0; i < kCalls; ++i)
			::getpid();
		::_exit(0);
	}
	KernelSessionConfig config;
	config.session_name = GetParam() ? "lost-overwrite" : "lost-discard";
	config.output = tmpl + "/out";
	config.syscalls = {"getpid"};
	config.processes.pid = std::set<uint64_t>{static_cast<uint64_t>(child)};
	config.subbuf_size = 4096;
	config.num_subbuf = 1;
	config.overwrite = GetParam();
	config.trace_uuid = ctf::Uuid::random();
	KernelTraceCounts counts;
	{
		KernelSession session(root, config);
		session.start();
		ASSERT_EQ(::write(go[1], "g", 1), 1);
		int status = 0;
		ASSERT_EQ(::waitpid(child, &status, 0), child);
		session.stop();
		counts = session.counts();
	}
	::close(go[0]);
	::close(go[1]);
	EXPECT_GT(counts.discarded, 0u) << "the buffer did not overflow: the test shows nothing";
	EXPECT_EQ(counts.events + counts.discarded, 2u * kCalls);
	EXPECT_EQ(counts.bad_pages, 0u);
	std::string out, err;
	if (std::system("command -v babeltrace2 >/dev/null 2>&1") == 0) {
		// babeltrace2 reports the same total as discarded events.
		ASSERT_EQ(run(std::string("/usr/bin/python3 '") + TRACERY_KERNEL_DUMP + "' '" + config.output +
		                      "/kernel'",
		              out, err),
		          0)
			<< err;
		std::istringstream lines(out);
		uint64_t discarded = 0, events = 0;
		for (std::string l; std::getline(lines, l);) {
			const nlohmann::json j = nlohmann::json::parse(l);
			if (j.contains("discarded"))
				discarded += j["discarded"].get<uint64_t>();
			else if (j["e"] == "syscall_entry_getpid" || j["e"] == "syscall_exit_getpid")
				++events;
		}
		EXPECT_EQ(discarded, counts.discarded);
		EXPECT_EQ(events, counts.events);
	}
}

INSTANTIATE_TEST_SUITE_P(Modes, KernelSessionLost, ::testing::Values(false, true),
                         [](const auto &info) { return info.param ? "overwrite" : "discard"; });

namespace {

// A child that, per request, calls close(FIRST + i) for i < COUNT (each an
// EBADF: a syscall entry whose fd field numbers the call), then answers.
class CloseCaller {
public:
	CloseCaller()
	{
		int to[2], from[2];
		if (::pipe(to) != 0 || ::pipe(from) != 0)
			std::abort();
		pid_ = ::fork();
		if (pid_ == 0) {
			::close(to[1]);
			::close(from[0]);
			int64_t req[2];
			while (::read(to[0], req, sizeof req) == sizeof req) {
				for (int64_t i = 0; i < req[1]; ++i)
					::close(static_cast<int>(req[0] + i));
				if (::write(from[1], "d", 1) != 1)
					break;
			}
			::_exit(0);
		}
		::close(to[0]);
		::close(from[1]);
		to_ = to[1];
		from_ = from[0];
	}
	~CloseCaller()
	{
		::close(to_);
		::close(from_);
		::waitpid(pid_, nullptr, 0);
	}
	pid_t pid() const { return pid_; }
	// Returns once the calls are made.
	void calls(int64_t first, int64_t count)
	{
		const int64_t req[2] = {first, count};
		ASSERT_EQ(::write(to_, req, sizeof req), static_cast<ssize_t>(sizeof req));
		char c;
		ASSERT_EQ(::read(from_, &c, 1), 1);
	}

private:
	pid_t pid_ = -1;
	int to_ = -1, from_ = -1;
};

struct Dumped {
	std::map<std::string, int> events; // name -> count
	std::vector<int64_t> close_fds;    // of syscall_entry_close, in timeline order
	uint64_t discarded = 0;
};

Dumped dump(const std::string &dir)
{
	Dumped d;
	std::string out, err;
	EXPECT_EQ(run(std::string("/usr/bin/python3 '") + TRACERY_KERNEL_DUMP + "' '" + dir + "'", out, err), 0) << err;
	std::istringstream lines(out);
	for (std::string l; std::getline(lines, l);) {
		const nlohmann::json j = nlohmann::json::parse(l);
		if (j.contains("discarded")) {
			d.discarded += j["discarded"].get<uint64_t>();
			continue;
		}
		++d.events[j["e"]];
		if (j["e"] == "syscall_entry_close")
			d.close_fds.push_back(j["f"]["fd"]);
	}
	return d;
}

} // namespace

// Started, stopped, given another system call, started again: the second
// run continues the streams of the first (packet_seq_num without a gap,
// so babeltrace2 reports nothing discarded), the new event class is in the
// metadata, and each start wrote its state dump.
TEST_F(KernelSessionRoot, RestartContinuesTheTraceWithNewEvents)
{
	CloseCaller child;
	KernelSessionConfig config;
	config.session_name = "restart";
	config.output = tmpl + "/out";
	config.syscalls = {"getpid"};
	config.processes.pid = std::set<uint64_t>{static_cast<uint64_t>(child.pid())};
	config.trace_uuid = ctf::Uuid::random();
	{
		KernelSession session(root, config);
		session.start();
		child.calls(1000, 100); // not traced: close is not enabled yet
		session.stop();
		EXPECT_FALSE(session.started());
		config.syscalls = {"close"};
		EXPECT_THROW(
			{
				KernelSessionConfig bad = config;
				bad.syscalls = {"no_such_call"};
				session.reconfigure(bad);
			},
			std::invalid_argument);
		session.reconfigure(config);
		session.start();
		session.reconfigure(config); // while started, the same configuration: nothing changes
		child.calls(2000, 50);
		session.stop();
		session.start(); // again, unchanged
		child.calls(3000, 20);
		session.stop();
		session.destroy();
		EXPECT_EQ(session.instance_path(), "");
	}
	const std::string metadata = read_file(config.output + "/kernel/metadata");
	EXPECT_NE(metadata.find("name = \"syscall_entry_close\";"), std::string::npos);
	const Dumped d = dump(config.output + "/kernel");
	EXPECT_EQ(d.discarded, 0u);
	EXPECT_EQ(d.events.count("syscall_entry_getpid"), 0u) << "getpid is disabled since the first stop";
	EXPECT_EQ(d.events.at("lttng_statedump_start"), 3);
	std::vector<int64_t> expected;
	for (int64_t i = 0; i < 50; ++i)
		expected.push_back(2000 + i);
	for (int64_t i = 0; i < 20; ++i)
		expected.push_back(3000 + i);
	EXPECT_EQ(d.close_fds, expected);
	EXPECT_EQ(d.events.at("syscall_exit_close"), 70);
	std::string out, err;
	EXPECT_EQ(run("babeltrace2 '" + config.output + "/kernel' >/dev/null", out, err), 0);
	EXPECT_EQ(err, "");
}

// A snapshot session keeps its kernel buffer in overwrite mode and reads
// nothing while tracing: a snapshot holds the newest events (the last
// calls, without a gap), a snapshot right after it none of them (reading
// consumed them), and the next one exactly the calls made since.
TEST_F(KernelSessionRoot, SnapshotsHoldTheNewestEventsSinceThePreviousOne)
{
	const std::string out_dir = tmpl + "/out";
	CloseCaller child;
	KernelSessionConfig config;
	config.session_name = "snapshot";
	config.output = out_dir;
	config.syscalls = {"close"};
	config.processes.pid = std::set<uint64_t>{static_cast<uint64_t>(child.pid())};
	config.subbuf_size = 4096;
	config.num_subbuf = 4; // 16 KiB per CPU: 100,000 calls overflow it
	config.overwrite = true;
	config.snapshot = true;
	config.trace_uuid = ctf::Uuid::random();
	constexpr int64_t kFirst = 1'000'000, kCalls = 100'000;
	{
		KernelSession session(root, config);
		const auto snapshot = [&](const std::string &dir) {
			session.snapshot(consumer::TraceOutput(dir + "/kernel", nullptr, ""));
		};
		EXPECT_THROW(snapshot(tmpl + "/early"), std::logic_error);
		session.start();
		child.calls(kFirst, kCalls);
		snapshot(tmpl + "/s1");
		snapshot(tmpl + "/s2");
		child.calls(5000, 10);
		session.stop();
		snapshot(tmpl + "/s3"); // stopped: what the buffer holds
		EXPECT_EQ(session.counts().events, 0u) << "a snapshot session writes no trace of its own";
		session.destroy();
	}
	struct stat st;
	EXPECT_NE(::stat((out_dir + "/kernel").c_str(), &st), 0) << "nothing written while tracing";

	const Dumped s1 = dump(tmpl + "/s1/kernel");
	ASSERT_FALSE(s1.close_fds.empty());
	EXPECT_LT(s1.close_fds.size(), static_cast<size_t>(kCalls)) << "the buffer did not overflow";
	EXPECT_EQ(s1.close_fds.back(), kFirst + kCalls - 1) << "the newest call is in the snapshot";
	// The child ran on one CPU or moved: within what each CPU kept, calls
	// follow each other; across the snapshot they only go forward.
	for (size_t i = 1; i < s1.close_fds.size(); ++i)
		EXPECT_GT(s1.close_fds[i], s1.close_fds[i - 1]) << i;
	EXPECT_EQ(s1.events.at("lttng_statedump_start"), 1);
	const Dumped s2 = dump(tmpl + "/s2/kernel");
	EXPECT_TRUE(s2.close_fds.empty()) << s2.close_fds.size() << " calls read twice";
	const Dumped s3 = dump(tmpl + "/s3/kernel");
	std::vector<int64_t> expected;
	for (int64_t i = 0; i < 10; ++i)
		expected.push_back(5000 + i);
	EXPECT_EQ(s3.close_fds, expected);
	EXPECT_EQ(s3.discarded, 0u);
	std::string out, err;
	EXPECT_EQ(run("babeltrace2 '" + tmpl + "/s3/kernel' >/dev/null", out, err), 0);
	EXPECT_EQ(err, "");
}

// Pages read back to back (write_page's `more`) share one packet until a page
// says events were lost before it (the loss then falls between two
// packets), a page comes without `more`, or the CPU goes idle; every event
// keeps its time and fields across the pages of a packet.
TEST(KernelTracePackets, BusyPagesShareAPacketUntilALossOrAPause)
{
	if (std::system("/usr/bin/python3 -c 'import bt2' 2>/dev/null") != 0)
		GTEST_SKIP() << "python3-bt2 is not installed: cannot read the trace back";
	char dir[] = "/tmp/tracery-kernel-packets-XXXXXX";
	ASSERT_NE(::mkdtemp(dir), nullptr);
	const std::string events = std::string(TRACERY_KERNEL_TESTDATA) + "/events/";
	const PageLayout layout = make_page_layout(parse_header_page(read_file(events + "header_page")),
	                                           parse_header_event(read_file(events + "header_event")));
	const std::vector<EventFormat> formats = {testdata_format("syscalls", "sys_exit_getpid")};
	ctf::TraceInfo info;
	info.uuid = ctf::Uuid::random();
	KernelTrace trace(
		consumer::TraceOutput(dir, nullptr, ""), "channel0", info, formats, 1, layout,
		[](uint32_t) { return uint64_t{0}; }, [] { return uint64_t{1000}; });
	// An exit of getpid returning `ret`, `delta` ticks after the one before.
	int64_t next_ret = 1;
	const auto exit_event = [&](test_support::PageBuilder &page, uint32_t delta) {
		std::vector<uint8_t> rest(16, 0); // __syscall_nr, padding, ret
		base::store_le<int64_t>(rest.data() + 8, next_ret++);
		page.event(delta, test_support::PageBuilder::payload(static_cast<uint16_t>(formats[0].id), 42, rest));
	};
	test_support::PageBuilder a(10'000), b(20'000), c(30'000), d(40'000), e(50'000);
	exit_event(a, 0);
	exit_event(a, 100);
	exit_event(a, 100);
	exit_event(b, 0);
	exit_event(b, 50);
	exit_event(c, 0);
	exit_event(d, 0);
	exit_event(e, 0);
	trace.write_page(0, a.finish(), true);
	trace.write_page(0, b.finish(), true);
	EXPECT_EQ(trace.counts().packets, 0u); // both pages wait in the open packet
	trace.write_page(0, c.finish(5), true);
	EXPECT_EQ(trace.counts().packets, 1u); // the loss ended the packet of a and b
	trace.write_page(0, d.finish(), false);
	EXPECT_EQ(trace.counts().packets, 2u); // c and d: the reader pauses
	trace.write_page(0, e.finish(), true);
	trace.idle(0);
	EXPECT_EQ(trace.counts().packets, 3u);
	trace.finish_cpu(0);
	trace.finish();
	EXPECT_EQ(trace.counts().events, 8u);

	std::string out, err;
	ASSERT_EQ(run(std::string("/usr/bin/python3 '") + TRACERY_KERNEL_DUMP + "' '" + dir + "'", out, err), 0) << err;
	std::vector<std::string> seen;
	std::optional<int64_t> first_t;
	std::istringstream lines(out);
	for (std::string l; std::getline(lines, l);) {
		const nlohmann::json j = nlohmann::json::parse(l);
		if (j.contains("discarded")) {
			seen.push_back("lost " + std::to_string(j["discarded"].get<uint64_t>()));
			continue;
		}
		const int64_t t = j["t"].get<int64_t>();
		if (!first_t)
			first_t = t;
		seen.push_back(std::to_string(j["f"]["ret"].get<int64_t>()) + "@" + std::to_string(t - *first_t));
	}
	EXPECT_EQ(seen, (std::vector<std::string>{"1@0", "2@100", "3@200", "4@10000", "5@10050", "lost 5", "6@20000",
	                                          "7@30000", "8@40000"}));
	std::filesystem::remove_all(dir);
}

namespace {

// A child that, told to go, opens /etc/hostname, calls openat with a NULL
// path (a fault) and exits.
pid_t openat_child(int &go)
{
	int p[2];
	if (::pipe(p) != 0)
		std::abort();
	const pid_t pid = ::fork();
	if (pid == 0) {
		::close(p[1]);
		char c;
		// On the stack: a page the child has (a forked child's file-backed
		// pages are not mapped until touched, and BPF cannot fault one in).
		char path[] = "/etc/hostname";
		if (::read(p[0], &c, 1) == 1) {
			::close(::openat(AT_FDCWD, path, O_RDONLY));
			::syscall(SYS_openat, AT_FDCWD, nullptr, O_RDONLY);
		}
		::_exit(0);
	}
	::close(p[0]);
	go = p[1];
	return pid;
}

// openat traced in a `mono` session, its calls written whole by BPF or, the
// same fields, tracefs's joined to BPF's records: the path, dfd -100, the
// fault as its unfetched bit, each exit's ret, the contexts; babeltrace2
// reads the trace without a word.
void openat_session(const std::string &root, const std::string &tmpl, bool by_bpf)
{
	int go = -1;
	const pid_t child = openat_child(go);
	KernelSessionConfig config;
	config.session_name = by_bpf ? "bpf" : "joined";
	config.output = tmpl + "/" + config.session_name;
	config.syscalls = {"openat"};
	config.syscalls_by_bpf = by_bpf;
	config.contexts = {KernelContext::tid, KernelContext::pid, KernelContext::procname};
	config.processes.pid = std::set<uint64_t>{static_cast<uint64_t>(child)};
	config.trace_uuid = ctf::Uuid::random();
	if (by_bpf) { // 256 KiB per CPU: the rings follow (a BPF record is about 4 tracefs events)
		config.subbuf_size = 64 << 10;
		config.num_subbuf = 4;
	}
	KernelSession session(root, config);
	session.start();
	EXPECT_EQ(session.syscall_ring_bytes(), by_bpf ? uint64_t{1} << 20 : 0u);
	ASSERT_EQ(::write(go, "g", 1), 1);
	::close(go);
	ASSERT_EQ(::waitpid(child, nullptr, 0), child);
	session.stop();
	ASSERT_EQ(session.user_strings_warning(), "");
	EXPECT_EQ(session.syscall_events_counts().records, by_bpf ? 4u : 0u);
	session.destroy();
	EXPECT_EQ(std::filesystem::exists(config.output + "/kernel/channel0_syscalls_0"), by_bpf);
	std::string out, err;
	ASSERT_EQ(run(std::string("/usr/bin/python3 '") + TRACERY_KERNEL_DUMP + "' '" + config.output + "/kernel'", out,
	              err),
	          0)
		<< err;
	std::vector<std::string> calls;
	std::istringstream lines(out);
	for (std::string l; std::getline(lines, l);) {
		const nlohmann::json j = nlohmann::json::parse(l);
		if (j.contains("discarded") || !std::string(j["e"]).starts_with("syscall_"))
			continue;
		EXPECT_EQ(j["c"]["tid"], child) << l;
		EXPECT_EQ(j["c"]["pid"], child) << l;
		const bool opened = j["e"] == "syscall_exit_openat" && j["f"]["ret"].get<int64_t>() >= 0;
		calls.push_back(std::string(j["e"]) + " " + (opened ? std::string("an fd") : j["f"].dump()));
	}
	EXPECT_EQ(
		calls,
		(std::vector<std::string>{
			R"(syscall_entry_openat {"dfd":-100,"filename":"/etc/hostname","flags":0,"mode":0,"unfetched":0})",
			"syscall_exit_openat an fd",
			R"(syscall_entry_openat {"dfd":-100,"filename":"","flags":0,"mode":0,"unfetched":1})",
			R"(syscall_exit_openat {"ret":-14})"}));
	EXPECT_EQ(run("babeltrace2 '" + config.output + "/kernel' >/dev/null", out, err), 0);
	EXPECT_EQ(err, "");
}

} // namespace

TEST_F(KernelSessionRoot, OpenatWrittenWholeByBpf) { openat_session(root, tmpl, true); }

TEST_F(KernelSessionRoot, OpenatJoinedToTracefsEvents) { openat_session(root, tmpl, false); }
