// kernel/process_filter_test.cpp — the threads tracked attributes select: on
// a fixture /proc tree written here (ids, user namespace maps, pid
// namespaces, ancestry, malformed files), on this machine's /proc (the test
// process's own ids); and, as root, TrackedProcesses keeping a private
// instance's set_event_pid true while a child changes its uid.
#include "kernel/process_filter.hpp"
#include "kernel/tracefs_testing.hpp"
#include "kernel/tracked_processes.hpp"

#include "base/monotonic.hpp"
#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace tracery::kernel;

namespace {

// One thread of the fixture: ROOT/TGID/task/TID and ROOT/TID, as /proc has
// them.
struct FakeTask {
	pid_t tid, tgid, ppid;
	uint64_t uid, gid;
	std::vector<uint64_t> nstgid;             // empty: the tgid alone
	std::string uid_map = "0 0 4294967295\n"; // the initial namespace's
	std::string gid_map = "0 0 4294967295\n";
};

void write_file(const std::string &path, const std::string &text)
{
	std::ofstream out(path);
	out << text;
}

void add_task(const std::string &root, const FakeTask &t)
{
	std::ostringstream nstgid;
	for (const uint64_t v : t.nstgid.empty() ? std::vector<uint64_t>{static_cast<uint64_t>(t.tgid)} : t.nstgid)
		nstgid << '\t' << v;
	std::ostringstream status;
	status << "Name:\tfake\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" << t.tgid << "\nNgid:\t0\nPid:\t" << t.tid
	       << "\nPPid:\t" << t.ppid << "\nTracerPid:\t0\nUid:\t" << t.uid << "\t0\t0\t0\nGid:\t" << t.gid
	       << "\t0\t0\t0\nNStgid:" << nstgid.str() << "\nNSpid:" << nstgid.str() << "\n";
	for (const std::string &dir : {root + "/" + std::to_string(t.tgid) + "/task/" + std::to_string(t.tid),
	                               root + "/" + std::to_string(t.tid)}) {
		std::filesystem::create_directories(dir);
		write_file(dir + "/status", status.str());
		write_file(dir + "/uid_map", t.uid_map);
		write_file(dir + "/gid_map", t.gid_map);
	}
}

ProcessRules::Values values(std::initializer_list<uint64_t> v) { return std::set<uint64_t>(v); }

// The fixture: init (1), a root shell (100) with a second thread (101), a
// user's process (200, uid 1000) forked by the shell, a container (300) in
// its own user and pid namespaces (uid 100000 outside is 0 inside; vpid 1)
// with a child (310, vpid 2).
class FixtureProc : public ::testing::Test {
protected:
	void SetUp() override
	{
		add_task(root(), {1, 1, 0, 0, 0, {}});
		add_task(root(), {100, 100, 1, 0, 0, {}});
		add_task(root(), {101, 100, 1, 0, 0, {}});
		add_task(root(), {200, 200, 100, 1000, 1000, {}});
		const std::string map = "0 100000 65536\n";
		add_task(root(), {300, 300, 1, 100000, 100000, {300, 1}, map, map});
		add_task(root(), {310, 310, 300, 101000, 100000, {310, 2}, map, map});
	}
	const std::string &root() const { return dir_.path(); }
	std::vector<pid_t> select(const ProcessRules &r) const { return matching_tasks(r, root()); }

	tracery::base::TestTempDir dir_{"tracery-proc-fixture"};
};

} // namespace

TEST(ProcessFilter, MapsIdsIntoTheNamespace)
{
	EXPECT_EQ(map_id_inside("0 0 4294967295\n", 1000), 1000u);
	EXPECT_EQ(map_id_inside("         0     100000      65536\n", 100000), 0u);
	EXPECT_EQ(map_id_inside("         0     100000      65536\n", 101000), 1000u);
	EXPECT_EQ(map_id_inside("0 100000 65536\n", 99999), kOverflowId);
	EXPECT_EQ(map_id_inside("0 100000 65536\n", 165536), kOverflowId);
	EXPECT_EQ(map_id_inside("0 1000 1\n1 100000 10\n", 100009), 10u);
	EXPECT_EQ(map_id_inside("", 0), kOverflowId);              // a namespace not mapped yet
	EXPECT_EQ(map_id_inside("garbage 1 2\n", 1), kOverflowId); // a line that does not parse maps nothing
}

