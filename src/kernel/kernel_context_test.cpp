// kernel/kernel_context_test.cpp — the kernel events' context: names, the
// stream class's TSDL, the bytes of each context, and the thread table fed
// by a reader standing in for /proc and by payloads built on this kernel's
// formats (testdata/): fork, exec (a thread's too), sched_switch's
// priorities and the task it switches out; and /proc read for this very thread.
#include "kernel/kernel_context.hpp"

#include "base/byte_order.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

using namespace tracery::kernel;

namespace {

EventFormat format_of(const std::string &system, const std::string &name)
{
	std::ifstream in(std::string(TRACERY_KERNEL_TESTDATA) + "/events/" + system + "/" + name + "/format");
	std::stringstream text;
	text << in.rdbuf();
	return parse_event_format(text.str(), system);
}

// A payload of `format` with these integer fields, and a __data_loc string.
std::vector<uint8_t> payload(const EventFormat &format, const std::map<std::string, int32_t> &ints,
                             const std::string &loc_field = "", const std::string &loc_text = "")
{
	std::vector<uint8_t> p(format.fixed_size(), 0);
	for (const auto &[name, value] : ints) {
		const FieldFormat *f = format.field(name);
		EXPECT_NE(f, nullptr) << name;
		tracery::base::store_le<int32_t>(p.data() + f->offset, value);
	}
	if (!loc_field.empty()) {
		const FieldFormat *f = format.field(loc_field);
		const uint32_t loc = static_cast<uint32_t>(p.size()) | static_cast<uint32_t>(loc_text.size() + 1) << 16;
		tracery::base::store_le<uint32_t>(p.data() + f->offset, loc);
		p.insert(p.end(), loc_text.begin(), loc_text.end());
		p.push_back(0);
	}
	return p;
}

// Threads 100 (process 100, parent 1, prio 20, "shell") and 101 (a thread
// of 100) exist; every other tid is gone.
bool fake_proc(int32_t tid, bool, ThreadInfo &out)
{
	if (tid != 100 && tid != 101)
		return false;
	out = ThreadInfo{};
	out.pid = 100;
	out.ppid = 1;
	out.prio = 20;
	std::strcpy(out.comm, "shell");
	out.ns[0] = 4026531836u;
	return true;
}

int32_t int_at(const std::vector<uint8_t> &b, size_t at) { return tracery::base::load_le<int32_t>(b.data() + at); }

} // namespace

TEST(KernelContext, NamesAndTsdlAsLttngModules)
{
	EXPECT_EQ(parse_kernel_context("procname"), KernelContext::procname);
	EXPECT_EQ(parse_kernel_context("time_ns"), KernelContext::time_ns);
	EXPECT_EQ(parse_kernel_context("vpid"), std::nullopt);
	EXPECT_EQ(kernel_context_names().size(), kKernelContextCount);
	const std::vector<KernelContext> c = {KernelContext::tid, KernelContext::procname, KernelContext::net_ns};
	EXPECT_EQ(kernel_context_tsdl(c),
	          "\tevent.context := struct {\n"
	          "\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _tid;\n"
	          "\t\tinteger { size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; } _procname[16];\n"
	          "\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; } _net_ns;\n"
	          "\t};\n");
	EXPECT_EQ(kernel_context_tsdl({}), "");
	EXPECT_FALSE(needs_thread_table(std::vector<KernelContext>{KernelContext::tid}));
	EXPECT_TRUE(needs_thread_table(c));
}

TEST(KernelContext, BytesFromTheTableAndTheTid)
{
	ThreadTable table(true, fake_proc);
	const std::vector<KernelContext> all = {KernelContext::tid,  KernelContext::pid,      KernelContext::ppid,
	                                        KernelContext::prio, KernelContext::procname, KernelContext::pid_ns};
	std::vector<uint8_t> out;
	put_kernel_context(out, all, 101, &table);
	ASSERT_EQ(out.size(), 4u * 4 + 16 + 4);
	EXPECT_EQ(int_at(out, 0), 101);
	EXPECT_EQ(int_at(out, 4), 100);
	EXPECT_EQ(int_at(out, 8), 1);
	EXPECT_EQ(int_at(out, 12), 20);
	EXPECT_EQ(std::string(reinterpret_cast<const char *>(out.data() + 16)), "shell");
	EXPECT_EQ(static_cast<uint32_t>(int_at(out, 32)), 4026531836u);
	// A thread gone before it was seen: itself as its process, nothing else known.
	out.clear();
	put_kernel_context(out, all, 555, &table);
	EXPECT_EQ(int_at(out, 0), 555);
	EXPECT_EQ(int_at(out, 4), 555);
	EXPECT_EQ(int_at(out, 8), 0);
	EXPECT_EQ(out[16], 0);
	// The tid alone needs no table.
	out.clear();
	put_kernel_context(out, std::vector<KernelContext>{KernelContext::tid}, 7, nullptr);
	EXPECT_EQ(out.size(), 4u);
	EXPECT_EQ(int_at(out, 0), 7);
}

