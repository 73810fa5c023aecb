// analysis/model/syscalls.cpp — system calls paired per thread (see
// syscalls.hpp).
#include "analysis/model/syscalls.hpp"

#include <utility>

namespace tracery::analysis {

const SyscallTracker::Call *SyscallTracker::enter(int64_t tid, int64_t ns, int64_t cpu, std::string_view name)
{
	auto [where, added] = open_.try_emplace(tid);
	Call &c = where->second;
	const Call *abandoned = nullptr;
	if (!added) {
		std::swap(done_, c);
		abandoned = &done_;
	}
	c.tid = tid;
	c.cpu = cpu;
	c.entry_ns = ns;
	c.name = name;
	return abandoned;
}

const SyscallTracker::Call *SyscallTracker::exit(int64_t tid)
{
	const auto e = open_.find(tid);
	if (e == open_.end())
		return nullptr;
	std::swap(done_, e->second);
	open_.erase(e);
	return &done_;
}

void SyscallPairs::on_entry(int64_t ns, int64_t cpu, std::string_view call, std::optional<int64_t> tid)
{
	if (!tid)
		tid = running_.running(cpu);
	if (tid)
		calls_.enter(*tid, ns, cpu, call);
}

const SyscallTracker::Call *SyscallPairs::on_exit(int64_t cpu, std::optional<int64_t> tid)
{
	if (!tid)
		tid = running_.running(cpu);
	return tid ? calls_.exit(*tid) : nullptr;
}

} // namespace tracery::analysis
