// kernel/kernel_filter_test.cpp — filter expressions as kernel filters
// (filter/kernel_filter.hpp): each translation, each refusal with its message and
// the place of its caret, the fields of LTTng-named classes (this kernel's
// formats in testdata/); and, as root with tracefs, the kernel taking every
// translation on the real events, in a private instance.
#include "filter/kernel_filter.hpp"
#include "kernel/kernel_events.hpp"
#include "kernel/tracefs_testing.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace tracery;
using namespace tracery::kernel;

namespace {

EventFormat format_of(const std::string &system, const std::string &name)
{
	return parse_event_format(test_support::fixture(system + "/" + name + "/format"), system);
}

std::vector<filter::KernelField> fields_of(const std::string &system, const std::string &name)
{
	return filter_fields(make_event_class(format_of(system, name), 0));
}

struct Translation {
	const char *system;
	const char *event;
	const char *expression;
	const char *kernel;
};

// Expressions on this kernel's events and what the kernel is given.
const Translation kTranslations[] = {
	{"sched", "sched_switch", "prev_prio < 20", "prev_prio < 120"},
	{"sched", "sched_switch", "20 <= next_prio", "next_prio >= 120"},
	{"sched", "sched_switch", "prev_tid == 42 && next_tid != 0", "(prev_pid == 42 && next_pid != 0)"},
	{"sched", "sched_switch", "prev_comm == \"kw-ping\" || prev_comm == \"bash\"",
         "(prev_comm == \"kw-ping\" || prev_comm == \"bash\")"},
	{"sched", "sched_switch", "prev_comm == \"kw-*\"", "prev_comm ~ \"kw-*\""},
	{"sched", "sched_switch", "prev_comm != \"*sh\"", "!(prev_comm ~ \"*sh\")"},
	{"sched", "sched_switch", "prev_comm == \"a\\*b\"", "prev_comm == \"a*b\""},
	{"sched", "sched_switch", "prev_state & 2", "prev_state & 2"},
	{"sched", "sched_switch", "(prev_state & 1) == 0", "!(prev_state & 1)"},
	{"sched", "sched_switch", "(prev_state & 1) != 0", "prev_state & 1"},
	{"sched", "sched_switch", "prev_state", "prev_state != 0"},
	{"sched", "sched_switch", "prev_prio", "prev_prio != 100"},
	{"sched", "sched_switch", "!(next_tid == 0)", "!(next_pid == 0)"},
	{"sched", "sched_switch", "$ctx.procname == \"kw*\" && $ctx.cpu_id == 1 && $ctx.vtid > 100",
         "((COMM ~ \"kw*\" && CPU == 1) && common_pid > 100)"},
	{"syscalls", "sys_exit_getpid", "ret == -1", "ret == -1"},
	{"syscalls", "sys_exit_getpid", "ret >= 0x10", "ret >= 16"},
	{"syscalls", "sys_exit_getpid", "ret == +5", "ret == 5"},
	{"syscalls", "sys_enter_openat", "flags & 64 && mode == 0644", "(flags & 64 && mode == 420)"},
	{"syscalls", "sys_enter_openat", "dfd == 3", "dfd == 3"},
	// dfd is an int in an unsigned long: its raw value zero- or sign-extended.
	{"syscalls", "sys_enter_openat", "dfd == -100", "(dfd == 4294967196 || dfd == 18446744073709551516)"},
	{"syscalls", "sys_enter_openat", "dfd != -100", "!((dfd == 4294967196 || dfd == 18446744073709551516))"},
	{"syscalls", "sys_enter_openat", "dfd < 0",
         "((dfd >= 2147483648 && dfd <= 4294967295) || dfd >= 18446744071562067968)"},
	{"syscalls", "sys_enter_openat", "dfd >= 3", "(dfd >= 3 && dfd <= 2147483647)"},
	{"syscalls", "sys_enter_openat", "-1 < dfd", "dfd <= 2147483647"},
	{"syscalls", "sys_enter_openat", "flags == -1", "(flags == 4294967295 || flags == 18446744073709551615)"},
};

struct Refused {
	const char *system;
	const char *event;
	const char *expression;
	const char *message; // part of it
	size_t position;
};

const Refused kRefusals[] = {
	{"sched", "sched_switch", "prev_prio + 1 < 20", "cannot compute '+'", 10},
	{"sched", "sched_switch", "prev_tid == next_tid", "not two fields", 9},
	{"sched", "sched_switch", "1 == 2", "neither side of '==' is a field", 2},
	{"sched", "sched_switch", "prio == 1", "no field 'prio' in this event (it has prev_comm, prev_tid", 0},
	{"sched", "sched_switch", "prev_comm < \"a\"", "strings compare with == and != only", 10},
	{"sched", "sched_switch", "prev_comm == 3", "'prev_comm' is a string", 13},
	{"sched", "sched_switch", "prev_tid == \"x\"", "'prev_tid' is a number", 12},
	{"sched", "sched_switch", "prev_comm == \"a?*\"", "would read '?' and '[' as wildcards", 13},
	{"sched", "sched_switch", "prev_comm == \"a\\*b*\"", "a literal '*' beside a wildcard", 13},
	{"sched", "sched_switch", "prev_comm == \"a\\\"b\"", "cannot hold quotes", 13},
	{"sched", "sched_switch", "prev_prio & 1", "shifted by -100", 10},
	{"sched", "sched_switch", "$ctx.vpid == 1", "see the thread, not its process", 0},
	{"sched", "sched_switch", "prev_tid == 1.5", "compare it with an integer constant", 12},
	{"sched", "sched_switch", "prev_comm", "not a number", 0},
	{"sched", "sched_switch", "7", "a constant alone", 0},
	{"sched", "sched_switch", "-prev_tid < 0", "cannot compute '-'", 0},
	{"sched", "sched_switch", "prev_tid == 1 << 2", "cannot compute '<<'", 14},
	{"sched", "sched_switch", "prev_tid ==", "", 11}, // the parser's own error
	{"sched", "sched_process_fork", "parent_pid == 1", "computed by Tracery", 0},
	{"syscalls", "sys_enter_openat", "mode == -1", "'mode' is unsigned", 8},               // umode_t
	{"syscalls", "sys_enter_openat", "dfd == 4294967196", "out of the range of 'dfd'", 7}, // an int
	{"syscalls", "sys_enter_openat", "dfd > 2147483647", "never greater", 4},
};

} // namespace

