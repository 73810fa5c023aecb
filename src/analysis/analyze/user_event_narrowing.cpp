// analysis/analyze/user_event_narrowing.cpp — whether a user event is within
// the narrowing (see user_event_narrowing.hpp).
#include "analysis/analyze/user_event_narrowing.hpp"

#include "analysis/model/trace_env.hpp"

namespace tracery::analysis {

bool UserEventNarrowing::counts(const ctf::reader::Item &event)
{
	if (!narrowing_.narrows())
		return true;
	if (!narrowing_.time_in(event.ns) || !narrowing_.cpu_in(cpu_of_(event)))
		return false;
	if (!narrowing_.options().by_task())
		return true;
	const Fields &f = fields_.get(event, [&] {
		return Fields{find_context_field(event, "vpid"), find_context_field(event, "vtid"),
		              find_context_field(event, "procname")};
	});
	const EnvProcess env = env_process(event.stream->trace().cls);
	std::optional<int64_t> pid = int_field(event, f.vpid);
	if (!pid)
		pid = env.pid;
	std::string_view procname = text_field(event, f.procname);
	if (procname.empty())
		procname = env.procname;
	return narrowing_.task_in(int_field(event, f.vtid), pid, procname);
}

} // namespace tracery::analysis
