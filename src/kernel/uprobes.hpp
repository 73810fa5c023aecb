// kernel/uprobes.hpp — dynamic probe events in tracefs's uprobe_events.
//
// uprobe_events is global: a line there defines an event (GROUP/EVENT) that
// every instance sees, and enabling it in one instance traces it there
// only. Tracery adds its lines in groups of its own, tracery_PID_LABEL (the
// daemon's pid, a label unique within it: two sessions probing the same
// function have two events), appends them (never truncates the file, which
// would remove everybody's probes), and removes each line it added:
// UprobeEvent removes its event when it goes (an event enabled in an
// instance cannot be removed: remove the instance, or disable the event in
// it, first). A daemon killed with SIGKILL leaves its groups behind:
// stale_uprobe_groups() finds them (their PID is gone) and
// remove_uprobe_group() removes them, as with stale instances.
//
// A line: "p:GROUP/EVENT PATH:0xOFFSET[(0xREF_CTR)] ARG..." ("r:" for a
// return probe), PATH the file the kernel opens: a caller that opened the
// file itself (with a user's credentials) passes "/proc/self/fd/N", which
// the kernel resolves to that very file, as the process writing the line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/probe_site.hpp"
#include "kernel/tracefs.hpp"

namespace tracery::kernel {

inline constexpr std::string_view kUprobeGroupPrefix = "tracery_";

// "tracery_PID_LABEL"; LABEL's characters other than [A-Za-z0-9_] become
// '_'. tracefs names are at most 64 characters: a longer one is cut.
std::string uprobe_group(pid_t owner, std::string_view label);

// The uprobe_events line that defines GROUP/EVENT at `site` of `path`.
std::string uprobe_line(const std::string &group, const std::string &event, bool is_return, const std::string &path,
                        const ProbeSite &site);

// An event name tracefs takes: [A-Za-z_][A-Za-z0-9_]*, at most 64.
bool valid_event_name(std::string_view name);

class UprobeEvent {
public:
	// Appends `line` (uprobe_line()) to ROOT/uprobe_events. Throws
	// TracefsError holding the kernel's own reason (error_log) if refused.
	UprobeEvent(std::string root, std::string group, std::string event, const std::string &line);
	~UprobeEvent(); // remove(), ignoring errors
	UprobeEvent(UprobeEvent &&other) noexcept;
	UprobeEvent &operator=(UprobeEvent &&) = delete;
	UprobeEvent(const UprobeEvent &) = delete;
	UprobeEvent &operator=(const UprobeEvent &) = delete;

	// "-:GROUP/EVENT". Throws TracefsError (EBUSY: still enabled in an
	// instance). Idempotent.
	void remove();
	Tracepoint tracepoint() const { return {group_, event_}; }

private:
	std::string root_, group_, event_;
	bool defined_ = false;
};

// The kernel's hit count of every uprobe event (uprobe_profile: a hit is
// one execution of the probed instruction by any process, before the
// event's filter, pid filter or enabled state decides what is recorded).
// uprobe_profile names events without their group: its lines are paired
// with uprobe_events' by position, which both list in the same order; if
// the two disagree after a few reads (probes added or removed meanwhile),
// the map is empty. Throws TracefsError.
std::map<Tracepoint, uint64_t> uprobe_hits(const std::string &root);

// The groups of uprobe_events named tracery_PID_* whose PID is gone, sorted.
std::vector<std::string> stale_uprobe_groups(const std::string &root);
// Removes every event of GROUP from uprobe_events (each by its own line).
// Throws TracefsError.
void remove_uprobe_group(const std::string &root, const std::string &group);

} // namespace tracery::kernel
