// kernel/cpu_readers_test.cpp — the per-CPU readers on a live instance
// (root with tracefs; skipped with a message otherwise): a child makes a
// known number of getpid calls while the readers run; after the stop, every
// call is there as an entry followed by its exit returning the child's pid,
// nothing was lost, the readers' tids are excluded, and the global settings
// did not change.
#include "kernel/cpu_readers.hpp"
#include "kernel/fields.hpp"
#include "kernel/format.hpp"
#include "kernel/page_decoder.hpp"
#include "kernel/tracefs.hpp"
#include "kernel/tracefs_testing.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

using namespace tracery::kernel;

TEST(CpuReadersRoot, EveryGetpidOfAChildIsAnEntryExitPair)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	const auto before = test_support::global_settings(root);
	const PageLayout layout = make_page_layout(parse_header_page(read_control(root + "/events/header_page")),
	                                           parse_header_event(read_control(root + "/events/header_event")));
	const EventFormat enter =
		parse_event_format(read_control(root + "/events/syscalls/sys_enter_getpid/format"), "syscalls");
	const EventFormat exit =
		parse_event_format(read_control(root + "/events/syscalls/sys_exit_getpid/format"), "syscalls");
	const FieldFormat *ret = exit.field("ret");
	ASSERT_NE(ret, nullptr);

	struct Call {
		uint64_t ts;
		bool entry;
		int32_t pid;
		uint64_t ret;
	};
	std::mutex mutex;
	std::vector<Call> calls;
	uint64_t pages = 0, lost_pages = 0, damaged = 0;
	constexpr int kCalls = 3000;
	pid_t child = 0;
	std::vector<pid_t> reader_tids;
	{
		Instance inst(root, instance_name(::getpid(), "readers-test"));
		inst.enable_event({"syscalls", "sys_enter_getpid"});
		inst.enable_event({"syscalls", "sys_exit_getpid"});
		std::vector<uint32_t> cpus;
		for (long c = 0; c < ::sysconf(_SC_NPROCESSORS_ONLN); ++c)
			cpus.push_back(static_cast<uint32_t>(c));
		const PageDecoder decoder(layout);
		CpuReaders readers(inst, cpus, layout, [&](uint32_t, std::span<const uint8_t> page, bool) {
			std::vector<Call> mine;
			const PageResult r = decoder.decode(page, [&](const RawEvent &e) {
				const std::span<const uint8_t> payload(e.payload, e.size);
				const uint16_t type = tracery::base::load_le<uint16_t>(e.payload);
				Call c{e.timestamp, type == enter.id, tracery::base::load_le<int32_t>(e.payload + 4),
				       0};
				if (type == exit.id)
					read_integer(*ret, payload, c.ret);
				mine.push_back(c);
			});
			const std::lock_guard lock(mutex);
			calls.insert(calls.end(), mine.begin(), mine.end());
			++pages;
			lost_pages += r.events_lost;
			damaged += r.error != nullptr;
		});
		reader_tids = readers.tids();
		const std::string notrace = read_control(inst.file("set_event_notrace_pid"));
		for (const pid_t tid : reader_tids)
			EXPECT_NE(notrace.find(std::to_string(tid)), std::string::npos) << notrace;

		child = ::fork();
		ASSERT_GE(child, 0);
		if (child == 0) {
			for (int i = 0; i < kCalls; ++i)
				::getpid();
			::_exit(0);
		}
		int status = 0;
		ASSERT_EQ(::waitpid(child, &status, 0), child);
		inst.set_tracing_on(false);
		readers.stop();
		EXPECT_EQ(readers.error(), "");
	}
	EXPECT_EQ(reader_tids.size(), static_cast<size_t>(::sysconf(_SC_NPROCESSORS_ONLN)));
	EXPECT_EQ(lost_pages, 0u);
	EXPECT_EQ(damaged, 0u);
	EXPECT_GT(pages, 0u);
	std::vector<Call> mine;
	for (const Call &c : calls)
		if (c.pid == child)
			mine.push_back(c);
	std::stable_sort(mine.begin(), mine.end(), [](const Call &a, const Call &b) { return a.ts < b.ts; });
	ASSERT_EQ(mine.size(), 2u * kCalls);
	for (size_t i = 0; i < mine.size(); i += 2) {
		ASSERT_TRUE(mine[i].entry) << "call " << i / 2;
		ASSERT_FALSE(mine[i + 1].entry) << "call " << i / 2;
		EXPECT_EQ(mine[i + 1].ret, static_cast<uint64_t>(child)) << "call " << i / 2;
		EXPECT_LE(mine[i].ts, mine[i + 1].ts);
	}
	for (const Call &c : calls)
		EXPECT_EQ(std::find(reader_tids.begin(), reader_tids.end(), c.pid), reader_tids.end());
	EXPECT_EQ(test_support::global_settings(root), before);
}