TEST(KernelFilter, Translations)
{
	for (const Translation &t : kTranslations) {
		filter::Error error{"", 0};
		const std::optional<std::string> text =
			filter::kernel_filter(t.expression, fields_of(t.system, t.event), &error);
		ASSERT_TRUE(text.has_value()) << t.expression << ": " << error.message;
		EXPECT_EQ(*text, t.kernel) << t.expression;
	}
}

TEST(KernelFilter, RefusalsSayWhatAndWhere)
{
	for (const Refused &r : kRefusals) {
		filter::Error error{"", 0};
		const std::optional<std::string> text =
			filter::kernel_filter(r.expression, fields_of(r.system, r.event), &error);
		ASSERT_FALSE(text.has_value()) << r.expression << " -> " << *text;
		EXPECT_NE(error.message.find(r.message), std::string::npos) << r.expression << ": " << error.message;
		EXPECT_EQ(error.position, r.position) << r.expression << ": " << error.message;
	}
	// As users see it: the expression and a caret under the part refused.
	filter::Error error{"", 0};
	ASSERT_FALSE(filter::kernel_filter("prev_tid == 1 && prev_prio * 2 > 3", fields_of("sched", "sched_switch"),
	                                   &error));
	EXPECT_EQ(filter::render_error("prev_tid == 1 && prev_prio * 2 > 3", error),
	          "the kernel cannot compute '*': its filters compare a field with a constant\n"
	          "  prev_tid == 1 && prev_prio * 2 > 3\n"
	          "                             ^");
}

