// analysis/model/trace_env.hpp — what a trace's env says of its events'
// process: a per-process buffer's trace (LTTng-UST's, Tracery's) names its
// process (vpid, procname), the process of its events that carry no vpid or
// procname context.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ctf/reader/trace_class.hpp"

namespace tracery::analysis {

struct EnvProcess {
	std::optional<int64_t> pid; // the env's vpid (an integer)
	std::string_view procname;  // the env's procname (text; a view into the trace class)
};

EnvProcess env_process(const ctf::reader::TraceClass &trace);

} // namespace tracery::analysis
