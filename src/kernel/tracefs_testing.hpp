// kernel/tracefs_testing.hpp — for the kernel component's tests: tracefs
// when the test may use it (root, tracefs present or mountable), else why
// not (the test skips with that line); and the global tracefs settings, read
// before and after a test to show it changed none of them; and the copies of
// this kernel's tracefs files kept as fixtures (testdata/events/).
#pragma once

#include "kernel/tracefs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tracery::kernel::test_support {

// The tracefs root, or "" with `why` set.
inline std::string tracefs_for_tests(std::string &why)
{
	if (::geteuid() != 0) {
		why = "kernel tracing tests need root (tracefs instances); skipped";
		return "";
	}
	try {
		return open_tracefs(true).root;
	} catch (const TracefsError &e) {
		why = std::string("no tracefs: ") + e.what() + "; skipped";
		return "";
	}
}

#ifdef TRACERY_KERNEL_TESTDATA // the tests that read fixtures define it (CMakeLists.txt)
// The fixture testdata/events/RELATIVE ("header_page", "sched/sched_switch/format"...).
inline std::string fixture(const std::string &relative)
{
	std::ifstream in(std::string(TRACERY_KERNEL_TESTDATA) + "/events/" + relative);
	EXPECT_TRUE(in) << relative;
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}
#endif

// The global files a kernel session must never write, with their contents.
inline std::vector<std::pair<std::string, std::string>> global_settings(const std::string &root)
{
	std::vector<std::pair<std::string, std::string>> out;
	for (const char *f : {"trace_clock", "buffer_size_kb", "tracing_on", "set_event", "set_event_pid",
	                      "set_event_notrace_pid", "current_tracer", "options/event-fork", "tracing_cpumask"})
		out.emplace_back(f, read_control(root + "/" + f));
	return out;
}

} // namespace tracery::kernel::test_support
