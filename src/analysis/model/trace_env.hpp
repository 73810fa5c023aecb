// analysis/model/trace_env.hpp — what a trace's env says of its events'
// process: a per-process buffer's trace (LTTng-UST's, Tracery's) names its
// process (vpid, procname), the process of its events that carry no vpid or
// procname context; and which processes the session tracked (`track
// --pid`/`--vpid`: tracery_tracked_pid, tracery_tracked_vpid).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ctf/reader/trace_class.hpp"

namespace tracery::analysis {

struct EnvProcess {
	std::optional<int64_t> pid; // the env's vpid (an integer)
	std::string_view procname;  // the env's procname (text; a view into the trace class)
};

EnvProcess env_process(const ctf::reader::TraceClass &trace);

// The pids and vpids the trace's env says its session tracked, in the
// env's order (values that are not pids skipped; at most kMaxTracked).
inline constexpr size_t kMaxTracked = 8192;
std::vector<int64_t> tracked_processes(const ctf::reader::TraceClass &trace);

} // namespace tracery::analysis
