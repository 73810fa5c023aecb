// kernel/tracefs_test.cpp — tracefs: names and lists (any user), and, as
// root with tracefs, an instance's whole life: created under instances/,
// its clock, buffer, events and pid filters set inside it, found stale when
// its owner is gone, removed; the global settings unchanged throughout.
#include "kernel/tracefs.hpp"
#include "kernel/tracefs_testing.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

using namespace tracery::kernel;

namespace {

bool exists(const std::string &path)
{
	struct stat st {};
	return ::stat(path.c_str(), &st) == 0;
}

const std::vector<Tracepoint> kSample = {
	{"irq", "irq_handler_entry"},   {"irq", "irq_handler_exit"},      {"sched", "sched_switch"},
	{"sched", "sched_wakeup"},      {"syscalls", "sys_enter_getpid"}, {"syscalls", "sys_exit_getpid"},
	{"syscalls", "sys_enter_read"}, {"syscalls", "sys_exit_read"},    {"syscalls", "sys_enter_only"},
	{"raw_syscalls", "sys_enter"},
};

} // namespace

TEST(Tracefs, ErrnoTextNamesTheErrno)
{
	EXPECT_EQ(errno_text(EACCES), "EACCES (Permission denied)");
	EXPECT_EQ(errno_text(ENOENT), "ENOENT (No such file or directory)");
}

TEST(Tracefs, InstanceNamesCarryOwnerAndSanitizedSession)
{
	EXPECT_EQ(instance_name(1234, "my-session_1.x"), "tracery-1234-my-session_1.x");
	EXPECT_EQ(instance_name(7, "a/b c\n"), "tracery-7-a_b_c_");
}

TEST(Tracefs, PatternsMatchNamesInAnySystemOrSystemAndName)
{
	auto names = [](const std::vector<Tracepoint> &tps) {
		std::vector<std::string> out;
		for (const Tracepoint &tp : tps)
			out.push_back(tp.full_name());
		return out;
	};
	EXPECT_EQ(names(match_tracepoints(kSample, "sched_switch")), std::vector<std::string>{"sched:sched_switch"});
	EXPECT_EQ(names(match_tracepoints(kSample, "sched_*")),
	          (std::vector<std::string>{"sched:sched_switch", "sched:sched_wakeup"}));
	EXPECT_EQ(names(match_tracepoints(kSample, "irq:*")),
	          (std::vector<std::string>{"irq:irq_handler_entry", "irq:irq_handler_exit"}));
	EXPECT_EQ(names(match_tracepoints(kSample, "*:sys_enter")), std::vector<std::string>{"raw_syscalls:sys_enter"});
	EXPECT_TRUE(match_tracepoints(kSample, "nosuch*").empty());
}

TEST(Tracefs, SyscallsNeedEntryAndExit)
{
	EXPECT_EQ(list_syscalls(kSample), (std::vector<std::string>{"getpid", "read"}));
}

TEST(TracefsRoot, InstanceLifeChangesNothingGlobal)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	const auto before = test_support::global_settings(root);
	const std::vector<Tracepoint> all = list_tracepoints(root);
	ASSERT_GT(all.size(), 100u);
	ASSERT_FALSE(match_tracepoints(all, "sched:sched_switch").empty());
	const std::vector<std::string> syscalls = list_syscalls(all);
	EXPECT_NE(std::find(syscalls.begin(), syscalls.end(), "getpid"), syscalls.end());

	const std::string name = instance_name(::getpid(), "tracefs-test");
	{
		Instance inst(root, name);
		EXPECT_TRUE(exists(root + "/instances/" + name + "/trace_pipe"));
		// A second instance of the same name is refused with a clear line.
		try {
			Instance again(root, name);
			ADD_FAILURE() << "a second instance of one name";
		} catch (const TracefsError &e) {
			EXPECT_EQ(e.error(), EEXIST);
			EXPECT_NE(std::string(e.what()).find("EEXIST"), std::string::npos) << e.what();
		}
		const std::vector<std::string> clocks = inst.clocks();
		ASSERT_NE(std::find(clocks.begin(), clocks.end(), "mono"), clocks.end());
		inst.set_clock("mono");
		EXPECT_EQ(inst.clock(), "mono");
		try {
			inst.set_clock("sundial");
			ADD_FAILURE() << "an unknown clock accepted";
		} catch (const TracefsError &e) {
			EXPECT_NE(std::string(e.what()).find("mono"), std::string::npos) << e.what();
		}
		inst.set_buffer_size_kb(256);
		// Rounded up to whole pages of 4080 data bytes.
		EXPECT_GE(inst.buffer_size_kb(), 256u);
		EXPECT_LT(inst.buffer_size_kb(), 264u);
		inst.enable_event({"sched", "sched_switch"});
		EXPECT_EQ(read_control(inst.file("events/sched/sched_switch/enable")), "1\n");
		inst.enable_event({"sched", "sched_switch"}, false);
		EXPECT_EQ(read_control(inst.file("events/sched/sched_switch/enable")), "0\n");
		try {
			inst.enable_event({"sched", "no_such_event"});
			ADD_FAILURE() << "an absent event enabled";
		} catch (const TracefsError &e) {
			EXPECT_EQ(e.error(), ENOENT);
		}
		const pid_t pids[] = {::getpid(), 1};
		inst.set_event_pids(pids, true);
		EXPECT_EQ(read_control(inst.file("options/event-fork")), "1\n");
		const std::string listed = read_control(inst.file("set_event_pid"));
		EXPECT_NE(listed.find(std::to_string(::getpid())), std::string::npos) << listed;
		inst.set_event_pids({}, false);
		EXPECT_EQ(read_control(inst.file("set_event_pid")), "");
		const pid_t tids[] = {::getpid()};
		inst.add_notrace_pids(tids);
		const pid_t more[] = {1};
		inst.add_notrace_pids(more);
		const std::string notrace = read_control(inst.file("set_event_notrace_pid"));
		EXPECT_NE(notrace.find(std::to_string(::getpid())), std::string::npos) << notrace;
		EXPECT_NE(notrace.find("1\n"), std::string::npos) << notrace;
		inst.set_tracing_on(false);
		EXPECT_EQ(read_control(inst.file("tracing_on")), "0\n");
		EXPECT_TRUE(inst.open_cpu_pipe(0));
		// Our own instance is not stale: we are running.
		const auto stale = stale_instances(root);
		EXPECT_EQ(std::find(stale.begin(), stale.end(), name), stale.end());
	}
	EXPECT_FALSE(exists(root + "/instances/" + name));
	EXPECT_EQ(test_support::global_settings(root), before);
}

TEST(TracefsRoot, InstanceOfAGoneOwnerIsStale)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	// A child creates an instance and dies with SIGKILL, as a killed daemon.
	const pid_t child = ::fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		Instance inst(root, instance_name(::getpid(), "killed"));
		::kill(::getpid(), SIGKILL);
	}
	int status = 0;
	ASSERT_EQ(::waitpid(child, &status, 0), child);
	ASSERT_TRUE(WIFSIGNALED(status));
	const std::string name = instance_name(child, "killed");
	ASSERT_TRUE(exists(root + "/instances/" + name));
	const auto stale = stale_instances(root);
	EXPECT_NE(std::find(stale.begin(), stale.end(), name), stale.end());
	EXPECT_TRUE(remove_instance(root, name));
	EXPECT_FALSE(exists(root + "/instances/" + name));
	EXPECT_FALSE(remove_instance(root, name)) << "a second removal finds it gone";
}
