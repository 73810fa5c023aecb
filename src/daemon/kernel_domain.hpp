// A session's kernel domain: what `enable-event -k`, `enable-channel -k` and
// `track -k` asked of it (KernelSpec), and the kernel trace that does it
// (kernel/kernel_session.hpp), started, stopped and destroyed with the
// session. A session with kernel events writes its user trace to OUTPUT/ust
// and its kernel trace to OUTPUT/kernel (one trace per directory, so that
// babeltrace2 OUTPUT merges both); a session without keeps its user trace in
// OUTPUT. That layout is decided at the first start.
#pragma once

#include "daemon/process_tracking.hpp"
#include "daemon/session_identity.hpp"

#include "base/fd.hpp"
#include "control/messages.hpp"
#include "kernel/kernel_session.hpp"

#include <sys/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tracery::daemon {

// What the kernel commands asked of a session's kernel domain
// (kernel/kernel_session.hpp does it at start).
struct KernelSpec {
	std::set<std::string> tracepoints; // patterns of kernel::match_tracepoints()
	std::set<std::string> syscalls;
	bool all_syscalls = false;
	// Filter expressions by rule (kernel::KernelSessionConfig::filters).
	std::map<std::string, std::string> filters;
	std::string channel;                      // enable-channel -k NAME ("": the default, channel0)
	uint64_t subbuf_size = 0, num_subbuf = 0; // 0: the kernel's default buffer size
	bool overwrite = false;
	consumer::TracefileLimit tracefile; // --tracefile-size/--tracefile-count
	// track -k: pid, vpid, uid, vuid, gid, vgid, ANDed (every process at first).
	ProcessTracking tracking{"kernel",
	                         {ProcessAttr::pid, ProcessAttr::vpid, ProcessAttr::uid, ProcessAttr::vuid,
	                          ProcessAttr::gid, ProcessAttr::vgid}};
	bool follow_children = true; // the pid attribute: the processes' descendants too
	bool disabled = false;       // disable-channel -k: tracing off in the instance
	// enable-channel -k --monitor-timer: the buffer usage sampled for the
	// triggers this often (channel_monitor.cpp; 0: never).
	uint64_t monitor_timer_us = control::kDefaultMonitorTimerUs;
	uint64_t next_monitor_ns = 0;                // the monitor thread's next sample
	std::vector<kernel::KernelContext> contexts; // add-context -k, sorted and unique
	uint32_t capture_buffers = 0;                // enable-event -k --capture-buffers (0: none)
	// enable-event -k --userspace-probe=SPEC NAME, by NAME: resolved when
	// enabled, from the file opened then with the requester's credentials
	// (held open: the kernel is given that very file, /proc/self/fd/N).
	struct Probe {
		std::string spec; // as given, the path made absolute
		std::string args; // --args, "" if none
		bool is_return = false;
		std::vector<kernel::ProbeSite> sites;
		std::shared_ptr<base::Fd> file;
	};
	std::map<std::string, Probe> probes;

	bool any_events() const { return all_syscalls || !tracepoints.empty() || !syscalls.empty() || !probes.empty(); }
	std::string channel_name() const { return channel.empty() ? "channel0" : channel; }
};

// The spec's tracked attributes as the kernel session takes them, and as
// `track -k` and `status` show them.
kernel::ProcessRules process_rules(const KernelSpec &spec);
control::DomainTracking kernel_tracking_status(const KernelSpec &spec);

class KernelDomain {
public:
	explicit KernelDomain(const SessionIdentity &session) : session_(session) {}

	const KernelSpec &spec() const { return spec_; }
	// For the kernel commands (Daemon::kernel_session_for); while the
	// session traces, apply() makes a change take effect.
	KernelSpec &edit_spec() { return spec_; }

	// Whether the session's traces are laid out with a kernel trace (see
	// above): decided by decide_layout() at the first start.
	bool in_layout() const { return in_layout_; }
	// A failed first start may have begun the kernel trace: it goes on.
	void decide_layout() { in_layout_ = spec_.any_events() || trace_ != nullptr; }

	// At each start, before anything is written: with kernel events, checks
	// them against this kernel and starts tracing them (the first time, a
	// new instance and OUTPUT/kernel; then the same ones, continued),
	// without the daemon's lock (reads /proc for the state dump). Throws
	// std::runtime_error (one line) with nothing left running.
	void start(const std::string &tracefs_root);
	// While the session traces: the spec's events and tracked pids take
	// effect at once (nothing to do otherwise). Throws std::runtime_error
	// (one line); the instance may then be partly changed: apply() the
	// previous spec again.
	void apply();
	// Stop (and a start whose user part failed): drains every page, the
	// kernel trace stays open for the next start (without the daemon's
	// lock). Returns "" or the one-line error of a failed reader.
	std::string stop();
	// Rotation: the kernel trace goes on in CHUNK/kernel, `chunk` the next
	// trace chunk's directory (as does one begun later), without the
	// daemon's lock. Returns "" or the one-line error (then
	// trace()->trace_dir() says whether it moved).
	std::string rotate(const std::string &chunk);
	// disable-channel -k (`disabled`) and enable-channel -k again: tracing
	// off (on) in the instance while the session traces; a start leaves it
	// off while disabled. Throws std::runtime_error (one line).
	void set_disabled(bool disabled);
	// Destroy: closes the kernel trace and removes the tracefs instance.
	// Returns "" or why it could not.
	std::string destroy();
	// `snapshot record`: the kernel part of snapshot directory `dir`, read
	// out of the tracefs buffer (none without a kernel trace): DIR/kernel, or
	// with `relay`, sent to it as DIR/kernel of its session (DIR relative).
	// Throws std::runtime_error (one line).
	void snapshot(const std::string &dir, const std::shared_ptr<consumer::RelayLink> &relay = nullptr);
	// What a snapshot's kernel part reads out, at most: the kernel buffers' bytes.
	uint64_t snapshot_bytes() const;

	// The kernel trace of the last start, if any (counts).
	const kernel::KernelSession *trace() const { return trace_.get(); }

private:
	kernel::KernelSessionConfig config() const; // of the spec and the session
	const SessionIdentity &session_;
	KernelSpec spec_;
	bool in_layout_ = false;
	std::string chunk_; // the trace chunk's directory after a rotation ("": the session's output)
	std::unique_ptr<kernel::KernelSession> trace_;
};

} // namespace tracery::daemon
