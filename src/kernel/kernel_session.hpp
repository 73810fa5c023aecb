// kernel/kernel_session.hpp — the kernel side of one tracing session: its
// tracefs instance, the events it enables, its per-CPU readers and its CTF
// trace in OUTPUT/kernel.
//
// start(), the first time: creates the instance (tracery-PID-SESSION), sets
// its trace clock to the user traces' (x86-tsc when they count TSC cycles,
// mono for nanoseconds), its buffer size and overwrite mode, and writes the
// metadata. Every start then brings the instance's events and pid scoping
// to the configuration's (reconfigure() may have changed them since the
// last stop: new event classes are appended to the metadata), starts the
// readers (their tids excluded), turns tracing on and writes a state dump.
// reconfigure() while started changes the instance's events and pid
// scoping at once, new event classes appended to the metadata before their
// events are enabled (as LTTng's sessions do).
// stop(): tracing off, every page drained, each CPU's exact lost total
// written; the streams stay open for the next start, which continues them.
// destroy(): the streams closed, the instance removed (also done by the
// destructor, ignoring errors). Every tracefs write is inside the instance.
//
// Snapshot sessions (config.snapshot, with overwrite): nothing is read while tracing; the
// kernel buffer keeps its newest pages, and snapshot() reads them out into
// DIR/kernel (or the relay's copy of it), a trace of its own. Reading a tracefs buffer consumes it, and
// this kernel has no tracefs snapshot buffer (CONFIG_TRACER_SNAPSHOT): a
// kernel snapshot holds the newest events the buffer kept since the
// previous snapshot (or since the start).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/tick_scale.hpp"
#include "clock/trace_clock.hpp"
#include "ctf/metadata.hpp"
#include "ctf/uuid.hpp"
#include "filter/kernel_filter.hpp"
#include "kernel/bpf/syscall_events.hpp"
#include "kernel/bpf/user_strings.hpp"
#include "kernel/cpu_readers.hpp"
#include "kernel/kernel_context.hpp"
#include "kernel/kernel_trace.hpp"
#include "kernel/process_filter.hpp"
#include "kernel/tracefs.hpp"
#include "kernel/tracked_processes.hpp"
#include "kernel/uprobes.hpp"

