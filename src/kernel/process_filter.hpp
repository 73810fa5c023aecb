// kernel/process_filter.hpp — which threads a kernel session's tracked
// process attributes (`track -k --pid/--vpid/--uid/--vuid/--gid/--vgid`)
// select, computed from /proc: tracefs scopes events by thread id only
// (set_event_pid), so the attributes become a set of thread ids.
//
// As LTTng's trackers: the attributes are ANDed, each an OR of its values;
// uid and gid are a thread's real ids as the daemon's namespaces see them,
// vuid and vgid the same ids as the thread's own user namespace sees them
// (its uid_map, gid_map; an id it does not map is the overflow id 65534),
// pid the thread group id, vpid that id in the process's own pid namespace
// (the last of NStgid). With follow_children, a process matches pid when
// it or one of its ancestors (the PPid chain at the time it is evaluated)
// has one of the values.
//
// Pure functions of a /proc tree (`proc_root`: "/proc", or a fixture).
// What /proc says is read bounded (a status file of at most 8 KiB, map
// files of at most 340 lines, an ancestor chain of at most kMaxAncestors);
// a task that vanishes or whose files do not parse matches nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tracery::kernel {

struct ProcessRules {
	// nullopt: every value (the attribute does not narrow); else these
	// values, none if the set is empty.
	using Values = std::optional<std::set<uint64_t>>;
	Values pid, vpid, uid, vuid, gid, vgid;
	bool follow_children = true; // pid: the descendants of those processes too

	// No attribute narrows: every process.
	bool everyone() const;
	// Only pid narrows, to some pids: tracefs does it alone (set_event_pid
	// and, with follow_children, options/event-fork), without a watcher.
	bool pids_only() const;
	// A forked child matches exactly when its parent does (the child has
	// its parent's credentials and namespaces): true unless vpid narrows
	// (a child has its own) or pid narrows without follow_children. Then
	// options/event-fork adds the children of listed threads in the kernel.
	bool closed_under_fork() const;
	bool operator==(const ProcessRules &) const = default;
};

// A thread's ids, from TASK_DIR/status, uid_map and gid_map.
struct TaskIds {
	pid_t tid = 0, tgid = 0, ppid = 0;
	uint64_t vpid = 0, uid = 0, vuid = 0, gid = 0, vgid = 0;
};

inline constexpr uint64_t kOverflowId = 65534; // an id a user namespace does not map
inline constexpr int kMaxAncestors = 4096;

// The ids of the thread whose /proc directory is `task_dir` ("/proc/TID" or
// "/proc/PID/task/TID"). nullopt if it is gone or its files do not parse.
std::optional<TaskIds> read_task_ids(const std::string &task_dir);

// An id of the parent namespace as a map file (uid_map, gid_map: lines
// "INSIDE OUTSIDE COUNT") maps it inside; kOverflowId if it does not.
uint64_t map_id_inside(const std::string &map_text, uint64_t outside);

// Whether the thread with these ids is selected by `rules`; reads the
// ancestors' status files under `proc_root` for pid with follow_children.
bool task_matches(const ProcessRules &rules, const TaskIds &ids, const std::string &proc_root);

// Every thread under `proc_root` that `rules` select, sorted.
std::vector<pid_t> matching_tasks(const ProcessRules &rules, const std::string &proc_root);

// What set_event_pid must list for rules where only pid narrows
// (pids_only()): matching_tasks() (every thread of each listed process, and
// with follow_children of its descendants: tracefs filters by thread id, and
// event-fork adds only the children forked after a thread is listed) and the
// listed pids themselves (a process listed before it exists is traced when
// it does), sorted.
std::vector<pid_t> listed_process_tasks(const ProcessRules &rules, const std::string &proc_root);

} // namespace tracery::kernel
