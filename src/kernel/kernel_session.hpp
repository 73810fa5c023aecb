// kernel/kernel_session.hpp — the kernel side of one tracing session: its
// tracefs instance, the events it enables, its per-CPU readers and its CTF
// trace in OUTPUT/kernel.
//
// start(): creates the instance (tracery-PID-SESSION), sets its trace clock
// to the user traces' (x86-tsc when they count TSC cycles, mono for
// nanoseconds), its buffer size and overwrite mode, its pid scoping, enables
// the tracepoints and system calls, writes the metadata, starts the readers
// (their tids excluded), turns tracing on and writes the state dump.
// stop(): tracing off, every page drained, each CPU's exact lost total
// written, the streams closed. destroy(): the instance removed (also done
// by the destructor, ignoring errors). Every tracefs write is inside the
// instance.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/tick_scale.hpp"
#include "clock/trace_clock.hpp"
#include "ctf/uuid.hpp"
#include "kernel/cpu_readers.hpp"
#include "kernel/kernel_trace.hpp"
#include "kernel/tracefs.hpp"

namespace tracery::kernel {

struct KernelSessionConfig {
	std::string session_name; // env.trace_name; names the instance unless instance_label does
	// The instance is tracery-PID-LABEL (instance_name()); "": the session
	// name (a daemon whose users name their sessions independently makes
	// it unique with the owner).
	std::string instance_label;
	std::string output;                   // the session's OUTPUT: the trace goes to OUTPUT/kernel
	std::vector<std::string> tracepoints; // patterns of match_tracepoints() ("sched_switch", "irq:*")
	std::vector<std::string> syscalls;    // NAME of syscalls:sys_enter_NAME / sys_exit_NAME
	bool all_syscalls = false;
	std::vector<pid_t> pids; // empty: every process
	bool follow_children = true;
	// The per-CPU buffer: subbuf_size * num_subbuf bytes (0: the kernel's
	// default size).
	uint64_t subbuf_size = 0;
	uint64_t num_subbuf = 0;
	bool overwrite = false; // snapshot sessions: the newest pages are kept
	// The trace's files (OUTPUT/kernel and everything in it) are made and
	// written with these filesystem credentials (setfsuid/setfsgid: a root
	// daemon writes a user's trace as that user, following no link the user
	// could not); tracefs is read and written with the process's own.
	// (uid_t)-1: the process's own for both.
	uid_t file_uid = static_cast<uid_t>(-1);
	gid_t file_gid = static_cast<gid_t>(-1);
	// The kernel trace's own UUID (another than the user trace's: readers
	// merge traces of one UUID), and the clock class of the user trace,
	// written identically: its identity (the user trace's UUID or its
	// clock_uuid), what it counts and its scale.
	ctf::Uuid trace_uuid;
	ctf::Uuid clock_uuid;
	clock::TickUnit tick_unit = clock::TickUnit::ns;
	base::TickScale clock_scale;
};

// The instance's trace clock for a tick unit: "x86-tsc" or "mono".
const char *trace_clock_for(clock::TickUnit unit) noexcept;

class KernelSession {
public:
	// Checks the patterns and names against the running kernel's tracepoints
	// (tracefs at `tracefs_root`). Throws std::invalid_argument naming a
	// pattern that matches nothing or a system call this kernel lacks,
	// TracefsError.
	KernelSession(std::string tracefs_root, KernelSessionConfig config);
	~KernelSession(); // stop() and destroy(), ignoring errors
	KernelSession(const KernelSession &) = delete;
	KernelSession &operator=(const KernelSession &) = delete;

	// Throws TracefsError, FormatError, std::system_error; the instance is
	// removed again on failure.
	void start();
	// Throws std::runtime_error if a reader failed (its message), after
	// closing everything. Idempotent.
	void stop();
	// Removes the instance. Throws TracefsError. Idempotent.
	void destroy();

	const std::vector<Tracepoint> &events() const noexcept { return events_; }
	std::string trace_dir() const { return config_.output + "/kernel"; }
	std::string instance_path() const { return instance_ ? instance_->path() : ""; }
	// Counts of the trace written (after stop(): final).
	KernelTraceCounts counts() const;

private:
	std::string root_;
	KernelSessionConfig config_;
	std::vector<Tracepoint> events_;
	std::optional<Instance> instance_;
	std::unique_ptr<KernelTrace> trace_;
	std::unique_ptr<CpuReaders> readers_;
	std::vector<uint32_t> cpus_;
};

} // namespace tracery::kernel