TEST(ProcessFilter, RulesKnowWhatTracefsDoesAlone)
{
	ProcessRules r;
	EXPECT_TRUE(r.everyone());
	EXPECT_FALSE(r.pids_only());
	EXPECT_TRUE(r.closed_under_fork());
	r.pid = values({5});
	EXPECT_TRUE(r.pids_only());
	r.follow_children = false;
	EXPECT_FALSE(r.closed_under_fork());
	r.pid = values({});
	EXPECT_FALSE(r.pids_only()) << "no pid at all is not tracefs's: its empty list means every process";
	r = {};
	r.uid = values({0});
	EXPECT_FALSE(r.pids_only());
	EXPECT_TRUE(r.closed_under_fork());
	r.vpid = values({1});
	EXPECT_FALSE(r.closed_under_fork());
}

TEST_F(FixtureProc, ReadsATasksIds)
{
	const std::optional<TaskIds> ids = read_task_ids(root() + "/310");
	ASSERT_TRUE(ids);
	EXPECT_EQ(ids->tid, 310);
	EXPECT_EQ(ids->tgid, 310);
	EXPECT_EQ(ids->ppid, 300);
	EXPECT_EQ(ids->vpid, 2u);
	EXPECT_EQ(ids->uid, 101000u);
	EXPECT_EQ(ids->vuid, 1000u);
	EXPECT_EQ(ids->gid, 100000u);
	EXPECT_EQ(ids->vgid, 0u);
	const std::optional<TaskIds> thread = read_task_ids(root() + "/100/task/101");
	ASSERT_TRUE(thread);
	EXPECT_EQ(thread->tid, 101);
	EXPECT_EQ(thread->tgid, 100);
	EXPECT_FALSE(read_task_ids(root() + "/999")) << "a task gone";
}

TEST_F(FixtureProc, MalformedFilesMatchNothing)
{
	write_file(root() + "/200/task/200/status", "Name:\tfake\nTgid:\tnope\n");
	write_file(root() + "/100/task/101/status", std::string(20000, 'x')); // longer than a status file can be
	ProcessRules r;
	r.uid = values({0, 1000});
	EXPECT_EQ(select(r), (std::vector<pid_t>{1, 100}));
}

TEST_F(FixtureProc, EachAttributeIsAnOrOfItsValues)
{
	ProcessRules r;
	EXPECT_EQ(select(r), (std::vector<pid_t>{1, 100, 101, 200, 300, 310}));
	r.uid = values({0});
	EXPECT_EQ(select(r), (std::vector<pid_t>{1, 100, 101}));
	r.uid = values({1000, 101000});
	EXPECT_EQ(select(r), (std::vector<pid_t>{200, 310}));
	r = {};
	r.vuid = values({0});
	EXPECT_EQ(select(r), (std::vector<pid_t>{1, 100, 101, 300})) << "the container's root is uid 0 inside";
	r = {};
	r.vuid = values({1000});
	EXPECT_EQ(select(r), (std::vector<pid_t>{200, 310}));
	r = {};
	r.gid = values({100000});
	EXPECT_EQ(select(r), (std::vector<pid_t>{300, 310}));
	r = {};
	r.vgid = values({0});
	EXPECT_EQ(select(r), (std::vector<pid_t>{1, 100, 101, 300, 310}));
	r = {};
	r.vpid = values({1});
	EXPECT_EQ(select(r), (std::vector<pid_t>{1, 300})) << "init, and the container's init";
	r.vpid = values({});
	EXPECT_TRUE(select(r).empty()) << "an empty set selects nothing";
}

TEST_F(FixtureProc, AttributesAreAnded)
{
	ProcessRules r;
	r.vpid = values({1});
	r.uid = values({100000});
	EXPECT_EQ(select(r), (std::vector<pid_t>{300}));
	r.uid = values({1000});
	EXPECT_TRUE(select(r).empty());
}

TEST_F(FixtureProc, PidsWithOrWithoutTheirDescendants)
{
	ProcessRules r;
	r.pid = values({100});
	EXPECT_EQ(select(r), (std::vector<pid_t>{100, 101, 200})) << "the shell's threads and its child";
	r.follow_children = false;
	EXPECT_EQ(select(r), (std::vector<pid_t>{100, 101}));
	r.follow_children = true;
	r.uid = values({1000});
	EXPECT_EQ(select(r), (std::vector<pid_t>{200})) << "the shell's descendants of uid 1000";
	r = {};
	r.pid = values({300});
	r.vpid = values({2});
	EXPECT_EQ(select(r), (std::vector<pid_t>{310}));
}