TEST(KernelFilter, LongFiltersAreRefused)
{
	std::string expression = "prev_tid == 1";
	while (expression.size() < 2 * filter::kMaxKernelFilter)
		expression += " || prev_tid == 1";
	filter::Error error{"", 0};
	EXPECT_FALSE(filter::kernel_filter(expression, fields_of("sched", "sched_switch"), &error));
	EXPECT_NE(error.message.find("more than 4096"), std::string::npos) << error.message;
}

// The kernel takes each translation on the live event: what it shows in
// the filter file is its own rendering, never "none".
TEST(KernelFilterRoot, TheKernelTakesEveryTranslation)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	const auto before = test_support::global_settings(root);
	{
		Instance inst(root, instance_name(::getpid(), "filter-test"));
		for (const Translation &t : kTranslations) {
			const std::string event = std::string(t.system) + "/" + t.event;
			const EventFormat live =
				parse_event_format(read_control(root + "/events/" + event + "/format"), t.system);
			filter::Error error{"", 0};
			const std::optional<std::string> text =
				filter::kernel_filter(t.expression, filter_fields(make_event_class(live, 0)), &error);
			ASSERT_TRUE(text.has_value()) << t.expression << ": " << error.message;
			const std::string file = inst.file("events/" + event + "/filter");
			EXPECT_NO_THROW(write_control(file, *text)) << *text;
			EXPECT_NE(read_control(file), "none\n") << *text;
			write_control(file, "0"); // cleared
			EXPECT_EQ(read_control(file), "none\n");
		}
		inst.remove();
	}
	EXPECT_EQ(test_support::global_settings(root), before);
}

// A signed argument compared as its C type says, on the live kernel:
// `dfd == -100` keeps openat(AT_FDCWD, ...) whether the caller's register
// held -100 zero-extended (an int) or sign-extended (a long), and not
// openat(5, ...).
TEST(KernelFilterRoot, SignedArgumentSelectsAsDeclared)
{
	std::string why;
	const std::string root = test_support::tracefs_for_tests(why);
	if (root.empty())
		GTEST_SKIP() << why;
	const auto before = test_support::global_settings(root);
	{
		Instance inst(root, instance_name(::getpid(), "filter-signed"));
		const EventFormat live =
			parse_event_format(read_control(root + "/events/syscalls/sys_enter_openat/format"), "syscalls");
		filter::Error error{"", 0};
		const std::optional<std::string> text =
			filter::kernel_filter("dfd == -100", filter_fields(make_event_class(live, 0)), &error);
		ASSERT_TRUE(text.has_value()) << error.message;
		write_control(inst.file("events/syscalls/sys_enter_openat/filter"), *text);
		const pid_t self[] = {::getpid()};
		inst.set_event_pids(self, false);
		inst.enable_event({"syscalls", "sys_enter_openat"});
		inst.set_tracing_on(true);
		const char *missing = "/nonexistent/tracery-filter-signed";
		::syscall(SYS_openat, static_cast<int>(AT_FDCWD), missing, O_RDONLY);  // zero-extended
		::syscall(SYS_openat, static_cast<long>(AT_FDCWD), missing, O_RDONLY); // sign-extended
		::syscall(SYS_openat, 5, missing, O_RDONLY);
		inst.set_tracing_on(false);
		const std::string trace = read_control(inst.file("trace"));
		// The calls on `missing` (setting tracing_on is an openat too).
		char pointer[64];
		std::snprintf(pointer, sizeof pointer, "filename: %#lx,", reinterpret_cast<unsigned long>(missing));
		size_t calls = 0;
		for (size_t at = trace.find(pointer); at != std::string::npos; at = trace.find(pointer, at + 1))
			++calls;
		EXPECT_EQ(calls, 2u) << trace;
		inst.remove();
	}
	EXPECT_EQ(test_support::global_settings(root), before);
}
