// The requests of the tracery command, as traceryd answers them. Every error
// is one line naming the problem and the fix; a failed command leaves every
// session as it was.
#include "daemon/daemon.hpp"

#include "control/messages.hpp"
#include "daemon/log.hpp"
#include "daemon/session_status.hpp"

#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"
#include "event/schema.hpp"
#include "filter/compiler.hpp"
#include "filter/parser.hpp"
#include "kernel/tracefs.hpp"

#include <fnmatch.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace tracery::daemon {

using nlohmann::json;

namespace {

struct CommandError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// The host name the relay files the session under: the protocol's name
// characters only (anything else becomes '-').
std::string relay_host_name()
{
	char buf[256] = {};
	gethostname(buf, sizeof buf - 1);
	std::string h = buf;
	for (char &c : h)
		if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
			c = '-';
	while (!h.empty() && h[0] == '.')
		h.erase(0, 1);
	return control::relay::valid_name(h) ? h : "localhost";
}

bool valid_session_name(const std::string &n)
{
	if (n.empty() || n.size() > 64 || n[0] == '.' || n[0] == '-')
		return false;
	for (char c : n)
		if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
			return false;
	return true;
}

std::vector<std::string> patterns_of(const json &req)
{
	if (req.value("all", false))
		return {"*"};
	std::vector<std::string> out;
	for (const auto &p : req.value("patterns", json::array())) {
		std::string s = p.is_string() ? p.get<std::string>() : "";
		if (s.empty() || (s != "*" && s.find(':') == std::string::npos))
			throw CommandError("bad event pattern '" + s +
			                   "': write PROVIDER:NAME, with * wildcards (e.g. 'app:*')");
		out.push_back(s);
	}
	if (out.empty())
		throw CommandError("no event given: name events (PROVIDER:NAME, * wildcards) or use -a for all");
	return out;
}

// A size of the request: a number below 2^32 (the command sends what
// base::parse_size read), else the default.
uint32_t size_argument(const json &req, const char *key, const char *option, uint32_t fallback)
{
	auto it = req.find(key);
	if (it == req.end())
		return fallback;
	if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX)
		throw CommandError(std::string("bad ") + option + " '" + it->dump() +
		                   "': give a power of two, optionally with k, M or G");
	return static_cast<uint32_t>(it->get<uint64_t>());
}

} // namespace

json Daemon::handle_command(const json &req, const control::PeerCred &peer)
{
	static const std::map<std::string, Handler> handlers = {
		{control::cmd::kCreate, &Daemon::cmd_create},
		{control::cmd::kDestroy, &Daemon::cmd_destroy},
		{control::cmd::kEnableChannel, &Daemon::cmd_enable_channel},
		{control::cmd::kEnableEvent, &Daemon::cmd_enable_event},
		{control::cmd::kDisableEvent, &Daemon::cmd_enable_event},
		{control::cmd::kAddContext, &Daemon::cmd_add_context},
		{control::cmd::kStart, &Daemon::cmd_start},
		{control::cmd::kStop, &Daemon::cmd_stop},
		{control::cmd::kStatus, &Daemon::cmd_status},
		{control::cmd::kList, &Daemon::cmd_list},
		{control::cmd::kListEvents, &Daemon::cmd_list_events},
		{control::cmd::kSnapshotRecord, &Daemon::cmd_snapshot},
		{control::cmd::kKernelEnableEvent, &Daemon::cmd_kernel_event},
		{control::cmd::kKernelDisableEvent, &Daemon::cmd_kernel_event},
		{control::cmd::kKernelEnableChannel, &Daemon::cmd_kernel_channel},
		{control::cmd::kKernelTrack, &Daemon::cmd_kernel_track},
		{control::cmd::kKernelUntrack, &Daemon::cmd_kernel_track},
		{control::cmd::kKernelList, &Daemon::cmd_kernel_list},
	};
	const std::string cmd = req.value(control::kCmdKey, "");
	auto it = handlers.find(cmd);
	if (it == handlers.end())
		return {{"ok", false},
		        {"error", "unknown request '" + cmd + "': tracery and traceryd are from different releases"}};
	Lock lock(mutex_);
	try {
		json reply = (this->*(it->second))(req, peer, lock);
		reply["ok"] = true;
		return reply;
	} catch (const std::exception &e) {
		return {{"ok", false}, {"error", e.what()}};
	}
}

