// A session's life as the tracery command asks for it, as traceryd
// answers: create (to a directory, a relay or both), start, stop, status,
// list, snapshot record and destroy. Every error is one line naming the
// problem and the fix; a failed command leaves every session as it was.
#include "daemon/daemon.hpp"

#include "daemon/log.hpp"
#include "daemon/session_status.hpp"

#include "control/auth.hpp"
#include "control/relay_connection.hpp"
#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"
#include "control/tls.hpp"
#include "kernel/tracefs.hpp"

#include <unistd.h>

#include <chrono>

namespace tracery::daemon {

// See session_identity.hpp.
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

namespace {

bool valid_session_name(const std::string &n)
{
	if (n.empty() || n.size() > 64 || n[0] == '.' || n[0] == '-')
		return false;
	for (char c : n)
		if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
			return false;
	return true;
}

// create --relay-key and --relay-ca, as the command read them: checked again.
control::relay::ClientSecurity relay_security(const control::Create &req)
{
	control::relay::ClientSecurity security;
	if (req.relay_key_name.has_value() != req.relay_key_secret.has_value())
		throw CommandError("--relay-key: a key's name comes with its secret");
	if (req.relay_key_name) {
		control::auth::Key key;
		key.name = *req.relay_key_name;
		std::string why = control::auth::parse_secret(*req.relay_key_secret, &key.secret);
		if (why.empty() && !control::auth::valid_key_name(key.name))
			why = "a key name is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'";
		if (!why.empty())
			throw CommandError("--relay-key: " + why);
		security.key = std::move(key);
	}
	if (req.relay_ca_pem)
		if (std::string why =
		            control::tls::Context::client_from_pem(*req.relay_ca_pem, "--relay-ca", &security.tls);
		    !why.empty())
			throw CommandError(why);
	return security;
}

} // namespace

control::CreateReply Daemon::cmd_create(const control::Create &req, const control::PeerCred &peer, Lock &lock)
{
	const std::string &name = req.session;
	if (!valid_session_name(name))
		throw CommandError("bad session name '" + name +
		                   "': use letters, digits, '_', '-' and '.' (at most 64)");
	// Only the user's own sessions take names from it (see daemon.hpp).
	if (sessions_.count({peer.uid, name}))
		throw CommandError("a session named '" + name +
		                   "' already exists: pick another name or `tracery destroy " + name + "`");
	const std::string url = req.url.value_or("");
	const bool snapshot = req.snapshot;
	const bool local = url.empty() || req.local_copy.value_or(false);
	const std::string output = local ? req.output.value_or("") : "";
	if (local && (output.empty() || output[0] != '/'))
		throw CommandError("output directory must be an absolute path, got '" + output + "'");
	SessionRelay relay;
	if (snapshot) {
		// LTTng's form, with a URL: the URL is where its snapshots go; nothing is connected before one
		// is recorded. The key and CAs are those of every snapshot it sends to a relay (to its
		// output's URL, `snapshot add-output`'s, `snapshot record`'s).
		if (req.live_period_ns)
			throw CommandError("--live does not take --snapshot: a snapshot session sends nothing until "
			                   "`snapshot record`");
		relay.snapshot_security = relay_security(req);
	} else if (!url.empty()) {
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
	if (!url.empty() && snapshot) {
		try {
			s->snapshot_outputs().add_output({"", url, 0});
		} catch (const std::runtime_error &e) {
			throw CommandError(e.what());
		}
	}
	const control::CreateReply reply{name, output, s->snapshot(), relay_status(*s)};
	sessions_[{peer.uid, name}] = std::move(s);
	return reply;
}

SessionRelay Daemon::open_relay(const std::string &session, const std::string &url, const control::Create &req,
                                Lock &lock)
{
	const std::optional<uint64_t> live_period_ns = req.live_period_ns;
	const bool public_live = req.public_live.value_or(false);
	std::string why;
	const auto u = control::relay::parse_relay_url(url, control::relay::kDefaultPort, &why);
	if (!u)
		throw CommandError(why);
	SessionRelay relay;
	relay.url = control::relay::to_string(*u);
	relay.public_live = public_live;
	control::relay::ClientSecurity security = relay_security(req);
	if (live_period_ns) {
		if (*live_period_ns < kMinLivePeriodNs || *live_period_ns > kMaxLivePeriodNs)
			throw CommandError("bad --live period '" + std::to_string(*live_period_ns) +
			                   "': give 10ms to 1h (e.g. --live=500ms; without a value, 1s)");
		relay.live_period_ns = *live_period_ns;
	} else if (public_live) {
		throw CommandError("--public-live marks a live session: add --live[=PERIOD]");
	}
	consumer::RelayLinkConfig c;
	c.host = u->host;
	c.port = u->port;
	c.serial = u->serial;
	c.hello.hostname = relay_host_name();
	c.hello.session = session;
	c.hello.creation_time_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
								 std::chrono::system_clock::now().time_since_epoch())
	                                                         .count());
	c.hello.live_period_ns = relay.live_period_ns;
	c.hello.flags = public_live ? control::relay::kHelloPublicLive : 0;
	c.queue_bytes = kRelayQueueBytes;
	c.security = std::move(security);
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
		                   std::to_string(control::relay::kDefaultPort) +
		                   "), or the key and CAs the relay asks for (--relay-key, --relay-ca)");
	return relay;
}

