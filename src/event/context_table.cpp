// The look-ups of the context table: see context_table.hpp (and context.hpp
// for the names of a stream's contexts).
#include "event/context_table.hpp"

#include "base/perf_counter.hpp"
#include "event/context.hpp"

#include <unistd.h>

namespace tracery::event {

std::optional<size_t> find_user_context(std::string_view name) noexcept
{
	for (size_t i = 0; i < kUserContexts.size(); ++i)
		if (kUserContexts[i].name == name)
			return i;
	return std::nullopt;
}

std::vector<ContextListing> context_listing()
{
	std::vector<ContextListing> out;
	for (std::string_view name : {"vpid", "vtid", "procname"})
		out.push_back({name, kUserDomain});
	for (const UserContext &c : kUserContexts)
		out.push_back({c.name, kUserDomain});
	for (std::string_view name : kKernelContextNames) {
		bool found = false;
		for (ContextListing &l : out)
			if (l.name == name) {
				l.domains |= kKernelDomain;
				found = true;
			}
		if (!found)
			out.push_back({name, kKernelDomain});
	}
	return out;
}

bool set_user_context(ContextOptions &o, std::string_view name)
{
	if (name == "vpid")
		o.vpid = true;
	else if (name == "vtid")
		o.vtid = true;
	else if (name == "procname")
		o.procname = true;
	else if (const auto i = find_user_context(name))
		o.more |= UserContextSet{1} << *i;
	else
		return false;
	return true;
}

std::string perf_counters_unavailable(const ContextOptions &o)
{
	for (size_t i = 0; i < kUserContexts.size(); ++i) {
		const UserContext &c = kUserContexts[i];
		if (!(o.more >> i & 1) || c.kind != UserContextKind::perf_counter)
			continue;
		const int fd = base::open_thread_counter(c.perf_type, c.perf_config);
		if (fd < 0)
			return std::string(c.name) + " cannot be counted here: " + base::counter_open_error(fd);
		close(fd);
	}
	return "";
}

std::vector<std::string> context_names(const ContextOptions &o)
{
	std::vector<std::string> out;
	if (o.vpid)
		out.emplace_back("vpid");
	if (o.vtid)
		out.emplace_back("vtid");
	if (o.procname)
		out.emplace_back("procname");
	for (size_t i = 0; i < kUserContexts.size(); ++i)
		if (o.more >> i & 1)
			out.emplace_back(kUserContexts[i].name);
	return out;
}

} // namespace tracery::event
