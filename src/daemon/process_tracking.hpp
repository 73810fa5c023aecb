// Which processes a session's events come from, in one domain: `track` and
// `untrack` as LTTng's process attribute trackers. Each attribute (pid, vpid,
// uid, vuid, gid, vgid: those of the domain) has an inclusion set, every
// value at first; a process is traced when each set includes its value.
// What a client sends is untrusted: the values are checked (ranges, at most
// kMaxValues per attribute), and a change that fails changes nothing.
#pragma once

#include "control/messages.hpp"
#include "ctf/metadata.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace tracery::daemon {

enum class ProcessAttr { pid, vpid, uid, vuid, gid, vgid };

// A process's ids: in the daemon's namespaces (pid, uid, gid) and in its own
// (vpid, vuid, vgid).
struct ProcessIds {
	uint64_t pid = 0, vpid = 0, uid = 0, vuid = 0, gid = 0, vgid = 0;
	uint64_t of(ProcessAttr a) const;
};

// The attribute's name on the command line and in messages ("vpid").
const char *attr_name(ProcessAttr a);

class ProcessTracking {
public:
	// The domain's name ("user", "kernel") and its attributes, in the order
	// its status lists them.
	ProcessTracking(std::string domain, std::vector<ProcessAttr> attrs);

	// Applies every change or none; throws std::invalid_argument (one line
	// naming the fix) for an attribute the domain does not have, a value out
	// of range, or (untrack) a value not tracked.
	void apply(const std::vector<control::TrackingChange> &changes, bool untrack);
	bool includes(const ProcessIds &ids) const;
	// Whether every process is traced (no rule narrows it).
	bool everyone() const;
	control::DomainTracking status() const;
	// The trace's env entries naming the processes tracked by pid or vpid
	// (ctf::tracked_processes_entry), one per attribute that narrows to
	// some; none when every process is traced.
	std::vector<ctf::EnvEntry> tracked_env() const;

	static constexpr size_t kMaxValues = 4096;

private:
	struct Set {
		ProcessAttr attr;
		bool all = true;
		std::set<uint64_t> values;
	};
	// The set of `attribute` among `sets` (sets_ or a copy); throws for one
	// the domain does not have.
	Set &set_of(std::vector<Set> &sets, const std::string &attribute) const;
	static void change(Set &set, const control::TrackingChange &c, bool untrack);
	std::string domain_;
	std::vector<Set> sets_;
};

} // namespace tracery::daemon