namespace tracery::kernel {

struct ProbeConfig {
	std::string name; // the event of the first site; NAME_2, NAME_3 ... of the others
	bool is_return = false;
	std::string path; // as the kernel opens it ("/proc/self/fd/N": a file the caller holds open)
	std::vector<ProbeSite> sites;
};

struct KernelSessionConfig {
	std::string session_name; // env.trace_name; names the instance unless instance_label does
	// The instance is tracery-PID-LABEL (instance_name()); "": the session
	// name (a daemon whose users name their sessions independently makes
	// it unique with the owner).
	std::string instance_label;
	std::string output;                         // the session's OUTPUT: the trace goes to OUTPUT/kernel
	bool local = true;                          // written to OUTPUT/kernel (else only sent to `relay`)
	std::shared_ptr<consumer::RelayLink> relay; // the session's relay, if any: it gets the trace as kernel/
	uint64_t live_period_ns = 0;                // live sessions: idle CPUs' streams get a beacon each period
	std::string channel = "channel0";           // names the stream files, CHANNEL_CPU
	std::vector<std::string> tracepoints;       // patterns of match_tracepoints() ("sched_switch", "irq:*")
	std::vector<std::string> syscalls;          // NAME of syscalls:sys_enter_NAME / sys_exit_NAME
	bool all_syscalls = false;
	// Filter expressions (filter/parser.hpp) by rule: a pattern of
	// `tracepoints`, syscall_rule(NAME) for one of `syscalls`,
	// syscall_rule("*") for all_syscalls. The kernel evaluates them
	// (filter/kernel_filter.hpp); an event matched by several rules is recorded if
	// one of them accepts it, by a rule without a filter always.
	std::map<std::string, std::string> filters;
	// Dynamic probes (uprobes.hpp): each a uprobe event per site in the
	// session's group, defined at the first start that has it, removed when
	// a start no longer has it and at destroy. Their filters are keyed
	// probe_rule(NAME).
	std::vector<ProbeConfig> probes;
	// System calls' string arguments and socket addresses read with BPF
	// (bpf/user_strings.hpp); false: their pointers, as tracefs has them.
	bool user_strings = true;
	// The system calls whose arguments are read in user memory are written
	// whole by BPF (bpf/syscall_events.hpp), not by tracefs and joined:
	// decided at the first start, when the session reads user memory, is
	// not a snapshot session, uses the `mono` clock (BPF's) and tracks
	// every process or processes by pids. False: tracefs's events joined
	// to BPF's records (bpf/user_strings.hpp).
	bool syscalls_by_bpf = true;
	// enable-event -k --capture-buffers: the first bytes of the buffers of
	// read, write and their kin (kernel_events.hpp), at most this many
	// (kMaxBufferCapture); 0: none. Set by the first start that loads the
	// BPF program (the event classes are made with it).
	uint32_t capture_buffers = 0;
	// The processes whose events are recorded (track -k): by pids alone,
	// tracefs's set_event_pid and event-fork; by other ids too, a
	// TrackedProcesses keeps set_event_pid true while tracing.
	ProcessRules processes;
	// Env entries of the trace after trace_name (the processes tracked:
	// ctf::tracked_processes_entry).
	std::vector<ctf::EnvEntry> env;
	// The per-CPU buffer: subbuf_size * num_subbuf bytes (0: the kernel's
	// default size).
	uint64_t subbuf_size = 0;
	uint64_t num_subbuf = 0;
	bool overwrite = false;             // a full buffer overwrites its oldest page (instead of dropping events)
	consumer::TracefileLimit tracefile; // the local stream files: consumer/file_sink.hpp
	// The events' context (add-context -k), sorted and unique: set once,
	// at the first start (reconfigure() ignores it). Those that need the
	// thread table have its events enabled too (kernel_context.hpp).
	std::vector<KernelContext> contexts;
	// Nothing read while tracing: snapshot() reads the newest pages (with
	// overwrite, the kernel buffer is a flight recorder).
	bool snapshot = false;
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

// "syscall NAME": the key of a system call's rule in KernelSessionConfig::filters.
std::string syscall_rule(const std::string &name);
// "probe NAME": the key of a probe's rule in KernelSessionConfig::filters.
std::string probe_rule(const std::string &name);
// A probe's arguments as filter::kernel_filter() names them (its event's
// fields have the arguments' names).
std::vector<filter::KernelField> probe_filter_fields(const ProbeSite &site);
// The event names of a probe's sites: NAME, NAME_2, NAME_3 ...
std::vector<std::string> probe_events(const ProbeConfig &probe);

// The tracepoints a configuration names, sorted, each with the rules
// (filter keys) that name it. Throws std::invalid_argument naming a pattern
// that matches nothing or a system call this kernel lacks, TracefsError.
struct KernelEvents {
	std::vector<Tracepoint> events;
	std::vector<std::vector<std::string>> rules; // per event
};
KernelEvents resolve_events(const std::string &root, const KernelSessionConfig &config);

// ROOT/events/SYSTEM/NAME/format, parsed. Throws TracefsError, FormatError.
EventFormat read_format(const std::string &root, const Tracepoint &tp);

// The kernel filter of one event: its rules' filters translated and or-ed,
// "" if one of its rules has none, nullopt if none of them can record it
// (each filters on a field this event lacks; *why_not says which). Throws
// std::invalid_argument with the expression and a caret under what the
// kernel cannot evaluate.
std::optional<std::string> event_filter(const Tracepoint &tp, const EventFormat &format,
                                        const std::vector<std::string> &rules,
                                        const std::map<std::string, std::string> &filters,
                                        std::string *why_not = nullptr);

// Translates every filter of `config` for every event it applies to, as a
// start would; returns a line per event a filtered rule does not record
// (a field it lacks). Throws as resolve_events() and event_filter(), and
// std::invalid_argument for a filter that records none of its events.
std::vector<std::string> check_filters(const std::string &root, const KernelSessionConfig &config);

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

