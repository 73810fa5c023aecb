// Sessions saved and loaded (control/session_file.hpp, docs/session-files.md):
// `save` describes sessions as the command writes them to files; `load`
// makes one again from a file's description by carrying out, in order, the
// requests that made it (create, enable-channel, enable-event, disable-event,
// add-context, track, the kernel's, start), so that a file is checked exactly
// as those commands are, each error naming the file and the JSON path of the
// value refused; a load that fails leaves no session. At its start the daemon
// loads and starts the sessions of its sessions directory's auto/ folder.
#include "daemon/daemon.hpp"

#include "daemon/log.hpp"

#include "base/fs_creds.hpp"
#include "base/whole_file.hpp"
#include "event/context.hpp"
#include "kernel/kernel_context.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace tracery::daemon {

namespace {

std::vector<control::SavedTracking> saved_tracking(const control::DomainTracking &t)
{
	std::vector<control::SavedTracking> out;
	for (const control::ProcessAttrRule &r : t.rules)
		out.push_back({r.attribute, r.all, r.values});
	return out;
}

std::optional<std::string> unless_empty(const std::string &s)
{
	return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

control::SavedChannel saved_channel(const Channel &ch)
{
	const ChannelSpec &spec = ch.spec();
	control::SavedChannel out;
	out.name = spec.name;
	out.subbuf_size = spec.subbuf_size;
	out.num_subbuf = spec.num_subbuf;
	out.overwrite = spec.mode == ringbuf::Mode::overwrite;
	out.per_pid = spec.per_pid;
	out.context = event::context_names(spec.context);
	for (const Channel::Rule &r : ch.rules())
		out.events.push_back(
			{r.pattern, unless_empty(r.filter),
		         r.exclude.empty() ? std::nullopt : std::optional<std::vector<std::string>>(r.exclude)});
	out.disabled = ch.disabled_patterns();
	if (spec.blocking_timeout_us != 0)
		out.blocking_timeout_us = spec.blocking_timeout_us;
	if (spec.tracefile.size != 0) {
		out.tracefile_size = spec.tracefile.size;
		out.tracefile_count = spec.tracefile.count;
	}
	if (spec.switch_timer_us != 0)
		out.switch_timer_us = spec.switch_timer_us;
	if (spec.monitor_timer_us != control::kDefaultMonitorTimerUs)
		out.monitor_timer_us = spec.monitor_timer_us;
	if (ch.disabled())
		out.enabled = false;
	return out;
}

std::optional<control::SavedKernelDomain> saved_kernel(const KernelSpec &k)
{
	if (!k.any_events() && k.channel.empty() && k.contexts.empty() && k.subbuf_size == 0 && !k.overwrite &&
	    k.tracefile.size == 0 && k.tracking.everyone() && !k.disabled &&
	    k.monitor_timer_us == control::kDefaultMonitorTimerUs)
		return std::nullopt;
	control::SavedKernelDomain out;
	if (k.disabled)
		out.enabled = false;
	if (k.monitor_timer_us != control::kDefaultMonitorTimerUs)
		out.monitor_timer_us = k.monitor_timer_us;
	out.channel = k.channel;
	out.subbuf_size = k.subbuf_size;
	out.num_subbuf = k.num_subbuf;
	out.overwrite = k.overwrite;
	if (k.tracefile.size != 0) {
		out.tracefile_size = k.tracefile.size;
		out.tracefile_count = k.tracefile.count;
	}
	for (const kernel::KernelContext c : k.contexts)
		out.context.emplace_back(kernel::kernel_context_name(c));
	auto filter_of = [&](const std::string &rule) {
		const auto it = k.filters.find(rule);
		return it == k.filters.end() ? std::nullopt : unless_empty(it->second);
	};
	for (const std::string &t : k.tracepoints)
		out.tracepoints.push_back({t, filter_of(t)});
	if (k.all_syscalls)
		out.syscalls.push_back({"*", filter_of(kernel::syscall_rule("*"))});
	for (const std::string &name : k.syscalls)
		out.syscalls.push_back({name, filter_of(kernel::syscall_rule(name))});
	for (const auto &[name, p] : k.probes)
		out.probes.push_back({name, p.spec, unless_empty(p.args), filter_of(kernel::probe_rule(name))});
	out.capture_buffers = k.capture_buffers;
	out.tracking = saved_tracking(kernel_tracking_status(k));
	out.follow_children = k.follow_children;
	return out;
}

// The changes that make a domain's tracking what `saved` says, from every
// process: the sets narrowed emptied (untrack --all), then their values added.
std::pair<std::vector<control::TrackingChange>, std::vector<control::TrackingChange>>
tracking_changes(const std::vector<control::SavedTracking> &saved)
{
	std::vector<control::TrackingChange> untrack, track;
	for (const control::SavedTracking &t : saved) {
		if (t.all) {
			if (!t.values.empty())
				throw CommandError("every value is tracked ('all' is true): give no 'values'");
			continue;
		}
		untrack.push_back({t.attribute, true, {}});
		if (!t.values.empty())
			track.push_back({t.attribute, false, t.values});
	}
	return {untrack, track};
}

// The directory a loaded session writes to: the one saved, unless it holds
// files already (an earlier run's trace), then a new one beside it named with
// the time of the load, as `create` names its default directories.
std::string fresh_output(const std::string &saved, uid_t owner, gid_t gid)
{
	base::FsCreds as_owner(owner, gid);
	auto holds_files = [](const std::string &dir) {
		DIR *d = opendir(dir.c_str());
		if (!d)
			return errno != ENOENT;
		bool any = false;
		while (dirent *e = readdir(d))
			any = any || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
		closedir(d);
		return any;
	};
	if (!holds_files(saved))
		return saved;
	const time_t now = time(nullptr);
	tm t{};
	localtime_r(&now, &t);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &t);
	std::string dir = saved + "-" + stamp;
	for (int n = 2; holds_files(dir) && n < 100; n++)
		dir = saved + "-" + stamp + "-" + std::to_string(n);
	return dir;
}

} // namespace