TEST_F(FixtureProc, ListedProcessesWithAllTheirThreads)
{
	ProcessRules r;
	r.pid = values({100, 4000});
	EXPECT_EQ(listed_process_tasks(r, root()), (std::vector<pid_t>{100, 101, 200, 4000}))
		<< "the shell's second thread and its child, and a pid that has no process yet";
	r.follow_children = false;
	EXPECT_EQ(listed_process_tasks(r, root()), (std::vector<pid_t>{100, 101, 4000}));
}

TEST(ProcessFilter, ReadsThisProcess)
{
	const std::optional<TaskIds> ids = read_task_ids("/proc/self");
	ASSERT_TRUE(ids);
	EXPECT_EQ(ids->tgid, ::getpid());
	EXPECT_EQ(ids->uid, ::getuid());
	EXPECT_EQ(ids->gid, ::getgid());
	EXPECT_EQ(ids->ppid, ::getppid());
	ProcessRules r;
	r.uid = values({::getuid()});
	r.pid = values({static_cast<uint64_t>(::getpid())});
	EXPECT_EQ(matching_tasks(r, "/proc"), (std::vector<pid_t>{::gettid()}));
}

namespace {

std::set<pid_t> listed(const Instance &inst)
{
	std::set<pid_t> out;
	const std::string text = read_control(inst.file("set_event_pid"));
	size_t pos = 0;
	while (pos < text.size()) {
		size_t end = text.find_first_of(" \n", pos);
		if (end == std::string::npos)
			end = text.size();
		pid_t p = 0;
		if (std::from_chars(text.data() + pos, text.data() + end, p).ec == std::errc())
			out.insert(p);
		pos = end + 1;
	}
	return out;
}

// Waits up to a second for `done`.
template <typename F>
bool within_a_second(F done)
{
	const uint64_t until = tracery::base::monotonic_ns() + 1000000000u;
	while (!done()) {
		if (tracery::base::monotonic_ns() > until)
			return false;
		::usleep(1000);
	}
	return true;
}

} // namespace

TEST(TrackedProcesses, KeepsTheListTrueAsAChildChangesItsUid)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	Instance inst(root, instance_name(::getpid(), "process-filter-test"));
	constexpr uid_t kUser = 64123; // no such user is needed: setresuid takes any id as root
	int go[2], done[2];
	ASSERT_EQ(::pipe(go), 0);
	ASSERT_EQ(::pipe(done), 0);
	const pid_t child = ::fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		char c;
		if (::read(go[0], &c, 1) != 1 || ::setresuid(kUser, kUser, kUser) != 0)
			::_exit(1);
		[[maybe_unused]] const ssize_t w = ::write(done[1], "x", 1);
		::read(go[0], &c, 1); // until told, or the parent's end closes
		::_exit(0);
	}
	ProcessRules rules;
	rules.uid = values({kUser});
	{
		TrackedProcesses tracked(inst, rules, root);
		EXPECT_EQ(listed(inst), (std::set<pid_t>{kNoTask})) << "nothing of uid " << kUser << " yet";
		EXPECT_EQ(read_control(inst.file("options/event-fork")), "1\n");
		ASSERT_EQ(::write(go[1], "x", 1), 1);
		char c;
		ASSERT_EQ(::read(done[0], &c, 1), 1);
		EXPECT_TRUE(within_a_second([&] { return listed(inst).count(child) != 0; }))
			<< "the child joins once it is uid " << kUser;
		const TrackedProcessesCounts n = tracked.counts();
		EXPECT_EQ(n.joined, 1u);
		EXPECT_EQ(n.listed, 1u);
		EXPECT_GT(n.window_max_ns, 0u);
		EXPECT_LE(n.to_write_max_ns, n.window_max_ns);
		EXPECT_LT(n.window_max_ns, 500000000u) << "joined within 500 ms of its setresuid, on a loaded machine";
		std::printf("the child's setresuid to the write listing it: %.3f ms, to its end: %.3f ms\n",
		            n.to_write_max_ns / 1e6, n.window_max_ns / 1e6);
		// Tracking changed: uid 0 now; the child leaves and this process is listed.
		rules.uid = values({0});
		tracked.change_rules(rules);
		EXPECT_EQ(listed(inst).count(child), 0u);
		EXPECT_EQ(listed(inst).count(::gettid()), 1u);
	}
	ASSERT_EQ(::write(go[1], "x", 1), 1);
	int status = 0;
	ASSERT_EQ(::waitpid(child, &status, 0), child);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	inst.remove();
}