TraceSession &Daemon::session_for(const json &req, const control::PeerCred &peer)
{
	const std::string name = req.value("session", "");
	TraceSession *s = nullptr;
	if (auto it = sessions_.find({peer.uid, name}); it != sessions_.end()) {
		s = it->second.get();
	} else if (peer.uid == 0) {
		// Root may act on every session: another user's, when the name is
		// not ambiguous.
		std::string owners;
		int found = 0;
		for (auto &[key, t] : sessions_) {
			if (key.second == name) {
				owners += (found++ ? ", " : "") + std::to_string(key.first);
				s = t.get();
			}
		}
		if (found > 1)
			throw CommandError(
				"users " + owners + " each have a session named '" + name +
				"' and root has none: run the command as its owner (runuser -u USER -- tracery ...)");
	}
	// Other users' sessions are not there for a user: no name tells of them.
	if (!s)
		throw CommandError("no session named '" + name +
		                   "': see `tracery list`, or create it with `tracery create " + name + "`");
	if (s->in_use())
		throw CommandError("session '" + name + "' is busy (being stopped or updated): try again in a moment");
	return *s;
}

json Daemon::cmd_create(const json &req, const control::PeerCred &peer, Lock &lock)
{
	const std::string name = req.value("session", "");
	if (!valid_session_name(name))
		throw CommandError("bad session name '" + name +
		                   "': use letters, digits, '_', '-' and '.' (at most 64)");
	// Only the user's own sessions take names from it (see daemon.hpp).
	if (sessions_.count({peer.uid, name}))
		throw CommandError("a session named '" + name +
		                   "' already exists: pick another name or `tracery destroy " + name + "`");
	const std::string url = req.value("url", "");
	const bool snapshot = req.value("snapshot", false);
	const bool local = url.empty() || req.value("local_copy", false);
	const std::string output = local ? req.value("output", "") : "";
	if (local && (output.empty() || output[0] != '/'))
		throw CommandError("output directory must be an absolute path, got '" + output + "'");
	SessionRelay relay;
	if (!url.empty()) {
		if (snapshot)
			throw CommandError("--set-url does not take --snapshot: a snapshot session's traces are "
			                   "written by `snapshot record` into its output directory");
		relay = open_relay(name, url, req, lock);
		// The connection was made without the lock: the name may be taken since.
		if (sessions_.count({peer.uid, name}))
			throw CommandError("a session named '" + name + "' was created meanwhile: pick another name");
	}
	const bool relayed = relay.link != nullptr;
	const std::string relay_url = relay.url;
	auto s = std::make_unique<TraceSession>(next_session_id_++, name, peer.uid, peer.gid, output, snapshot, quota_,
	                                        std::move(relay));
	log(Level::info, "uid %u created session %s in %s%s%s", peer.uid, name.c_str(),
	    output.empty() ? "-" : output.c_str(), relayed ? ", sent to the relay at " : "", relay_url.c_str());
	json reply = {{"session", name}, {"output", output}, {"snapshot", s->snapshot()}};
	if (relayed)
		reply["relay"] = relay_status(*s);
	sessions_[{peer.uid, name}] = std::move(s);
	return reply;
}