control::SavedSession Daemon::describe(const TraceSession &s) const
{
	control::SavedSession out;
	out.name = s.name();
	out.snapshot = s.snapshot();
	out.output = unless_empty(s.output());
	if (const SessionRelay &r = s.identity().relay; r.link)
		out.relay = control::SavedRelay{
			r.url.starts_with("serial://") ? r.url : "net://" + r.url,
			r.live_period_ns ? std::optional<uint64_t>(r.live_period_ns) : std::nullopt, r.public_live};
	out.started = s.started();
	for (const auto &ch : s.channels())
		out.user.channels.push_back(saved_channel(*ch));
	out.user.tracking = saved_tracking(s.user_tracking().status());
	out.kernel = saved_kernel(s.kernel_spec());
	out.snapshot_outputs = s.snapshot_outputs().outputs();
	if (const RotationSchedule &r = s.chunks().schedule(); r.any())
		out.rotation = control::SavedRotation{r.timer_ns, r.size_bytes};
	// The owner's triggers that name the session, in their condition or an action.
	std::vector<control::SavedTrigger> triggers;
	for (const control::TriggerStatus &t : triggers_.list(s.owner())) {
		const bool names = t.condition.session == s.name() ||
		                   std::any_of(t.actions.begin(), t.actions.end(),
		                               [&](const auto &a) { return a.action.session == s.name(); });
		if (t.owner != s.owner() || !names)
			continue;
		control::SavedTrigger saved{t.name, t.condition, {}};
		for (const auto &a : t.actions)
			saved.actions.push_back(a.action);
		triggers.push_back(std::move(saved));
	}
	if (!triggers.empty())
		out.triggers = std::move(triggers);
	return out;
}

