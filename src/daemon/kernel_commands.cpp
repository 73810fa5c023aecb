// The kernel domain's requests of the tracery command (-k): which tracepoints
// and system calls a session enables, its kernel channel, the processes it
// tracks, and the kernel's lists. What a client sends is untrusted: names,
// patterns and pids are checked (character set, length, count) before
// anything reads tracefs with them. The session's kernel channel and
// contexts are set before its first start; its events and tracked
// processes change at any time, at once while it traces (undone if the
// kernel refuses the change); start, stop and destroy
// (session_commands.cpp, daemon.cpp) run it.
#include "daemon/daemon.hpp"
#include "daemon/tracefile_options.hpp"

#include "daemon/log.hpp"

#include "base/fs_creds.hpp"
#include "base/sizes.hpp"
#include "filter/parser.hpp"
#include "kernel/kernel_context.hpp"
#include "kernel/kernel_session.hpp"
#include "kernel/probe_site.hpp"
#include "kernel/tracefs.hpp"
#include "kernel/uprobes.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tracery::daemon {

namespace {

constexpr size_t kMaxNames = 4096; // patterns, system calls, probes or pids of one session
constexpr size_t kMaxProbeSpec = 4096;
constexpr size_t kMaxNameLength = 256;
constexpr uint64_t kMaxPid = 4194304; // PID_MAX_LIMIT
constexpr uint64_t kMaxKernelBufferPerCpu = uint64_t{1} << 30;

// The names of a list: each made of [A-Za-z0-9_] and the extra characters
// allowed, non-empty, bounded.
std::vector<std::string> names_of(const std::optional<std::vector<std::string>> &names, const char *what,
                                  const std::string &extra)
{
	const std::vector<std::string> none;
	const std::vector<std::string> &list = names ? *names : none;
	if (list.size() > kMaxNames)
		throw CommandError(std::string("bad list of ") + what + ": give at most " + std::to_string(kMaxNames));
	for (const std::string &s : list) {
		const bool ok =
			!s.empty() && s.size() <= kMaxNameLength && std::all_of(s.begin(), s.end(), [&](char c) {
				return isalnum(static_cast<unsigned char>(c)) || c == '_' ||
			               extra.find(c) != std::string::npos;
			});
		if (!ok)
			throw CommandError(
				std::string("bad ") + what + " '" + s.substr(0, kMaxNameLength) +
				"': use letters, digits and '_'" +
				(extra.empty() ? "" : ", with '*' wildcards and SYSTEM:NAME (e.g. 'irq:*')"));
	}
	return list;
}

std::vector<pid_t> pids_of(const std::vector<uint64_t> &list)
{
	std::vector<pid_t> out;
	if (list.empty() || list.size() > kMaxNames)
		throw CommandError("no pid given: name processes with --pid PID[,PID...] (at most " +
		                   std::to_string(kMaxNames) + ")");
	for (const uint64_t v : list) {
		if (v == 0 || v > kMaxPid)
			throw CommandError("bad pid '" + std::to_string(v) + "': give process ids between 1 and " +
			                   std::to_string(kMaxPid));
		out.push_back(static_cast<pid_t>(v));
	}
	return out;
}

uint64_t size_of(const std::optional<uint64_t> &size, const char *option)
{
	if (!size)
		return 0;
	if (*size == 0 || *size > kMaxKernelBufferPerCpu)
		throw CommandError(std::string("bad ") + option + " '" + std::to_string(*size) +
		                   "': give a size of at most 1G, optionally with k, M or G");
	return *size;
}

// tracefs, mounted if it is not (and said so). Throws a line saying why
// kernel tracing is impossible here.
std::string tracefs_root()
{
	try {
		const kernel::Tracefs t = kernel::open_tracefs(true);
		if (t.mounted)
			log(Level::info, "mounted tracefs at %s", t.root.c_str());
		return t.root;
	} catch (const kernel::TracefsError &e) {
		throw CommandError(std::string("kernel tracing is not possible here: ") + e.what());
	}
}

// A change of the session's kernel spec (from `before`) takes effect at
// once while it traces; undone if the kernel refuses it.
void apply_while_tracing(TraceSession &s, const KernelSpec &before)
{
	if (!s.started())
		return;
	try {
		s.apply_kernel();
	} catch (const std::exception &e) {
		s.edit_kernel_spec() = before;
		try {
			s.apply_kernel();
		} catch (const std::exception &again) {
			log(Level::error, "session %s: its kernel events could not be set back: %s", s.name().c_str(),
			    again.what());
		}
		throw CommandError("session '" + s.name() + "' is unchanged: " + e.what());
	}
}

// A change of the session's kernel tracking (process_tracking.hpp): every
// change or none, at once while it traces. Tracking pids (not untracking)
// sets whether their descendants are followed, by default they are.
void change_kernel_tracking(TraceSession &s, const std::vector<control::TrackingChange> &changes, bool untrack,
                            std::optional<bool> follow_children)
{
	const bool pids = std::any_of(changes.begin(), changes.end(),
	                              [](const control::TrackingChange &c) { return c.attribute == "pid"; });
	if (follow_children && (untrack || !pids))
		throw CommandError("--follow-children and --no-follow-children go with track -k --pid");
	const KernelSpec before = s.kernel_spec();
	KernelSpec &k = s.edit_kernel_spec();
	try {
		k.tracking.apply(changes, untrack);
	} catch (const std::invalid_argument &e) {
		throw CommandError(e.what());
	}
	if (pids && !untrack)
		k.follow_children = follow_children.value_or(true);
	apply_while_tracing(s, before);
}

} // namespace