SessionRelay Daemon::open_relay(const std::string &session, const std::string &url, const json &req, Lock &lock)
{
	std::string why;
	const auto u = control::relay::parse_relay_url(url, control::relay::kDefaultPort, &why);
	if (!u)
		throw CommandError(why);
	SessionRelay relay;
	relay.url = control::relay::to_string(*u);
	const auto period = req.find("live_period_ns");
	if (period != req.end()) {
		if (!period->is_number_unsigned() || period->get<uint64_t>() < kMinLivePeriodNs ||
		    period->get<uint64_t>() > kMaxLivePeriodNs)
			throw CommandError("bad --live period '" + period->dump() +
			                   "': give 10ms to 1h (e.g. --live=500ms; without a value, 1s)");
		relay.live_period_ns = period->get<uint64_t>();
	}
	consumer::RelayLinkConfig c;
	c.host = u->host;
	c.port = u->port;
	c.hello.hostname = relay_host_name();
	c.hello.session = session;
	c.hello.creation_time_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
								 std::chrono::system_clock::now().time_since_epoch())
	                                                         .count());
	c.hello.live_period_ns = relay.live_period_ns;
	c.queue_bytes = kRelayQueueBytes;
	c.log = [session](const std::string &line) {
		log(Level::warn, "session %s: %s", session.c_str(), line.c_str());
	};
	relay.link = std::make_shared<consumer::RelayLink>(std::move(c));
	// Connecting takes a round trip or a timeout: not with the lock.
	lock.unlock();
	why = relay.link->open(kRelayConnectTimeoutMs);
	lock.lock();
	if (!why.empty())
		throw CommandError("cannot reach the relay at " + relay.url + " (" + why +
		                   "): start tracery-relayd there, or fix --set-url net://HOST[:PORT] (default port " +
		                   std::to_string(control::relay::kDefaultPort) + ")");
	return relay;
}

json Daemon::cmd_destroy(const json &req, const control::PeerCred &peer, Lock &lock)
{
	std::vector<SessionKey> keys;
	if (req.value("all", false)) {
		for (auto &[key, s] : sessions_)
			if (may_access(*s, peer) && !s->in_use())
				keys.push_back(key);
	} else {
		const TraceSession &s = session_for(req, peer);
		keys.emplace_back(s.owner(), s.name());
	}
	json names = json::array();
	for (const auto &key : keys) {
		auto it = sessions_.find(key);
		// stop_session below lets other requests in: one of them may have
		// taken a session of the list meanwhile.
		if (it == sessions_.end() || it->second->in_use())
			continue;
		if (it->second->started())
			stop_session(*it->second, lock);
		it = sessions_.find(key); // stop_session may have let another request in: look it up again
		if (it == sessions_.end())
			continue;
		it->second->destroy_kernel(); // its tracefs instance (logged if it stays)
		const std::shared_ptr<consumer::RelayLink> relay = it->second->relay_link();
		sessions_.erase(it);
		names.push_back(key.second);
		if (relay) { // BYE, after what is queued (bounded): not with the lock
			lock.unlock();
			const std::string why = relay->bye(kRelayStopTimeoutMs);
			lock.lock();
			if (!why.empty())
				log(Level::warn, "session %s: at its end, %s", key.second.c_str(), why.c_str());
		}
		log(Level::info, "uid %u destroyed session %s of uid %u", peer.uid, key.second.c_str(), key.first);
	}
	note_open_traces();
	return {{"destroyed", names}};
}

json Daemon::cmd_enable_channel(const json &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req, peer);
	ChannelSpec spec;
	spec.name = req.value("channel", "channel0");
	spec.subbuf_size = size_argument(req, "subbuf_size", "--subbuf-size", spec.subbuf_size);
	spec.num_subbuf = size_argument(req, "num_subbuf", "--num-subbuf", spec.num_subbuf);
	spec.mode = req.value("overwrite", false) ? ringbuf::Mode::overwrite : ringbuf::Mode::discard;
	spec.per_pid = req.value("per_pid", false);
	// Sizes the ring buffer refuses on this machine, or beyond the buffer
	// quota, are refused here, naming the limit (TraceSession::add_channel).
	Channel &ch = s.add_channel(spec);
	return {{"session", s.name()}, {"channel", ch.spec().name}, {"buffer_bytes", ch.buffer_bytes()}};
}