control::SaveReply Daemon::cmd_save(const control::Save &req, const control::PeerCred &peer, Lock &)
{
	control::SaveReply reply;
	if (req.all.value_or(false)) {
		for (const auto &[key, s] : sessions_)
			if (key.first == peer.uid)
				reply.sessions.push_back(describe(*s));
	} else {
		reply.sessions.push_back(describe(session_for(req.session.value_or(""), peer)));
	}
	return reply;
}

control::LoadReply Daemon::cmd_load(const control::Load &req, const control::PeerCred &peer, Lock &lock)
{
	const control::SavedSession &f = req.session;
	// Each step's error names the file (and where in it the value is).
	auto step = [&](const std::string &where, auto &&work) {
		try {
			work();
		} catch (const std::exception &e) {
			throw CommandError(req.file + ": " + (where.empty() ? "" : where + ": ") + e.what());
		}
	};
	control::Create create;
	create.session = f.name;
	create.snapshot = f.snapshot;
	if (f.output) {
		if (f.output->empty() || (*f.output)[0] != '/')
			throw CommandError(req.file + ": output: '" + *f.output + "' is not an absolute path");
		create.output = fresh_output(*f.output, peer.uid, peer.gid);
	}
	if (f.relay) {
		create.url = f.relay->url;
		create.local_copy = f.output.has_value();
		create.live_period_ns = f.relay->live_period_ns;
		create.public_live = f.relay->public_live;
	} else if (!f.output) {
		throw CommandError(req.file + ": the session has neither an 'output' nor a 'relay': give one");
	}
	control::CreateReply created;
	step("", [&] { created = cmd_create(create, peer, lock); }); // its errors name the value
	try {
		replay(req, peer, lock);
		control::LoadReply reply{f.name, created.output, false};
		if (f.started || req.start.value_or(false)) {
			step("started", [&] { cmd_start(control::Start{{f.name}}, peer, lock); });
			reply.started = true;
		}
		return reply;
	} catch (...) {
		try {
			cmd_destroy(control::Destroy{std::nullopt, f.name}, peer, lock);
		} catch (const std::exception &e) {
			log(Level::warn, "loading %s: the session could not be removed again: %s", req.file.c_str(),
			    e.what());
		}
		throw;
	}
}