TEST(KernelContext, ForkExecAndSwitchUpdateTheTable)
{
	ThreadTable table(false, fake_proc);
	const EventFormat fork = format_of("sched", "sched_process_fork");
	const EventFormat exec = format_of("sched", "sched_process_exec");
	const EventFormat sw = format_of("sched", "sched_switch");
	const ThreadUpdate on_fork = ThreadUpdate::of(fork), on_exec = ThreadUpdate::of(exec),
			   on_switch = ThreadUpdate::of(sw);
	EXPECT_EQ(on_fork.kind, ThreadUpdate::fork);
	EXPECT_EQ(on_exec.kind, ThreadUpdate::exec);
	EXPECT_EQ(on_switch.kind, ThreadUpdate::sched_switch);
	EXPECT_EQ(ThreadUpdate::of(format_of("sched", "sched_wakeup")).kind, ThreadUpdate::none);

	// 100 forks 200, gone from /proc by the time the page is written: its
	// own process, 100's child, 100's priority, the name the fork gave.
	const std::vector<uint8_t> f =
		payload(fork, {{"parent_pid", 100}, {"child_pid", 200}}, "child_comm", "shell"); // __data_loc here
	table.update(on_fork, f);
	ThreadInfo t = table.get(200);
	EXPECT_EQ(t.pid, 200);
	EXPECT_EQ(t.ppid, 100);
	EXPECT_EQ(t.prio, 20);
	EXPECT_STREQ(t.comm, "shell");
	// 200 execs /usr/bin/a-very-long-program-name: the kernel's 15 bytes of its base name.
	table.update(on_exec,
	             payload(exec, {{"pid", 200}, {"old_pid", 200}}, "filename", "/usr/bin/a-very-long-program-name"));
	EXPECT_STREQ(table.get(200).comm, "a-very-long-pro");
	// A thread's exec: 201 of process 200 becomes 200.
	table.update(on_fork, payload(fork, {{"parent_pid", 200}, {"child_pid", 201}}));
	table.update(on_exec, payload(exec, {{"pid", 200}, {"old_pid", 201}}, "filename", "/bin/dd"));
	EXPECT_STREQ(table.get(200).comm, "dd");
	EXPECT_EQ(table.get(200).ppid, 200); // the thread's entry, moved
	// sched_switch: both tasks' priorities (the kernel's, - 100), for known threads only.
	table.update(on_switch,
	             payload(sw, {{"prev_pid", 200}, {"prev_prio", 139}, {"next_pid", 777}, {"next_prio", 100}}));
	EXPECT_EQ(table.get(200).prio, 39);
	EXPECT_EQ(table.size(), 2u); // 777 was not added; 201 moved to 200, 200 kept
	// A task switched out before any event of its own, gone from /proc by the
	// time its page is read: entered with the name and priority the event gives.
	std::vector<uint8_t> gone =
		payload(sw, {{"prev_pid", 300}, {"prev_prio", 120}, {"next_pid", 200}, {"next_prio", 139}});
	const char name[16] = "rotate-chunks";
	std::memcpy(gone.data() + sw.field("prev_comm")->offset, name, sizeof name);
	table.update(on_switch, gone);
	EXPECT_EQ(table.size(), 3u);
	EXPECT_STREQ(table.get(300).comm, "rotate-chunks");
	EXPECT_EQ(table.get(300).pid, 300);
	EXPECT_EQ(table.get(300).prio, 20);
	// One still alive is read from /proc, not from the event.
	std::vector<uint8_t> alive =
		payload(sw, {{"prev_pid", 101}, {"prev_prio", 120}, {"next_pid", 200}, {"next_prio", 139}});
	std::memcpy(alive.data() + sw.field("prev_comm")->offset, name, sizeof name);
	table.update(on_switch, alive);
	EXPECT_STREQ(table.get(101).comm, "shell");
	EXPECT_EQ(table.get(101).pid, 100);
	// A payload shorter than its fields changes nothing.
	table.update(on_exec, std::vector<uint8_t>(4, 0));
	EXPECT_STREQ(table.get(200).comm, "dd");
}

TEST(KernelContext, ThisThreadFromProc)
{
	ThreadInfo t;
	ASSERT_TRUE(read_proc_thread(static_cast<int32_t>(::gettid()), true, t));
	EXPECT_EQ(t.pid, ::getpid());
	EXPECT_EQ(t.ppid, ::getppid());
	char comm[16] = {};
	std::ifstream("/proc/self/comm").getline(comm, sizeof comm);
	EXPECT_STREQ(t.comm, comm);
	struct stat st;
	ASSERT_EQ(::stat("/proc/self/ns/net", &st), 0);
	EXPECT_EQ(t.ns[2], static_cast<uint32_t>(st.st_ino));
	EXPECT_FALSE(read_proc_thread(-5, false, t));
}
