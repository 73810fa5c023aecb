// The kernel domain's requests of the tracery command (-k): which tracepoints
// and system calls a session enables, its kernel channel, the processes it
// tracks, and the kernel's lists. What a client sends is untrusted: names,
// patterns and pids are checked (character set, length, count) before
// anything reads tracefs with them. The session's kernel domain is set
// before its first start; start, stop and destroy (commands.cpp, daemon.cpp)
// run it.
#include "daemon/daemon.hpp"

#include "control/messages.hpp"
#include "daemon/log.hpp"

#include "base/fs_creds.hpp"
#include "base/sizes.hpp"
#include "filter/parser.hpp"
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

using nlohmann::json;

namespace {

constexpr size_t kMaxNames = 4096; // patterns, system calls, probes or pids of one session
constexpr size_t kMaxProbeSpec = 4096;
constexpr size_t kMaxNameLength = 256;
constexpr uint64_t kMaxPid = 4194304; // PID_MAX_LIMIT
constexpr uint64_t kMaxKernelBufferPerCpu = uint64_t{1} << 30;

struct KernelError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// The strings of req[key]: each made of [A-Za-z0-9_] and the extra
// characters allowed, non-empty, bounded.
std::vector<std::string> names_of(const json &req, const char *key, const char *what, const std::string &extra)
{
	std::vector<std::string> out;
	const json list = req.value(key, json::array());
	if (!list.is_array() || list.size() > kMaxNames)
		throw KernelError(std::string("bad list of ") + what + ": give at most " + std::to_string(kMaxNames));
	for (const auto &v : list) {
		const std::string s = v.is_string() ? v.get<std::string>() : "";
		const bool ok =
			!s.empty() && s.size() <= kMaxNameLength && std::all_of(s.begin(), s.end(), [&](char c) {
				return isalnum(static_cast<unsigned char>(c)) || c == '_' ||
			               extra.find(c) != std::string::npos;
			});
		if (!ok)
			throw KernelError(std::string("bad ") + what + " '" + s.substr(0, kMaxNameLength) +
			                  "': use letters, digits and '_'" +
			                  (extra.empty() ? "" : ", with '*' wildcards and SYSTEM:NAME (e.g. 'irq:*')"));
		out.push_back(s);
	}
	return out;
}

std::vector<pid_t> pids_of(const json &req)
{
	std::vector<pid_t> out;
	const json list = req.value("pids", json::array());
	if (!list.is_array() || list.empty() || list.size() > kMaxNames)
		throw KernelError("no pid given: name processes with --pid PID[,PID...] (at most " +
		                  std::to_string(kMaxNames) + ")");
	for (const auto &v : list) {
		if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > kMaxPid)
			throw KernelError("bad pid '" + v.dump() + "': give process ids between 1 and " +
			                  std::to_string(kMaxPid));
		out.push_back(static_cast<pid_t>(v.get<uint64_t>()));
	}
	return out;
}

uint64_t size_of(const json &req, const char *key, const char *option)
{
	auto it = req.find(key);
	if (it == req.end())
		return 0;
	if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > kMaxKernelBufferPerCpu)
		throw KernelError(std::string("bad ") + option + " '" + it->dump() +
		                  "': give a size of at most 1G, optionally with k, M or G");
	return it->get<uint64_t>();
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
		throw KernelError(std::string("kernel tracing is not possible here: ") + e.what());
	}
}

} // namespace

void Daemon::check_kernel_access(const control::PeerCred &peer) const
{
	if (peer.uid == 0 || (options_.system && in_group(peer.uid, peer.gid, options_.group)))
		return;
	throw KernelError("kernel tracing (-k) needs root or membership in group '" + options_.group_name +
	                  "' of the system session daemon: ask an administrator to add you to it, or trace user "
	                  "space only (-u)");
}