void Daemon::replay(const control::Load &req, const control::PeerCred &peer, Lock &lock)
{
	const control::SavedSession &f = req.session;
	const std::string &session = f.name;
	auto step = [&](const std::string &where, auto &&work) {
		try {
			work();
		} catch (const std::exception &e) {
			throw CommandError(req.file + ": " + where + ": " + e.what());
		}
	};
	for (size_t i = 0; i < f.user.channels.size(); i++) {
		const control::SavedChannel &c = f.user.channels[i];
		const std::string at = "user.channels[" + std::to_string(i) + "]";
		step(at, [&] {
			cmd_enable_channel({session, c.name, c.subbuf_size, c.num_subbuf, c.overwrite, c.per_pid,
			                    c.blocking_timeout_us, c.tracefile_size, c.tracefile_count,
			                    c.switch_timer_us, c.monitor_timer_us},
			                   peer, lock);
		});
		for (size_t j = 0; j < c.events.size(); j++) {
			const control::SavedEventRule &e = c.events[j];
			control::EnableEvent enable;
			enable.session = session;
			enable.patterns = {e.pattern};
			enable.channel = c.name;
			enable.filter = e.filter;
			enable.exclude = e.exclude;
			step(at + ".events[" + std::to_string(j) + "]",
			     [&] { cmd_event_rules(enable, false, peer, lock); });
		}
		if (!c.disabled.empty()) {
			control::DisableEvent disable;
			disable.session = session;
			disable.patterns = c.disabled;
			disable.channel = c.name;
			step(at + ".disabled", [&] { cmd_event_rules(disable, true, peer, lock); });
		}
		if (!c.context.empty())
			step(at + ".context", [&] { cmd_add_context({session, c.name, c.context}, peer, lock); });
	}
	auto track = [&](const std::string &domain, const std::vector<control::SavedTracking> &saved,
	                 std::optional<bool> follow_children, const std::string &at) {
		step(at, [&] {
			const auto [untrack, track] = tracking_changes(saved);
			if (!untrack.empty())
				cmd_track({session, domain, untrack, std::nullopt}, true, peer, lock);
			const bool pids = std::any_of(track.begin(), track.end(),
			                              [](const auto &c) { return c.attribute == "pid"; });
			if (!track.empty())
				cmd_track({session, domain, track, pids ? follow_children : std::nullopt}, false, peer,
				          lock);
		});
	};
	track("user", f.user.tracking, std::nullopt, "user.tracking");
	for (size_t i = 0; i < f.user.channels.size(); i++)
		if (!f.user.channels[i].enabled.value_or(true))
			step("user.channels[" + std::to_string(i) + "].enabled", [&] {
				cmd_disable_channel({session, f.user.channels[i].name, false}, peer, lock);
			});
	if (f.rotation)
		step("rotation", [&] {
			cmd_enable_rotation({session, f.rotation->timer_ns, f.rotation->size_bytes}, peer, lock);
		});
	for (size_t i = 0; f.triggers && i < f.triggers->size(); i++)
		step("triggers[" + std::to_string(i) + "]", [&] { load_trigger((*f.triggers)[i], peer, lock); });
	for (size_t i = 0; i < f.snapshot_outputs.size(); i++)
		step("snapshot_outputs[" + std::to_string(i) + "]", [&] {
			cmd_snapshot_add_output({session, f.snapshot_outputs[i]}, peer, lock);
		});
	if (!f.kernel)
		return;
	const control::SavedKernelDomain &k = *f.kernel;
	if (!k.channel.empty() || k.subbuf_size || k.num_subbuf || k.overwrite || k.tracefile_size ||
	    k.monitor_timer_us) {
		control::KernelEnableChannel channel{session,           k.channel,         std::nullopt,
		                                     std::nullopt,      k.overwrite,       k.tracefile_size,
		                                     k.tracefile_count, k.monitor_timer_us};
		if (k.subbuf_size || k.num_subbuf) {
			channel.subbuf_size = k.subbuf_size;
			channel.num_subbuf = k.num_subbuf;
		}
		step("kernel.channel", [&] { cmd_kernel_channel(channel, peer, lock); });
	}
	if (!k.context.empty())
		step("kernel.context", [&] { cmd_kernel_context({session, "", k.context}, peer, lock); });
	for (size_t i = 0; i < k.tracepoints.size(); i++) {
		control::KernelEnableEvent e;
		e.session = session;
		e.filter = k.tracepoints[i].filter;
		e.tracepoints = std::vector<std::string>{k.tracepoints[i].name};
		step("kernel.tracepoints[" + std::to_string(i) + "]", [&] { cmd_kernel_event(e, false, peer, lock); });
	}
	for (size_t i = 0; i < k.syscalls.size(); i++) {
		control::KernelEnableEvent e;
		e.session = session;
		e.filter = k.syscalls[i].filter;
		if (k.syscalls[i].name == "*")
			e.all_syscalls = true;
		else
			e.syscalls = std::vector<std::string>{k.syscalls[i].name};
		if (i == 0 && k.capture_buffers)
			e.capture_buffers = k.capture_buffers;
		step("kernel.syscalls[" + std::to_string(i) + "]", [&] { cmd_kernel_event(e, false, peer, lock); });
	}
	if (k.capture_buffers && k.syscalls.empty())
		throw CommandError(req.file + ": kernel.capture_buffers: the buffers of system calls are captured "
		                              "only with system calls enabled: give 'syscalls' or 0");
	for (size_t i = 0; i < k.probes.size(); i++) {
		const control::SavedProbe &p = k.probes[i];
		control::KernelEnableEvent e;
		e.session = session;
		e.filter = p.filter;
		e.probe = p.spec;
		e.probe_name = p.name;
		e.args = p.args;
		step("kernel.probes[" + std::to_string(i) + "]", [&] { cmd_kernel_event(e, false, peer, lock); });
	}
	track("kernel", k.tracking, k.follow_children, "kernel.tracking");
	if (!k.enabled.value_or(true))
		step("kernel.enabled", [&] {
			cmd_disable_channel({session, k.channel.empty() ? "channel0" : k.channel, true}, peer, lock);
		});
}