void Daemon::check_kernel_access(const control::PeerCred &peer) const
{
	if (peer.uid == 0 || (options_.system && in_group(peer.uid, peer.gid, options_.group)))
		return;
	throw CommandError("kernel tracing (-k) needs root or membership in group '" + options_.group_name +
	                   "' of the system session daemon: ask an administrator to add you to it, or trace user "
	                   "space only (-u)");
}

TraceSession &Daemon::kernel_session_for(const std::string &name, const control::PeerCred &peer)
{
	check_kernel_access(peer);
	TraceSession &s = session_for(name, peer);
	if (s.stopping())
		throw CommandError("session '" + s.name() + "' is stopping: try again once `tracery stop` returns");
	if (s.chunks().moving_kernel)
		throw CommandError("session '" + s.name() +
		                   "' is moving its kernel trace to a new chunk: try again in a moment");
	if (s.ever_started() && !s.kernel_domain())
		throw CommandError("session '" + s.name() +
		                   "' was started without kernel events, so its user trace is OUTPUT itself and "
		                   "there is no OUTPUT/kernel beside it: create a new session to trace the kernel");
	return s;
}

control::KernelEventsReply Daemon::enable_probe(TraceSession &s, const control::KernelEvents &req,
                                                const control::PeerCred &peer, Lock &lock)
{
	const std::string spec_text = req.probe.value_or(""), name = req.probe_name.value_or("");
	const std::string args = req.args.value_or(""), filter = req.filter.value_or("");
	if (spec_text.size() > kMaxProbeSpec || args.size() > kernel::kMaxUserArgsLength ||
	    filter.size() > filter::kMaxExpressionLength)
		throw CommandError("bad probe request: a spec of at most " + std::to_string(kMaxProbeSpec) +
		                   " bytes, an event name, --args and --filter as text");
	if (!kernel::valid_event_name(name))
		throw CommandError("bad probe event name '" + name.substr(0, kMaxNameLength) +
		                   "': use letters, digits and '_' (not first a digit), at most 64");
	if (s.kernel_spec().probes.count(name) || s.kernel_spec().tracepoints.count(name))
		throw CommandError("session '" + s.name() + "' has a kernel event '" + name +
		                   "' already: disable it first, or name the probe otherwise");
	if (s.kernel_spec().probes.size() >= kMaxNames)
		throw CommandError("too many probes in session '" + s.name() + "': at most " +
		                   std::to_string(kMaxNames));
	kernel::ProbeSpec spec;
	try {
		spec = kernel::parse_probe_spec(spec_text);
	} catch (const kernel::ProbeError &e) {
		throw CommandError(e.what());
	}
	if (spec.path.empty() || spec.path[0] != '/')
		throw CommandError("the probe's path '" + spec.path + "' is not absolute: give it from /");
	// The file is opened and read with the requester's credentials (a
	// file they cannot read is not probed for them), without the daemon's
	// lock (a large file takes a while); `busy` keeps other commands off the
	// session meanwhile.
	KernelSpec::Probe probe{spec_text, args, spec.kind == kernel::ProbeSpec::Kind::function_return, {}, nullptr};
	without_lock(s, lock, [&] {
		try {
			base::FsCreds as_requester(peer.uid, peer.gid);
			base::Fd fd(::open(spec.path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
			struct stat st;
			if (!fd)
				throw CommandError("cannot open '" + spec.path + "': " + strerror(errno));
			if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
				throw CommandError("'" + spec.path +
				                   "' is not a regular file: probe an executable or a library");
			probe.sites = kernel::resolve_probe(fd.get(), spec, args);
			probe.file = std::make_shared<base::Fd>(std::move(fd));
			if (!filter.empty()) {
				// The kernel evaluates it, on the probe's arguments.
				filter::Error error{"", 0};
				if (!filter::kernel_filter(filter, kernel::probe_filter_fields(probe.sites.at(0)),
				                           &error))
					throw CommandError("the filter of probe '" + name +
					                   "' cannot be evaluated by the kernel: " +
					                   filter::render_error(filter, error));
			}
		} catch (const kernel::ProbeError &e) {
			throw CommandError(e.what());
		}
	});
	if (s.kernel_spec().probes.count(name))
		throw CommandError("session '" + s.name() + "' got a probe '" + name + "' meanwhile");
	control::KernelEventsReply reply;
	reply.session = s.name();
	reply.channel = s.kernel_spec().channel_name();
	reply.events = {"probe " + name + " (" + spec_text + ")" + (filter.empty() ? "" : " (filter: " + filter + ")")};
	reply.sites = probe.sites.size();
	reply.args_source = probe.sites.at(0).args_source;
	reply.notes = probe.sites.at(0).notes;
	const KernelSpec before = s.kernel_spec();
	if (!filter.empty())
		s.edit_kernel_spec().filters[kernel::probe_rule(name)] = filter;
	s.edit_kernel_spec().probes.emplace(name, std::move(probe));
	apply_while_tracing(s, before);
	return reply;
}

control::KernelEventsReply Daemon::cmd_kernel_event(const control::KernelEvents &req, bool disable,
                                                    const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = kernel_session_for(req.session, peer);
	if (!disable && req.probe)
		return enable_probe(s, req, peer, lock);
	const std::vector<std::string> tracepoints = names_of(req.tracepoints, "kernel event pattern", "*:");
	const std::vector<std::string> syscalls = names_of(req.syscalls, "system call name", "");
	const bool all_syscalls = req.all_syscalls.value_or(false);
	if (tracepoints.empty() && syscalls.empty() && !all_syscalls)
		throw CommandError("no kernel event given: name tracepoints (e.g. sched_switch, 'irq:*'), or system "
		                   "calls with --syscall NAME[,NAME...] or --syscall -a");
	const std::string &channel = req.channel;
	const std::string kchannel = s.kernel_spec().channel_name();
	if (!channel.empty() && channel != kchannel)
		throw CommandError("no kernel channel '" + channel + "' in session '" + s.name() + "' (it has '" +
		                   kchannel + "'): create it with `tracery enable-channel -k " + channel +
		                   "` before enabling events");
	const std::string filter = req.filter.value_or("");
	if (filter.size() > filter::kMaxExpressionLength)
		throw CommandError("bad filter: give an expression of at most " +
		                   std::to_string(filter::kMaxExpressionLength) + " bytes");
	std::vector<std::string> not_recorded; // events a filter's rule does not record
	if (disable && !filter.empty())
		throw CommandError("disable-event takes no --filter: it disables the events named");
	if (req.capture_buffers) {
		const uint64_t bytes = *req.capture_buffers;
		if (disable)
			throw CommandError("disable-event takes no --capture-buffers");
		if (bytes == 0 || bytes > kernel::kMaxBufferCapture)
			throw CommandError("--capture-buffers: give 1 to " + std::to_string(kernel::kMaxBufferCapture) +
			                   " bytes");
		const uint32_t current = s.kernel_spec().capture_buffers;
		if (s.ever_started() && current != bytes)
			throw CommandError("session '" + s.name() +
			                   "' has been started: its buffer capture was set then (" +
			                   (current == 0 ? std::string("none") : std::to_string(current) + " bytes") +
			                   "); create a new session to change it");
	}
	const KernelSpec before = s.kernel_spec();
	KernelSpec &k = s.edit_kernel_spec();
	if (req.capture_buffers)
		k.capture_buffers = static_cast<uint32_t>(*req.capture_buffers);
	// The rules of this request, as KernelSessionConfig::filters names them.
	std::vector<std::string> rules = tracepoints;
	for (const std::string &c : syscalls)
		rules.push_back(kernel::syscall_rule(c));
	if (all_syscalls)
		rules.push_back(kernel::syscall_rule("*"));
	// `-k -a`: every tracepoint and every system call.
	const bool everything = all_syscalls && tracepoints == std::vector<std::string>{"*"};
	if (disable && everything) {
		k.tracepoints.clear();
		k.syscalls.clear();
		k.all_syscalls = false;
		k.filters.clear();
		k.probes.clear();
	} else if (disable) {
		for (const std::string &t : tracepoints)
			if (!k.tracepoints.count(t) && !k.probes.count(t))
				throw CommandError("kernel event '" + t + "' is not enabled in session '" + s.name() +
				                   "': see `tracery status`");
		for (const std::string &c : syscalls)
			if (!k.syscalls.count(c))
				throw CommandError("system call '" + c + "' is not enabled in session '" + s.name() +
				                   "': see `tracery status`");
		for (const std::string &t : tracepoints) {
			k.tracepoints.erase(t);
			if (k.probes.erase(t))
				k.filters.erase(kernel::probe_rule(t));
		}
		for (const std::string &c : syscalls)
			k.syscalls.erase(c);
		if (all_syscalls) {
			k.all_syscalls = false;
			k.syscalls.clear();
		}
		for (const std::string &r : rules)
			k.filters.erase(r);
	} else {
		if (k.tracepoints.size() + tracepoints.size() > kMaxNames ||
		    k.syscalls.size() + syscalls.size() > kMaxNames)
			throw CommandError("too many kernel events in session '" + s.name() + "': at most " +
			                   std::to_string(kMaxNames) + " patterns and system calls");
		// Checked against this kernel now, so that a mistyped name fails here.
		const std::vector<kernel::Tracepoint> known = kernel::list_tracepoints(tracefs_root());
		for (const std::string &t : tracepoints)
			if (kernel::match_tracepoints(known, t).empty())
				throw CommandError("no kernel tracepoint matches '" + t +
				                   "': see `tracery list -k` for this kernel's tracepoints");
		const std::vector<std::string> known_calls = kernel::list_syscalls(known);
		for (const std::string &c : syscalls)
			if (!std::binary_search(known_calls.begin(), known_calls.end(), c))
				throw CommandError("no system call '" + c +
				                   "' in this kernel's tracepoints: see `tracery list -k --syscall`");
		for (const std::string &r : rules) {
			const bool enabled = r == kernel::syscall_rule("*") ? k.all_syscalls
			                     : r.starts_with("syscall ")    ? k.syscalls.count(r.substr(8)) > 0
			                                                    : k.tracepoints.count(r) > 0;
			const auto it = k.filters.find(r);
			const std::string before = it == k.filters.end() ? "" : it->second;
			if (enabled && before != filter)
				throw CommandError("kernel event '" + r + "' is enabled already " +
				                   (before.empty() ? std::string("without a filter")
				                                   : "with the filter '" + before + "'") +
				                   ": disable it first to change its filter");
		}
		if (!filter.empty()) {
			// The kernel evaluates it: translated now for every event it
			// applies to, so that what the kernel cannot take fails here.
			kernel::KernelSessionConfig c;
			c.tracepoints = tracepoints;
			c.syscalls = syscalls;
			c.all_syscalls = all_syscalls;
			for (const std::string &r : rules)
				c.filters[r] = filter;
			try {
				not_recorded = kernel::check_filters(tracefs_root(), c);
			} catch (const std::exception &e) {
				throw CommandError(e.what());
			}
			for (const std::string &r : rules)
				k.filters[r] = filter;
		}
		k.tracepoints.insert(tracepoints.begin(), tracepoints.end());
		k.syscalls.insert(syscalls.begin(), syscalls.end());
		k.all_syscalls |= all_syscalls;
	}
	std::vector<std::string> names = tracepoints;
	for (const std::string &c : syscalls)
		names.push_back("syscall " + c);
	if (all_syscalls)
		names.push_back("every system call");
	if (!filter.empty())
		for (auto &n : names)
			n += " (filter: " + filter + ")";
	apply_while_tracing(s, before);
	return {s.name(), kchannel, names, not_recorded, std::nullopt, std::nullopt, std::nullopt};
}

control::KernelEnableChannelReply Daemon::cmd_kernel_channel(const control::KernelEnableChannel &req,
                                                             const control::PeerCred &peer, Lock &)
{
	check_kernel_access(peer);
	if (TraceSession &d = session_for(req.session, peer);
	    d.kernel_spec().disabled && req.channel == d.kernel_spec().channel_name())
		return enable_kernel_channel_again(d, req);
	TraceSession &s = kernel_session_for(req.session, peer);
	if (s.ever_started())
		throw CommandError("session '" + s.name() +
		                   "' has been started: its kernel buffer was made then; create a new session for "
		                   "another kernel channel");
	const std::string &name = req.channel;
	if (name.empty() || name.size() > kMaxNameLength || !std::all_of(name.begin(), name.end(), [](char c) {
		    return isalnum(static_cast<unsigned char>(c)) || c == '_';
	    }))
		throw CommandError("bad channel name '" + name.substr(0, kMaxNameLength) +
		                   "': use letters, digits and '_'");
	if (!s.kernel_spec().channel.empty() && s.kernel_spec().channel != name)
		throw CommandError("session '" + s.name() + "' has kernel channel '" + s.kernel_spec().channel +
		                   "' already: the kernel domain has one channel (its tracefs instance's buffer)");
	const uint64_t subbuf = size_of(req.subbuf_size, "--subbuf-size");
	const uint64_t num = size_of(req.num_subbuf, "--num-subbuf");
	if ((subbuf == 0) != (num == 0))
		throw CommandError("give both --subbuf-size and --num-subbuf (the kernel buffer of each CPU is their "
		                   "product), or neither for the kernel's default size");
	if (subbuf * num > kMaxKernelBufferPerCpu)
		throw CommandError("a kernel buffer of " + base::format_size(subbuf * num) +
		                   " per CPU is more than 1G: give a smaller --subbuf-size or --num-subbuf");
	const consumer::TracefileLimit tracefile =
		tracefile_limit(req.tracefile_size, req.tracefile_count, subbuf ? subbuf : 4096, s.identity());
	KernelSpec &k = s.edit_kernel_spec();
	k.channel = name;
	k.tracefile = tracefile;
	k.subbuf_size = subbuf;
	k.num_subbuf = num;
	k.overwrite = req.overwrite;
	k.monitor_timer_us = timer_argument(req.monitor_timer_us, "--monitor-timer", control::kDefaultMonitorTimerUs);
	return {s.name(), name, k.subbuf_size * k.num_subbuf, k.overwrite};
}

control::KernelTrackingReply Daemon::cmd_kernel_track(const control::KernelTracking &req, bool untrack,
                                                      const control::PeerCred &peer, Lock &)
{
	TraceSession &s = kernel_session_for(req.session, peer);
	const std::vector<pid_t> pids = pids_of(req.pids);
	change_kernel_tracking(s, {{"pid", false, {pids.begin(), pids.end()}}}, untrack,
	                       untrack ? std::nullopt : req.follow_children);
	const KernelSpec &k = s.kernel_spec();
	control::KernelTrackingReply reply{s.name(), {}, k.follow_children};
	const kernel::ProcessRules rules = process_rules(k);
	if (rules.pid)
		reply.pids.assign(rules.pid->begin(), rules.pid->end());
	return reply;
}

control::KernelAddContextReply Daemon::cmd_kernel_context(const control::KernelAddContext &req,
                                                          const control::PeerCred &peer, Lock &)
{
	TraceSession &s = kernel_session_for(req.session, peer);
	if (s.ever_started())
		throw CommandError("session '" + s.name() +
		                   "' has been started: its kernel events' context was set then (as LTTng's); "
		                   "create a new session to add one");
	const std::string kchannel = s.kernel_spec().channel_name();
	if (!req.channel.empty() && req.channel != kchannel)
		throw CommandError("no kernel channel '" + req.channel.substr(0, kMaxNameLength) + "' in session '" +
		                   s.name() + "' (it has '" + kchannel + "')");
	if (req.types.empty() || req.types.size() > kernel::kKernelContextCount)
		throw CommandError("no context given: name one with -t (at most " +
		                   std::to_string(kernel::kKernelContextCount) + ")");
	std::vector<kernel::KernelContext> contexts = s.kernel_spec().contexts;
	for (const std::string &t : req.types) {
		const std::optional<kernel::KernelContext> c = kernel::parse_kernel_context(t);
		if (!c) {
			std::string known;
			for (const std::string &n : kernel::kernel_context_names())
				known += (known.empty() ? "" : ", ") + n;
			throw CommandError("no kernel context '" + t.substr(0, kMaxNameLength) + "': give one of " +
			                   known);
		}
		contexts.push_back(*c);
	}
	std::sort(contexts.begin(), contexts.end());
	contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
	s.edit_kernel_spec().contexts = contexts;
	control::KernelAddContextReply reply;
	reply.session = s.name();
	for (const kernel::KernelContext c : contexts)
		reply.contexts.emplace_back(kernel::kernel_context_name(c));
	return reply;
}

control::KernelListReply Daemon::cmd_kernel_list(const control::KernelList &, const control::PeerCred &peer, Lock &)
{
	check_kernel_access(peer);
	const std::vector<kernel::Tracepoint> all = kernel::list_tracepoints(tracefs_root());
	control::KernelListReply reply;
	for (const kernel::Tracepoint &t : all)
		if (t.system != "syscalls")
			reply.tracepoints.push_back(t.full_name());
	reply.syscalls = kernel::list_syscalls(all);
	return reply;
}

control::TrackingReply Daemon::cmd_kernel_process_attrs(const control::Tracking &req, bool untrack,
                                                        const control::PeerCred &peer, Lock &)
{
	TraceSession &s = kernel_session_for(req.session, peer);
	change_kernel_tracking(s, req.changes, untrack, req.follow_children);
	return {s.name(), kernel_tracking_status(s.kernel_spec())};
}

} // namespace tracery::daemon