control::DestroyReply Daemon::cmd_destroy(const control::Destroy &req, const control::PeerCred &peer, Lock &lock)
{
	std::vector<SessionKey> keys;
	if (req.all.value_or(false)) {
		for (auto &[key, s] : sessions_)
			if (may_access(*s, peer) && !s->in_use())
				keys.push_back(key);
	} else {
		const TraceSession &s = session_for(req.session.value_or(""), peer);
		keys.emplace_back(s.owner(), s.name());
	}
	control::DestroyReply reply;
	for (const auto &key : keys) {
		wait_rotation(key, lock);
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
		archive_last_chunk(*it->second);
		const std::shared_ptr<consumer::RelayLink> relay = it->second->relay_link();
		sessions_.erase(it);
		reply.destroyed.push_back(key.second);
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
	return reply;
}

control::StartReply Daemon::cmd_start(const control::Start &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	wait_kernel_move(s, lock);
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
	control::StartReply reply;
	reply.not_attached = wait_acks(pending, lock);
	s.end_busy();
	log(Level::info, "session %s started with %zu programs", name.c_str(), pending.size());
	reply.session = name;
	reply.programs = pending.size();
	for (const auto &r : refused)
		reply.not_traced.push_back({r.what.pid, std::nullopt, r.channel->spec().name, r.what.reason});
	reply.refused = refusals(pending);
	return reply;
}

control::StopReply Daemon::cmd_stop(const control::Stop &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	if (!s.started())
		throw CommandError("session '" + s.name() + "' is not started");
	control::StopReply reply = stop_session(s, lock);
	log(Level::info, "session %s stopped", s.name().c_str());
	return reply;
}

control::StatusReply Daemon::cmd_status(const control::Status &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req.session, peer);
	control::StatusReply st = session_status(s);
	for (uint64_t id : members_[s.id()])
		if (auto it = apps_.find(id); it != apps_.end() && it->second->tracing.count(s.id()))
			st.programs.push_back(it->second->cred.pid);
	st.buffer_quota = {s.owner(), quota_.limit(), quota_.used(s.owner())};
	return st;
}

control::ListReply Daemon::cmd_list(const control::List &, const control::PeerCred &peer, Lock &)
{
	control::ListReply reply;
	for (auto &[key, s] : sessions_)
		if (may_access(*s, peer))
			reply.sessions.push_back({s->name(), s->owner(), s->output(), state_name(s->state()),
			                          s->snapshot(), relay_status(*s)});
	return reply;
}

control::SnapshotRecordReply Daemon::cmd_snapshot(const control::SnapshotRecord &req, const control::PeerCred &peer,
                                                  Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	if (!s.snapshot())
		throw CommandError("session '" + s.name() +
		                   "' is not in snapshot mode: create one with `tracery create NAME --snapshot`");
	if (!s.ever_started())
		throw CommandError("session '" + s.name() + "' has not been started: `tracery start` it first");
	// Copying and writing whole buffers takes a while: not with the lock.
	const SnapshotPlan plan = s.plan_snapshot(req);
	std::string path;
	without_lock(s, lock, [&] { path = s.write_snapshot(plan); });
	return {s.name(), path};
}

} // namespace tracery::daemon