void Daemon::load_trigger(const control::SavedTrigger &t, const control::PeerCred &peer, Lock &lock)
{
	// Triggers outlive sessions: after `destroy`, the trigger a session file
	// names may be there still. The same one is kept; another of that name
	// is an error.
	for (const control::TriggerStatus &have : triggers_.list(peer.uid)) {
		if (have.owner != peer.uid || have.name != t.name)
			continue;
		std::vector<control::TriggerAction> actions;
		for (const auto &a : have.actions)
			actions.push_back(a.action);
		if (have.condition == t.condition && actions == t.actions)
			return;
		throw CommandError("you have a trigger named '" + t.name +
		                   "' that is not this one: remove it first (`tracery remove-trigger " + t.name + "`)");
	}
	cmd_add_trigger({t.name, t.condition, t.actions}, peer, lock);
}

void Daemon::load_auto_sessions()
{
	const std::string dir = control::default_sessions_dir() + "/" + control::kAutoSessionsFolder;
	DIR *d = opendir(dir.c_str());
	if (!d) {
		if (errno != ENOENT)
			log(Level::warn, "auto sessions: cannot read %s: %s", dir.c_str(), strerror(errno));
		return;
	}
	std::vector<std::string> files;
	constexpr size_t kMaxAutoSessions = 256;
	while (dirent *e = readdir(d)) {
		const std::string name = e->d_name;
		const size_t suffix = strlen(control::kSessionFileSuffix);
		if (name[0] != '.' && name.size() > suffix &&
		    name.compare(name.size() - suffix, suffix, control::kSessionFileSuffix) == 0)
			files.push_back(dir + "/" + name);
	}
	closedir(d);
	std::sort(files.begin(), files.end());
	if (files.size() > kMaxAutoSessions) {
		log(Level::warn, "auto sessions: %zu files in %s, loading the first %zu", files.size(), dir.c_str(),
		    kMaxAutoSessions);
		files.resize(kMaxAutoSessions);
	}
	// The daemon's own sessions, as if its user had loaded them.
	const control::PeerCred self{getpid(), geteuid(), getegid()};
	for (const std::string &path : files) {
		try {
			// Only its user's (or root's) files, which no one else may change:
			// what they say is done with the daemon's rights.
			base::WholeFileRules rules;
			rules.max_size = control::kMaxSessionFileBytes;
			rules.what = "a session file";
			rules.check = [&](const struct stat &st) -> std::string {
				if ((st.st_uid != self.uid && st.st_uid != 0) || (st.st_mode & 022))
					return path + ": it must belong to uid " + std::to_string(self.uid) +
					       " (or root) and be writable by no one else";
				return "";
			};
			std::string text;
			if (std::string why = base::read_whole_file(path, rules, &text); !why.empty())
				throw std::runtime_error(why);
			control::Load req{control::parse_session_file(text), path, true};
			Lock lock(mutex_);
			const control::LoadReply r = cmd_load(req, self, lock);
			log(Level::info, "auto session %s loaded from %s and started, traces in %s", r.session.c_str(),
			    path.c_str(), r.output.empty() ? "the relay" : r.output.c_str());
		} catch (const std::exception &e) {
			log(Level::error, "auto session %s not loaded: %s", path.c_str(), e.what());
		}
	}
}

} // namespace tracery::daemon
