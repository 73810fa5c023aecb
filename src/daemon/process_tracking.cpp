// The inclusion sets of `track` and `untrack`: see process_tracking.hpp.
#include "daemon/process_tracking.hpp"

#include <climits>
#include <stdexcept>

namespace tracery::daemon {

namespace {

bool is_user_or_group(ProcessAttr a)
{
	return a == ProcessAttr::uid || a == ProcessAttr::vuid || a == ProcessAttr::gid || a == ProcessAttr::vgid;
}

// The largest value an attribute takes: pids are positive int32, user and
// group ids anything but (uid_t)-1, which means "no id".
uint64_t max_of(ProcessAttr a) { return is_user_or_group(a) ? UINT32_MAX - 1 : INT32_MAX; }

} // namespace

uint64_t ProcessIds::of(ProcessAttr a) const
{
	switch (a) {
	case ProcessAttr::pid:
		return pid;
	case ProcessAttr::vpid:
		return vpid;
	case ProcessAttr::uid:
		return uid;
	case ProcessAttr::vuid:
		return vuid;
	case ProcessAttr::gid:
		return gid;
	case ProcessAttr::vgid:
		return vgid;
	}
	return 0;
}

const char *attr_name(ProcessAttr a)
{
	switch (a) {
	case ProcessAttr::pid:
		return "pid";
	case ProcessAttr::vpid:
		return "vpid";
	case ProcessAttr::uid:
		return "uid";
	case ProcessAttr::vuid:
		return "vuid";
	case ProcessAttr::gid:
		return "gid";
	case ProcessAttr::vgid:
		return "vgid";
	}
	return "?";
}

std::vector<ctf::EnvEntry> ProcessTracking::tracked_env() const
{
	std::vector<ctf::EnvEntry> env;
	for (const Set &s : sets_)
		if ((s.attr == ProcessAttr::pid || s.attr == ProcessAttr::vpid) && !s.all && !s.values.empty())
			env.push_back(ctf::tracked_processes_entry(attr_name(s.attr), s.values));
	return env;
}

ProcessTracking::ProcessTracking(std::string domain, std::vector<ProcessAttr> attrs) : domain_(std::move(domain))
{
	for (ProcessAttr a : attrs)
		sets_.push_back({a, true, {}});
}

ProcessTracking::Set &ProcessTracking::set_of(std::vector<Set> &sets, const std::string &attribute) const
{
	std::string known;
	for (Set &s : sets) {
		if (attribute == attr_name(s.attr))
			return s;
		known += std::string(known.empty() ? "" : ", ") + "--" + attr_name(s.attr);
	}
	throw std::invalid_argument("the " + domain_ + " domain does not track '" + attribute + "': use " + known);
}

void ProcessTracking::change(Set &set, const control::TrackingChange &c, bool untrack)
{
	const std::string name = attr_name(set.attr);
	if (c.all) {
		if (!c.values.empty())
			throw std::invalid_argument("--all --" + name + " takes no values");
		set.all = !untrack;
		set.values.clear();
		return;
	}
	if (c.values.empty())
		throw std::invalid_argument("no value given for --" + name + ": give ids, or --all");
	for (uint64_t v : c.values)
		if (v > max_of(set.attr) || (v == 0 && !is_user_or_group(set.attr)))
			throw std::invalid_argument(
				"bad " + name + " " + std::to_string(v) + ": give " +
				(is_user_or_group(set.attr) ? "an id between 0 and " : "a process id between 1 and ") +
				std::to_string(max_of(set.attr)));
	if (untrack) {
		for (uint64_t v : c.values)
			if (set.all || !set.values.count(v))
				throw std::invalid_argument(
					name + " " + std::to_string(v) + " is not tracked" +
					(set.all ? " (every " + name +
				                           " is: untrack --all first, or track only the ones to keep)"
				                 : ": see `tracery status`"));
		for (uint64_t v : c.values)
			set.values.erase(v);
		return;
	}
	if (set.all) {
		set.all = false;
		set.values.clear();
	}
	set.values.insert(c.values.begin(), c.values.end());
	if (set.values.size() > kMaxValues)
		throw std::invalid_argument("too many tracked " + name + "s: at most " + std::to_string(kMaxValues));
}

void ProcessTracking::apply(const std::vector<control::TrackingChange> &changes, bool untrack)
{
	if (changes.empty())
		throw std::invalid_argument(std::string("nothing to ") + (untrack ? "untrack" : "track") +
		                            ": name an attribute with its ids, or with --all");
	std::vector<Set> changed = sets_; // applied to a copy: all or nothing
	for (const control::TrackingChange &c : changes)
		change(set_of(changed, c.attribute), c, untrack);
	sets_ = std::move(changed);
}

bool ProcessTracking::includes(const ProcessIds &ids) const
{
	for (const Set &s : sets_)
		if (!s.all && !s.values.count(ids.of(s.attr)))
			return false;
	return true;
}

bool ProcessTracking::everyone() const
{
	for (const Set &s : sets_)
		if (!s.all)
			return false;
	return true;
}

control::DomainTracking ProcessTracking::status() const
{
	control::DomainTracking out;
	out.domain = domain_;
	for (const Set &s : sets_)
		out.rules.push_back({attr_name(s.attr), s.all, {s.values.begin(), s.values.end()}});
	return out;
}

} // namespace tracery::daemon
