// analysis/read/narrowing.cpp — what stats and analyses count (see
// narrowing.hpp).
#include "analysis/read/narrowing.hpp"

#include <algorithm>

namespace tracery::analysis {

namespace {

template <class T, class V>
bool listed(const std::vector<T> &list, const V &value)
{
	return std::find(list.begin(), list.end(), value) != list.end();
}

} // namespace

void Narrowing::first_event(int64_t ns)
{
	if (resolved_)
		return;
	bounds_ = time_bounds(options_.begin, options_.end, ns);
	resolved_ = true;
}

bool Narrowing::cpu_in(std::optional<int64_t> cpu) const
{
	return options_.cpus.empty() || (cpu && listed(options_.cpus, *cpu));
}

bool Narrowing::task_in(std::optional<int64_t> tid, std::optional<int64_t> pid, std::string_view procname) const
{
	if (!options_.tids.empty() && !(tid && listed(options_.tids, *tid)))
		return false;
	if (!options_.pids.empty() && !(pid && listed(options_.pids, *pid)))
		return false;
	return options_.procnames.empty() || listed(options_.procnames, procname);
}

} // namespace tracery::analysis
