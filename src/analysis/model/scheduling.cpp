// analysis/model/scheduling.cpp — the task running on each CPU (see
// scheduling.hpp).
#include "analysis/model/scheduling.hpp"

namespace tracery::analysis {

void RunningTasks::on_switch(int64_t cpu, int64_t next_tid)
{
	if (next_tid != 0)
		current_[cpu] = next_tid;
	else
		current_.erase(cpu);
}

std::optional<int64_t> RunningTasks::running(int64_t cpu) const
{
	const auto c = current_.find(cpu);
	return c == current_.end() ? std::nullopt : std::optional<int64_t>(c->second);
}

} // namespace tracery::analysis