// A filter is refused when it does not parse or, checked against the events
// the patterns match in the programs the user can trace now, names a field
// none of them has or applies to none of their field types.
void Daemon::check_filter(const std::string &expression, const std::vector<std::string> &patterns,
                          const control::PeerCred &peer) const
{
	filter::Error error;
	auto expr = filter::parse(expression, &error);
	if (!expr)
		throw CommandError("bad filter: " + filter::render_error(expression, error));
	std::map<std::string, std::unique_ptr<event::OwnedEventDesc>> known;
	for (const auto &[id, app] : apps_) {
		if (app->gone || (peer.uid != 0 && app->cred.uid != peer.uid))
			continue;
		for (const auto &[key, schema] : app->events) {
			const std::string name = event::full_name(schema);
			if (known.count(key) ||
			    std::none_of(patterns.begin(), patterns.end(), [&](const std::string &p) {
				    return fnmatch(p.c_str(), name.c_str(), 0) == 0;
			    }))
				continue;
			try {
				known[key] = std::make_unique<event::OwnedEventDesc>(schema);
			} catch (const std::exception &) {
				// not traceable anyway
			}
		}
	}
	if (known.empty())
		return; // no program has these events yet: each checks it when it comes
	std::vector<const tracery_event_desc *> descs;
	for (const auto &[key, d] : known)
		descs.push_back(&d->desc());
	if (auto e = filter::check_fields(*expr, descs))
		throw CommandError("bad filter: " + filter::render_error(expression, *e));
}

json Daemon::cmd_enable_event(const json &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req, peer);
	const bool disable = req.value(control::kCmdKey, "") == control::cmd::kDisableEvent;
	const std::vector<std::string> patterns = patterns_of(req);
	const std::string chname = req.value("channel", "");
	Channel *ch = disable ? s.find_channel(chname.empty() ? "channel0" : chname) : &s.channel_or_default(chname);
	if (!ch)
		throw CommandError("no channel '" + (chname.empty() ? "channel0" : chname) + "' in session '" +
		                   s.name() + "'");
	const std::string filter = disable ? "" : req.value("filter", "");
	if (!filter.empty())
		check_filter(filter, patterns, peer);
	if (disable)
		ch->disable(patterns);
	else
		ch->enable(patterns, filter);
	json reply = {{"session", s.name()}, {"channel", ch->spec().name}, {"patterns", patterns}};
	if (s.started())
		reply["refused"] = update_members(s, lock); // returns once the programs apply it (bounded)
	return reply;
}

json Daemon::cmd_add_context(const json &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req, peer);
	if (s.ever_started())
		throw CommandError("session '" + s.name() +
		                   "' has been started: add context before the first `tracery start`");
	std::vector<Channel *> targets;
	const std::string chname = req.value("channel", "");
	if (chname.empty() && !s.channels().empty()) {
		for (const auto &c : s.channels())
			targets.push_back(c.get());
	} else {
		targets.push_back(&s.channel_or_default(chname));
	}
	for (const auto &t : req.value("types", json::array())) {
		const std::string type = t.is_string() ? t.get<std::string>() : "";
		for (Channel *c : targets) {
			event::ContextOptions &o = c->spec().context;
			if (type == "vpid")
				o.vpid = true;
			else if (type == "vtid")
				o.vtid = true;
			else if (type == "procname")
				o.procname = true;
			else
				throw CommandError("unknown context '" + type + "': use vpid, vtid or procname");
		}
	}
	return {{"session", s.name()}};
}

