// analysis/model/trace_env.cpp — a trace's process from its env (see
// trace_env.hpp).
#include "analysis/model/trace_env.hpp"

#include "ctf/metadata.hpp"

#include <climits>
#include <string>
#include <variant>

namespace tracery::analysis {

EnvProcess env_process(const ctf::reader::TraceClass &trace)
{
	EnvProcess p;
	if (const auto *v = trace.env_value("vpid"); v && std::holds_alternative<int64_t>(*v))
		p.pid = std::get<int64_t>(*v);
	if (const auto *v = trace.env_value("procname"); v && std::holds_alternative<std::string>(*v))
		p.procname = std::get<std::string>(*v);
	return p;
}

std::vector<int64_t> tracked_processes(const ctf::reader::TraceClass &trace)
{
	std::vector<int64_t> pids;
	for (const char *attribute : {"pid", "vpid"}) {
		const auto *v = trace.env_value(std::string(ctf::kTrackedEnvPrefix) + attribute);
		if (!v || !std::holds_alternative<std::string>(*v))
			continue;
		// "1234,5678": decimal pids (at most INT32_MAX), anything else skipped
		int64_t pid = 0;
		bool digits = false;
		for (const char c : std::get<std::string>(*v) + ',') {
			if (c >= '0' && c <= '9' && pid <= INT32_MAX) {
				pid = pid * 10 + (c - '0');
				digits = true;
				continue;
			}
			if (c == ',' && digits && pid > 0 && pid <= INT32_MAX && pids.size() < kMaxTracked)
				pids.push_back(pid);
			if (c == ',') {
				pid = 0;
				digits = false;
			} else
				pid = INT64_MAX; // not a pid: skipped up to the next comma
		}
	}
	return pids;
}

} // namespace tracery::analysis