	// Throws TracefsError, FormatError, std::system_error; a failed first
	// start removes the instance again, a failed restart leaves tracing off.
	void start();
	// Tracing off, the buffer drained, the probes disabled (a stopped
	// session costs probed programs nothing). Throws std::runtime_error if a
	// reader failed (its message), after draining the others. Idempotent.
	void stop();
	// The events and tracked processes: the tracepoints, syscalls,
	// all_syscalls, filters, probes and processes of `next`;
	// its other fields are ignored (the buffer, clock and contexts are set
	// once). Stopped: for the next start. Started: at once (new event
	// classes in the metadata first). Throws std::invalid_argument as the
	// constructor, changing nothing; while started, TracefsError,
	// FormatError, ProbeError (the instance may then be partly changed:
	// reconfigure again to the previous configuration).
	void reconfigure(const KernelSessionConfig &next);
	// Snapshot sessions, while started or stopped: the newest pages of every
	// CPU into `out` (a new trace, state dump included: SNAPSHOT/kernel, or
	// the relay's copy of it). Throws std::runtime_error, TracefsError,
	// std::system_error; std::logic_error if not a snapshot session or never
	// started.
	void snapshot(consumer::TraceOutput out);
	// The bytes of the instance's buffers, all CPUs (0 before the first start):
	// what a snapshot reads out, at most.
	uint64_t buffer_bytes() const;
	// Rotation: the trace goes on in OUTPUT/kernel of another OUTPUT (the
	// next trace chunk's directory), the one before left a complete trace.
	// Started: the readers read out what the buffers hold (tracing stays on:
	// what the kernel records meanwhile waits in its buffer, or is counted
	// lost in the new chunk), each CPU's stream there ends, and new readers
	// write into the new directory. Throws std::system_error (the trace
	// stays where it was), std::runtime_error (a reader failed, or the old
	// streams could not be closed: its message, after the move),
	// TracefsError; std::logic_error for a snapshot session. trace_dir()
	// says where the trace is.
	void rotate(const std::string &output);
	// Closes the streams and removes the instance. Throws TracefsError.
	// Idempotent.
	void destroy();