TraceSession &Daemon::kernel_session_for(const json &req, const control::PeerCred &peer)
{
	check_kernel_access(peer);
	TraceSession &s = session_for(req, peer);
	if (s.started() || s.stopping())
		throw KernelError("session '" + s.name() +
		                  "' is tracing: its kernel events and tracked pids change while it is stopped "
		                  "(`tracery stop`, change them, `tracery start`)");
	if (s.ever_started() && !s.kernel_domain())
		throw KernelError("session '" + s.name() +
		                  "' was started without kernel events, so its user trace is OUTPUT itself and "
		                  "there is no OUTPUT/kernel beside it: create a new session to trace the kernel");
	return s;
}

json Daemon::enable_probe(TraceSession &s, const json &req, const control::PeerCred &peer, Lock &lock)
{
	const json spec_value = req.value("probe", json(""));
	const json name_value = req.value("probe_name", json(""));
	const json args_value = req.value("args", json(""));
	const json filter_value = req.value("filter", json(""));
	if (!spec_value.is_string() || spec_value.get<std::string>().size() > kMaxProbeSpec ||
	    !name_value.is_string() || !args_value.is_string() ||
	    args_value.get<std::string>().size() > kernel::kMaxUserArgsLength || !filter_value.is_string() ||
	    filter_value.get<std::string>().size() > filter::kMaxExpressionLength)
		throw KernelError("bad probe request: a spec of at most " + std::to_string(kMaxProbeSpec) +
		                  " bytes, an event name, --args and --filter as text");
	const std::string spec_text = spec_value.get<std::string>(), name = name_value.get<std::string>();
	const std::string args = args_value.get<std::string>(), filter = filter_value.get<std::string>();
	if (!kernel::valid_event_name(name))
		throw KernelError("bad probe event name '" + name.substr(0, kMaxNameLength) +
		                  "': use letters, digits and '_' (not first a digit), at most 64");
	if (s.kernel_spec().probes.count(name) || s.kernel_spec().tracepoints.count(name))
		throw KernelError("session '" + s.name() + "' has a kernel event '" + name +
		                  "' already: disable it first, or name the probe otherwise");
	if (s.kernel_spec().probes.size() >= kMaxNames)
		throw KernelError("too many probes in session '" + s.name() + "': at most " +
		                  std::to_string(kMaxNames));
	kernel::ProbeSpec spec;
	try {
		spec = kernel::parse_probe_spec(spec_text);
	} catch (const kernel::ProbeError &e) {
		throw KernelError(e.what());
	}
	if (spec.path.empty() || spec.path[0] != '/')
		throw KernelError("the probe's path '" + spec.path + "' is not absolute: give it from /");
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
				throw KernelError("cannot open '" + spec.path + "': " + strerror(errno));
			if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
				throw KernelError("'" + spec.path +
				                  "' is not a regular file: probe an executable or a library");
			probe.sites = kernel::resolve_probe(fd.get(), spec, args);
			probe.file = std::make_shared<base::Fd>(std::move(fd));
			if (!filter.empty()) {
				// The kernel evaluates it, on the probe's arguments.
				filter::Error error{"", 0};
				if (!filter::kernel_filter(filter, kernel::probe_filter_fields(probe.sites.at(0)),
				                           &error))
					throw KernelError("the filter of probe '" + name +
					                  "' cannot be evaluated by the kernel: " +
					                  filter::render_error(filter, error));
			}
		} catch (const kernel::ProbeError &e) {
			throw KernelError(e.what());
		}
	});
	if (s.kernel_spec().probes.count(name))
		throw KernelError("session '" + s.name() + "' got a probe '" + name + "' meanwhile");
	json notes = json::array();
	for (const std::string &n : probe.sites.at(0).notes)
		notes.push_back(n);
	json reply = {{"session", s.name()},
	              {"channel", s.kernel_spec().channel_name()},
	              {"events", json::array({"probe " + name + " (" + spec_text + ")" +
	                                      (filter.empty() ? "" : " (filter: " + filter + ")")})},
	              {"sites", probe.sites.size()},
	              {"args_source", probe.sites.at(0).args_source},
	              {"notes", notes}};
	if (!filter.empty())
		s.edit_kernel_spec().filters[kernel::probe_rule(name)] = filter;
	s.edit_kernel_spec().probes.emplace(name, std::move(probe));
	return reply;
}

