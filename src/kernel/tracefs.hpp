// kernel/tracefs.hpp — the kernel's tracing file system: finding (or
// mounting) it, a private ring-buffer instance per session, control files,
// and the lists of tracepoints and system calls.
//
// Every file access of the kernel component goes through here. Nothing in
// this file writes a global tracefs setting or touches the global buffer: all
// writes are inside an Instance's directory (ROOT/instances/NAME/...). Errors
// are TracefsError, whose message names the file and the errno by its name
// ("EACCES (Permission denied)"), in one line a user can act on.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.hpp"

namespace tracery::kernel {

class TracefsError : public std::runtime_error {
public:
	TracefsError(const std::string &what, int err) : std::runtime_error(what), err_(err) {}
	int error() const noexcept { return err_; } // the errno, 0 if none
private:
	int err_;
};

// "EACCES (Permission denied)".
std::string errno_text(int err);

inline constexpr const char *kTracefsPath = "/sys/kernel/tracing";
inline constexpr const char *kDebugfsTracingPath = "/sys/kernel/debug/tracing";

struct Tracefs {
	std::string root;     // the directory tracefs is mounted at
	bool mounted = false; // true if open_tracefs() mounted it now (say so)
};

// Where tracefs is: /sys/kernel/tracing if tracefs is mounted there, else
// /sys/kernel/debug/tracing (debugfs's automount of it); if neither, and
// mount_if_absent, mounts tracefs at /sys/kernel/tracing ("mount -t tracefs
// nodev /sys/kernel/tracing"). Throws TracefsError with a line saying why
// kernel tracing is impossible (no tracefs in this kernel, mount refused).
Tracefs open_tracefs(bool mount_if_absent = true);

// Reads a whole control file. Throws TracefsError.
std::string read_control(const std::string &path);
// Writes `value` to a control file in one write() (O_TRUNC: replaces what
// the file holds), or appends it (O_APPEND: set_event_notrace_pid keeps its
// pids). Throws TracefsError naming the file, the value and the errno.
void write_control(const std::string &path, std::string_view value, bool append = false);

// A tracepoint: events/SYSTEM/NAME.
struct Tracepoint {
	std::string system;
	std::string name;

	std::string full_name() const { return system + ":" + name; }
	friend bool operator==(const Tracepoint &, const Tracepoint &) = default;
	friend auto operator<=>(const Tracepoint &, const Tracepoint &) = default;
};

// Every tracepoint of ROOT/available_events, sorted.
std::vector<Tracepoint> list_tracepoints(const std::string &root);
// The system calls with both an entry and an exit tracepoint
// (syscalls:sys_enter_NAME and syscalls:sys_exit_NAME), as NAME, sorted.
std::vector<std::string> list_syscalls(std::span<const Tracepoint> tracepoints);
// The tracepoints `pattern` names: "NAME" or "SYSTEM:NAME", each part a glob
// ('*' any run of characters; "irq:*", "sched_*"); a pattern without ':'
// matches the name in any system.
std::vector<Tracepoint> match_tracepoints(std::span<const Tracepoint> tracepoints, std::string_view pattern);

// Instance names: "tracery-PID-SESSION", PID the creating process, SESSION
// the session name with every byte outside [A-Za-z0-9_.-] as '_'. A later
// process finds an instance whose creator is gone by that prefix.
inline constexpr std::string_view kInstancePrefix = "tracery-";
std::string instance_name(pid_t owner, std::string_view session);
// The instances named by instance_name() whose owner is no longer running
// (an owner killed with SIGKILL leaves its instance behind), sorted.
std::vector<std::string> stale_instances(const std::string &root);
// Stops tracing in ROOT/instances/NAME, then removes it: true. False when
// the instance was already gone or went while this ran (another daemon
// removing the same stale instance). Throws TracefsError.
bool remove_instance(const std::string &root, const std::string &name);

// A private tracefs instance: its own ring buffer, trace clock, enabled
// events and pid filters. Created by mkdir, removed by rmdir.
class Instance {
public:
	// mkdir ROOT/instances/NAME. Throws TracefsError (EEXIST: an instance
	// of that name exists; EACCES/EPERM: kernel tracing needs root).
	Instance(std::string root, std::string name);
	~Instance(); // remove(), ignoring errors: call remove() to see them
	Instance(Instance &&other) noexcept;
	Instance &operator=(Instance &&other) = delete;
	Instance(const Instance &) = delete;
	Instance &operator=(const Instance &) = delete;

	// tracing_on = 0, then rmdir (retried a few times on EBUSY while a
	// reader closes its files). Throws TracefsError. Idempotent.
	void remove();

	const std::string &root() const noexcept { return root_; }
	const std::string &name() const noexcept { return name_; }
	const std::string &path() const noexcept { return path_; }
	std::string file(std::string_view relative) const { return path_ + "/" + std::string(relative); }

	// The trace clocks this kernel offers, and the instance's current one.
	std::vector<std::string> clocks() const;
	std::string clock() const;
	// Writing trace_clock clears the instance's buffer: before tracing.
	// Throws TracefsError naming the clocks offered if `clock` is not one.
	void set_clock(std::string_view clock) const;
	// Per-CPU buffer size. Throws TracefsError for 0.
	void set_buffer_size_kb(uint64_t kb) const;
	uint64_t buffer_size_kb() const;
	void enable_event(const Tracepoint &tp, bool enable = true) const;
	// events/SYSTEM/NAME/filter: a kernel filter (filter/kernel_filter.hpp), ""
	// for none. Throws TracefsError (EINVAL: the kernel refused it).
	void set_event_filter(const Tracepoint &tp, const std::string &filter) const;
	// Scopes events to these pids (empty: all), and with follow_children
	// (options/event-fork) to their descendants.
	void set_event_pids(std::span<const pid_t> pids, bool follow_children) const;
	// While tracing: from the tracked pids `before` to `after` (both
	// non-empty lists: changes from or to every process are
	// set_event_pids()). Added pids are appended; with removed ones, the
	// list the kernel has now (the descendants it added with event-fork
	// included) is written back without them, which leaves the list empty,
	// so every process traced, for the instant between the file's opening
	// (O_TRUNC) and its write.
	void change_event_pids(std::span<const pid_t> before, std::span<const pid_t> after) const;
	// The pids set_event_pid lists now (those the kernel added with
	// event-fork included), and appending to that list.
	std::vector<pid_t> event_pids() const;
	void add_event_pids(std::span<const pid_t> pids) const;
	// Excludes these thread ids from the trace (the readers' own threads),
	// keeping those excluded already.
	void add_notrace_pids(std::span<const pid_t> tids) const;
	// Empties that list (after the readers have ended: their tids may be
	// another process's later).
	void clear_notrace_pids() const;
	void set_tracing_on(bool on) const;
	// options/overwrite: a full buffer overwrites its oldest page (true) or
	// drops new events (false).
	void set_overwrite(bool overwrite) const;
	// The CPUs of per_cpu/ (cpuN), sorted.
	std::vector<uint32_t> cpus() const;
	// per_cpu/cpuN/stats.
	std::string cpu_stats(uint32_t cpu) const;
	// ROOT/instances/NAME/per_cpu/cpuN/trace_pipe_raw, O_RDONLY|O_NONBLOCK.
	base::Fd open_cpu_pipe(uint32_t cpu) const;

private:
	std::string root_;
	std::string name_;
	std::string path_;
};

} // namespace tracery::kernel
