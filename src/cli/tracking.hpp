// `tracery track` and `untrack`, both domains: the process attribute options
// (--pid, --vpid, --uid, --vuid, --gid, --vgid, each with ids or names, or
// bare with --all), the request they make (control::Tracking), and how the
// rules are shown (the reply, and `status`), as lttng list shows trackers.
#pragma once

#include "control/messages.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tracery::cli {

// The process attributes, each an option of track and untrack.
struct Attribute {
	const char *name;
	const char *title; // as lttng list shows it
	bool kernel_only;
	enum { process, user, group } kind;
};

inline constexpr Attribute kAttributes[] = {
	{"pid", "Process IDs", true, Attribute::process}, {"vpid", "Virtual process IDs", false, Attribute::process},
	{"uid", "User IDs", true, Attribute::user},       {"vuid", "Virtual user IDs", false, Attribute::user},
	{"gid", "Group IDs", true, Attribute::group},     {"vgid", "Virtual group IDs", false, Attribute::group},
};

struct TrackingArgs {
	// Each attribute option given: its name ("vpid") and its values as
	// typed, comma-separated lists, none for a bare option (with --all).
	std::vector<std::pair<std::string, std::vector<std::string>>> given;
	bool all = false;                    // --all
	std::optional<bool> follow_children; // track -k --pid: --follow-children / --no-follow-children
};

// The request: ids checked, user and group names resolved here. `kernel`:
// -k (pid, vpid, uid, vuid, gid, vgid), else user space (vpid, vuid, vgid).
// Throws CliError (one line) for what cannot be right.
control::Tracking tracking_request(const TrackingArgs &args, bool kernel, bool untrack, std::string session);

// The rules of one domain, one line per attribute under a heading.
void print_tracking(const control::DomainTracking &tracking, const char *indent);

} // namespace tracery::cli