json Daemon::cmd_kernel_event(const json &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = kernel_session_for(req, peer);
	const bool disable = req.value(control::kCmdKey, "") == control::cmd::kKernelDisableEvent;
	if (!disable && req.contains("probe"))
		return enable_probe(s, req, peer, lock);
	const std::vector<std::string> tracepoints = names_of(req, "tracepoints", "kernel event pattern", "*:");
	const std::vector<std::string> syscalls = names_of(req, "syscalls", "system call name", "");
	const bool all_syscalls = req.value("all_syscalls", false);
	if (tracepoints.empty() && syscalls.empty() && !all_syscalls)
		throw KernelError("no kernel event given: name tracepoints (e.g. sched_switch, 'irq:*'), or system "
		                  "calls with --syscall NAME[,NAME...] or --syscall -a");
	const std::string channel = req.value("channel", "");
	const std::string kchannel = s.kernel_spec().channel_name();
	if (!channel.empty() && channel != kchannel)
		throw KernelError("no kernel channel '" + channel + "' in session '" + s.name() + "' (it has '" +
		                  kchannel + "'): create it with `tracery enable-channel -k " + channel +
		                  "` before enabling events");
	const json filter_value = req.value("filter", json(""));
	if (!filter_value.is_string() || filter_value.get<std::string>().size() > filter::kMaxExpressionLength)
		throw KernelError("bad filter: give an expression of at most " +
		                  std::to_string(filter::kMaxExpressionLength) + " bytes");
	const std::string filter = filter_value.get<std::string>();
	std::vector<std::string> not_recorded; // events a filter's rule does not record
	if (disable && !filter.empty())
		throw KernelError("disable-event takes no --filter: it disables the events named");
	KernelSpec &k = s.edit_kernel_spec();
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
				throw KernelError("kernel event '" + t + "' is not enabled in session '" + s.name() +
				                  "': see `tracery status`");
		for (const std::string &c : syscalls)
			if (!k.syscalls.count(c))
				throw KernelError("system call '" + c + "' is not enabled in session '" + s.name() +
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
			throw KernelError("too many kernel events in session '" + s.name() + "': at most " +
			                  std::to_string(kMaxNames) + " patterns and system calls");
		// Checked against this kernel now, so that a mistyped name fails here.
		const std::vector<kernel::Tracepoint> known = kernel::list_tracepoints(tracefs_root());
		for (const std::string &t : tracepoints)
			if (kernel::match_tracepoints(known, t).empty())
				throw KernelError("no kernel tracepoint matches '" + t +
				                  "': see `tracery list -k` for this kernel's tracepoints");
		const std::vector<std::string> known_calls = kernel::list_syscalls(known);
		for (const std::string &c : syscalls)
			if (!std::binary_search(known_calls.begin(), known_calls.end(), c))
				throw KernelError("no system call '" + c +
				                  "' in this kernel's tracepoints: see `tracery list -k --syscall`");
		for (const std::string &r : rules) {
			const bool enabled = r == kernel::syscall_rule("*") ? k.all_syscalls
			                     : r.starts_with("syscall ")    ? k.syscalls.count(r.substr(8)) > 0
			                                                    : k.tracepoints.count(r) > 0;
			const auto it = k.filters.find(r);
			const std::string before = it == k.filters.end() ? "" : it->second;
			if (enabled && before != filter)
				throw KernelError("kernel event '" + r + "' is enabled already " +
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
				throw KernelError(e.what());
			}
			for (const std::string &r : rules)
				k.filters[r] = filter;
		}
		k.tracepoints.insert(tracepoints.begin(), tracepoints.end());
		k.syscalls.insert(syscalls.begin(), syscalls.end());
		k.all_syscalls |= all_syscalls;
	}
	json names = tracepoints;
	for (const std::string &c : syscalls)
		names.push_back("syscall " + c);
	if (all_syscalls)
		names.push_back("every system call");
	if (!filter.empty())
		for (auto &n : names)
			n = n.get<std::string>() + " (filter: " + filter + ")";
	return {{"session", s.name()}, {"channel", kchannel}, {"events", names}, {"not_recorded", not_recorded}};
}

