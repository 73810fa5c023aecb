// kernel/tracefs_testing.hpp — for the kernel component's tests: tracefs
// when the test may use it (root, tracefs present or mountable), else why
// not (the test skips with that line); and the global tracefs settings, read
// before and after a test to show it changed none of them.
#pragma once

#include "kernel/tracefs.hpp"

#include <unistd.h>

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
