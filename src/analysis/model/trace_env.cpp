// analysis/model/trace_env.cpp — a trace's process from its env (see
// trace_env.hpp).
#include "analysis/model/trace_env.hpp"

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

} // namespace tracery::analysis
