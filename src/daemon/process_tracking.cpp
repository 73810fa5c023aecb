// The inclusion sets of `track` and `untrack`: see process_tracking.hpp.
#include "daemon/process_tracking.hpp"

#include <climits>
#include <stdexcept>

namespace tracery::daemon {

namespace {

bool is_id_of_user_or_group(ProcessAttr a)
{
	return a == ProcessAttr::uid || a == ProcessAttr::vuid || a == ProcessAttr::gid || a == ProcessAttr::vgid;
}

// The largest value an attribute takes: pids are positive int32, user and
// group ids anything but (uid_t)-1, which means "no id".
uint64_t max_of(ProcessAttr a) { return is_id_of_user_or_group(a) ? UINT32_MAX - 1 : INT32_MAX; }

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

ProcessTracking::ProcessTracking(std::string domain, std::vector<ProcessAttr> attrs) : domain_(std::move(domain))
{
	for (ProcessAttr a : attrs)
		sets_.push_back({a, true, {}});
}

ProcessTracking::Set &ProcessTracking::set_of(const std::string &attribute)
{
	std::string known;
	for (Set &s : sets_) {
		if (attribute == attr_name(s.attr))
			return s;
		known += std::string(known.empty() ? "" : ", ") + "--" + attr_name(s.attr);
	}
	throw std::invalid_argument("the " + domain_ + " domain does not track '" + attribute + "': use " + known);
}

void ProcessTracking::change(Set &set, const control::TrackingChange &c, bool untrack)
{
	const char *name = attr_name(set.attr);
	if (c.all) {
		if (!c.values.empty())
			throw std::invalid_argument(std::string("--all --") + name + " takes no values");
		set.all = !untrack;
		set.values.clear();
		return;
	}
	if (c.values.empty())
		throw std::invalid_argument(std::string("no value given for --") + name + ": give ids, or --all");
	for (uint64_t v : c.values)
		if (v > max_of(set.attr) || (v == 0 && !is_id_of_user_or_group(set.attr)))
			throw std::invalid_argument(std::string("bad ") + name + " " + std::to_string(v) + ": give " +
			                            (is_id_of_user_or_group(set.attr) ? "an id below 4294967295"
			                                                              : "a process id above 0"));
	if (untrack) {
		for (uint64_t v : c.values)
			if (set.all || !set.values.count(v))
				throw std::invalid_argument(std::string(name) + " " + std::to_string(v) +
				                            " is not tracked" +
				                            (set.all ? std::string(" (every ") + name +
				                                               " is: untrack --all first, or track only "
				                                               "the ones to keep)"
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
		throw std::invalid_argument(std::string("too many tracked ") + name + "s: at most " +
		                            std::to_string(kMaxValues));
}

void ProcessTracking::apply(const std::vector<control::TrackingChange> &changes, bool untrack)
{
	if (changes.empty())
		throw std::invalid_argument("nothing to " + std::string(untrack ? "untrack" : "track") +
		                            ": give --vpid, --vuid, --vgid (ids, or --all)");
	std::vector<Set> changed = sets_; // applied to a copy: all or nothing
	for (const control::TrackingChange &c : changes) {
		Set *target = nullptr;
		set_of(c.attribute); // throws for an attribute the domain does not have
		for (Set &s : changed)
			if (c.attribute == attr_name(s.attr))
				target = &s;
		change(*target, c, untrack);
	}
	sets_ = std::move(changed);
}

bool ProcessTracking::includes(ProcessAttr a, uint64_t v) const
{
	for (const Set &s : sets_)
		if (s.attr == a)
			return s.all || s.values.count(v);
	return true; // not an attribute of the domain: it does not narrow it
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