	bool started() const noexcept { return started_; }
	const std::vector<Tracepoint> &events() const noexcept { return events_.events; }
	// Where the trace is written, or will be (OUTPUT/kernel of the trace
	// chunk it is in, whether or not it is kept locally: a trace only sent
	// to a relay is there on the relay's copy).
	std::string trace_dir() const { return config_.output + "/kernel"; }
	std::string instance_path() const { return instance_ ? instance_->path() : ""; }
	// Counts of the trace written (after stop(): final).
	KernelTraceCounts counts() const;
	// What refused writes cost its trace (KernelTrace::write_losses).
	consumer::WriteLosses write_losses() const;
	// Per probe defined in the kernel (by name): `hits`, the kernel's count
	// of executions of its sites by any process (uprobe_hits()), and
	// `recorded`, its events in the trace; what a filter or the tracked pids
	// rejected is the difference, and cost no buffer space. Snapshot
	// sessions have no `recorded` (each snapshot holds what the buffer
	// kept). Throws TracefsError.
	struct ProbeCounts {
		uint64_t hits = 0;
		std::optional<uint64_t> recorded;
	};
	std::map<std::string, ProbeCounts> probe_counts() const;
	// System-call string arguments (bpf/user_strings.hpp): why they are not
	// recorded ("" when they are, or when no enabled call has any), and
	// what reading them counted.
	const std::string &user_strings_warning() const noexcept { return user_strings_warning_; }
	UserStringsCounts user_strings_counts() const;
	// What writing system calls with BPF counted (config_.syscalls_by_bpf).
	SyscallEventsCounts syscall_events_counts() const;
	// The size of each CPU's BPF ring buffer for the system calls BPF writes
	// whole (ring_bytes_for_channel() of the channel's buffer), 0 if none.
	uint64_t syscall_ring_bytes() const;
	// The tracked processes' upkeep while tracing, if they narrow by more
	// than pids (tracked_processes.hpp).
	std::optional<TrackedProcessesCounts> tracked_counts() const;

private:
	void create_instance();
	// Brings the instance's enabled events and their filters to events_
	// and `probes`, and the thread table's events if the contexts need
	// them (formats_ gains the new ones, added to trace_ before any event
	// is enabled).
	void apply_events(const KernelEvents &probes);
	// The tracefs IDs of the events enabled only for the thread table.
	std::vector<uint16_t> unrecorded_types() const;
	// A trace with every event class of formats_, written with the
	// configuration's file credentials to `out`; `baseline`: the kernel's
	// lost counts not to report.
	std::unique_ptr<KernelTrace> new_trace(consumer::TraceOutput out, std::vector<uint64_t> baseline) const;
	// Readers writing every page into `trace`.
	std::unique_ptr<CpuReaders> start_readers(KernelTrace &trace);
	// Stops `readers` (tracing off before) and ends every CPU's stream.
	void drain(std::unique_ptr<CpuReaders> readers, KernelTrace &trace);
	void write_statedump(KernelTrace &trace) const;
	// Defines the probes of the configuration not defined yet (or defined
	// otherwise); returns every probe event with its rule.
	KernelEvents define_probes();
	// Removes the probes the configuration no longer has (after
	// apply_events() disabled them).
	void remove_dropped_probes();
	// The BPF program attached to every enabled system call with string
	// arguments (loaded with the first), before the instance enables them;
	// if BPF is unavailable, user_strings_warning_ says why and their
	// arguments are the pointers' values. Then the trace, if there is one
	// already (a restart, a change while tracing), records the strings of
	// the classes added after it.
	void prepare_user_strings();
	// The instance's set_event_pid and event-fork for config_.processes
	// (`before`: the rules the instance has now, nullptr at a start), and
	// the tracker when they narrow by more than pids.
	void scope_processes(const ProcessRules *before);
	// For rules that narrow by pids alone: lists the threads they select now
	// (listed_process_tasks()), then reads /proc again until no thread is
	// missing (one forked between the reading and the write, by a thread not
	// listed yet, would be). Returns the threads listed.
	std::vector<pid_t> list_process_threads(const ProcessRules *before);
	// Whether BPF writes the events of `tp` (enabled with `filter`): a
	// system call whose entry or exit reads user memory, without a filter
	// (a filter is tracefs's: such an event is tracefs's, its strings
	// unfetched); then attaches its program if not yet.
	bool write_by_bpf(const Tracepoint &tp, const std::string &filter);

	std::string root_;
	KernelSessionConfig config_;
	KernelEvents events_;                       // of the configuration
	std::vector<Tracepoint> enabled_;           // in the instance, sorted
	std::vector<Tracepoint> filtered_;          // with a filter in the instance, sorted
	std::vector<Tracepoint> bookkeeping_;       // enabled for the thread table only, sorted
	std::map<Tracepoint, EventFormat> formats_; // of every event enabled since the first start
	// Before instance_: destroyed after it (an enabled event cannot go).
	std::string probe_group_;
	struct DefinedProbe {
		ProbeConfig config;
		std::vector<UprobeEvent> events;
	};
	std::map<std::string, DefinedProbe> probes_; // by name
	std::optional<Instance> instance_;
	PageLayout layout_{};
	std::vector<uint32_t> cpus_;
	std::unique_ptr<UserStrings> user_strings_;     // outlives trace_
	std::unique_ptr<SyscallEvents> syscall_events_; // outlives trace_
	std::string user_strings_warning_;
	std::unique_ptr<KernelTrace> trace_; // OUTPUT/kernel (not in snapshot sessions)
	std::unique_ptr<CpuReaders> readers_;
	std::unique_ptr<TrackedProcesses> tracked_; // while started, when the rules need it
	// The threads scope_processes() listed (set_event_pid, and the system-call
	// programs' map), sorted; not those the kernel added at forks.
	std::vector<pid_t> listed_threads_;
	bool started_ = false;
};

} // namespace tracery::kernel