json Daemon::cmd_kernel_channel(const json &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = kernel_session_for(req, peer);
	if (s.ever_started())
		throw KernelError("session '" + s.name() +
		                  "' has been started: its kernel buffer was made then; create a new session for "
		                  "another kernel channel");
	const std::string name = req.value("channel", "");
	if (name.empty() || name.size() > kMaxNameLength || !std::all_of(name.begin(), name.end(), [](char c) {
		    return isalnum(static_cast<unsigned char>(c)) || c == '_';
	    }))
		throw KernelError("bad channel name '" + name.substr(0, kMaxNameLength) +
		                  "': use letters, digits and '_'");
	if (!s.kernel_spec().channel.empty() && s.kernel_spec().channel != name)
		throw KernelError("session '" + s.name() + "' has kernel channel '" + s.kernel_spec().channel +
		                  "' already: the kernel domain has one channel (its tracefs instance's buffer)");
	const uint64_t subbuf = size_of(req, "subbuf_size", "--subbuf-size");
	const uint64_t num = size_of(req, "num_subbuf", "--num-subbuf");
	if ((subbuf == 0) != (num == 0))
		throw KernelError("give both --subbuf-size and --num-subbuf (the kernel buffer of each CPU is their "
		                  "product), or neither for the kernel's default size");
	if (subbuf * num > kMaxKernelBufferPerCpu)
		throw KernelError("a kernel buffer of " + base::format_size(subbuf * num) +
		                  " per CPU is more than 1G: give a smaller --subbuf-size or --num-subbuf");
	KernelSpec &k = s.edit_kernel_spec();
	k.channel = name;
	k.subbuf_size = subbuf;
	k.num_subbuf = num;
	k.overwrite = req.value("overwrite", false);
	return {{"session", s.name()},
	        {"channel", name},
	        {"buffer_bytes", k.subbuf_size * k.num_subbuf},
	        {"overwrite", k.overwrite}};
}

json Daemon::cmd_kernel_track(const json &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = kernel_session_for(req, peer);
	const bool untrack = req.value(control::kCmdKey, "") == control::cmd::kKernelUntrack;
	const std::vector<pid_t> pids = pids_of(req);
	KernelSpec &k = s.edit_kernel_spec();
	if (untrack) {
		for (pid_t p : pids)
			if (!k.pids.count(p))
				throw KernelError("pid " + std::to_string(p) + " is not tracked in session '" +
				                  s.name() + "': see `tracery status`");
		for (pid_t p : pids)
			k.pids.erase(p);
	} else {
		if (k.pids.size() + pids.size() > kMaxNames)
			throw KernelError("too many tracked pids: at most " + std::to_string(kMaxNames));
		k.pids.insert(pids.begin(), pids.end());
		k.follow_children = req.value("follow_children", true);
	}
	return {{"session", s.name()}, {"pids", k.pids}, {"follow_children", k.follow_children}};
}

json Daemon::cmd_kernel_list(const json &, const control::PeerCred &peer, Lock &)
{
	check_kernel_access(peer);
	const std::vector<kernel::Tracepoint> all = kernel::list_tracepoints(tracefs_root());
	json tracepoints = json::array();
	for (const kernel::Tracepoint &t : all)
		if (t.system != "syscalls")
			tracepoints.push_back(t.full_name());
	return {{"tracepoints", tracepoints}, {"syscalls", kernel::list_syscalls(all)}};
}

} // namespace tracery::daemon