json Daemon::cmd_start(const json &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req, peer);
	if (s.started())
		throw CommandError("session '" + s.name() + "' is already started");
	// What can fail comes first (the kernel's tracing, the buffers of the
	// running programs, the metadata), and is undone if it does: a failed
	// start leaves the session as it was. Channels over a user's quota only
	// leave programs untraced.
	s.fix_layout();
	if (s.kernel_spec().any_events()) {
		check_kernel_access(peer); // a member may have left the group since
		// The kernel starts without the lock (the state dump reads /proc).
		// The journal lists it before its first kernel packet is written.
		s.begin_kernel_start();
		note_open_traces();
		try {
			without_lock(s, lock, [&] { s.start_kernel(kernel::open_tracefs(true).root); });
		} catch (const std::exception &e) {
			s.end_kernel_start();
			note_open_traces();
			log(Level::warn, "session %s not started: %s", s.name().c_str(), e.what());
			throw CommandError("cannot start session '" + s.name() + "': " + e.what());
		}
		s.end_kernel_start();
	}
	std::vector<std::pair<App *, std::vector<Buffer *>>> joining;
	std::vector<Refusal> refused;
	std::vector<TraceSession::NewBuffer> made;
	try {
		for (auto &[id, app] : apps_)
			if (!app->gone && traces(s, *app))
				joining.emplace_back(app.get(), buffers_for(s, *app, &refused, &made));
		s.write_metadata();
	} catch (const std::exception &e) {
		s.drop_new_buffers(made);
		if (s.kernel_domain()) { // its kernel trace ends here, drained without the lock
			try {
				without_lock(s, lock, [&] {
					s.stop_kernel();
				}); // its instance and trace go on at the next start
			} catch (const std::exception &stop_error) {
				log(Level::warn, "session %s: stopping its kernel part: %s", s.name().c_str(),
				    stop_error.what());
			}
		}
		log(Level::warn, "session %s not started: %s", s.name().c_str(), e.what());
		throw CommandError("cannot start session '" + s.name() + "': " + e.what());
	}
	s.mark_started();
	note_open_traces(); // before its first packet: a crash from here on is repaired at the next start
	for (const auto &ch : s.channels())
		ch->clear_not_traced();
	note(s, refused);
	std::vector<std::pair<uint64_t, uint64_t>> pending;
	for (auto &[app, buffers] : joining)
		if (uint64_t seq = join(s, *app, buffers))
			pending.emplace_back(app->id, seq);
	// Programs running now trace from the moment start returns (bounded wait).
	const std::string name = s.name();
	s.begin_busy();
	json late = wait_acks(pending, lock);
	s.end_busy();
	log(Level::info, "session %s started with %zu programs", name.c_str(), pending.size());
	json not_traced = json::array();
	for (const auto &r : refused)
		not_traced.push_back(
			{{"pid", r.what.pid}, {"channel", r.channel->spec().name}, {"reason", r.what.reason}});
	return {{"session", name},
	        {"programs", pending.size()},
	        {"not_attached", late},
	        {"not_traced", not_traced},
	        {"refused", refusals(pending)}};
}

json Daemon::cmd_stop(const json &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req, peer);
	if (!s.started())
		throw CommandError("session '" + s.name() + "' is not started");
	json reply = stop_session(s, lock);
	log(Level::info, "session %s stopped", s.name().c_str());
	return reply;
}

json Daemon::cmd_status(const json &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req, peer);
	json st = session_status(s);
	json pids = json::array();
	for (uint64_t id : members_[s.id()])
		if (auto it = apps_.find(id); it != apps_.end() && it->second->tracing.count(s.id()))
			pids.push_back(it->second->cred.pid);
	st["programs"] = pids;
	st["buffer_quota"] = {{"uid", s.owner()}, {"limit", quota_.limit()}, {"used", quota_.used(s.owner())}};
	return st;
}

json Daemon::cmd_list(const json &, const control::PeerCred &peer, Lock &)
{
	json out = json::array();
	for (auto &[key, s] : sessions_)
		if (may_access(*s, peer))
			out.push_back({{"name", s->name()},
			               {"owner", s->owner()},
			               {"output", s->output()},
			               {"state", state_name(s->state())},
			               {"snapshot", s->snapshot()},
			               {"relay", relay_status(*s)}});
	return {{"sessions", out}};
}

json Daemon::cmd_list_events(const json &, const control::PeerCred &peer, Lock &)
{
	json out = json::array();
	for (auto &[id, app] : apps_) {
		if (app->gone || (peer.uid != 0 && peer.uid != app->cred.uid))
			continue;
		json events = json::array();
		for (const auto &[key, schema] : app->events)
			events.push_back(
				{{"name", event::full_name(schema)}, {"fields", event::fields_summary(schema)}});
		out.push_back({{"pid", app->cred.pid},
		               {"uid", app->cred.uid},
		               {"procname", app->procname},
		               {"events", events}});
	}
	return {{"programs", out}};
}

json Daemon::cmd_snapshot(const json &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req, peer);
	if (!s.snapshot())
		throw CommandError("session '" + s.name() +
		                   "' is not in snapshot mode: create one with `tracery create NAME --snapshot`");
	if (!s.ever_started())
		throw CommandError("session '" + s.name() + "' has not been started: `tracery start` it first");
	// Copying and writing whole buffers takes a while: not with the lock.
	const SnapshotPlan plan = s.plan_snapshot();
	std::string path;
	without_lock(s, lock, [&] { path = s.write_snapshot(plan); });
	return {{"session", s.name()}, {"path", path}};
}

} // namespace tracery::daemon
