// traceryd state and the conversation with programs: see daemon.hpp.
// The commands of the tracery command are in commands.cpp.
#include "daemon/daemon.hpp"

#include "base/fs_creds.hpp"
#include "control/messages.hpp"
#include "daemon/log.hpp"
#include "daemon/session_status.hpp"

#include "event/schema.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/statvfs.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <chrono>

namespace tracery::daemon {

using nlohmann::json;

bool in_group(uid_t uid, gid_t primary, gid_t group)
{
	if (primary == group)
		return true;
	passwd pw, *res = nullptr;
	std::vector<char> buf(16384);
	if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) != 0 || !res)
		return false;
	int n = 64;
	std::vector<gid_t> groups(static_cast<size_t>(n));
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) {
		groups.resize(static_cast<size_t>(n));
		if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0)
			return false;
	}
	for (int i = 0; i < n; i++)
		if (groups[static_cast<size_t>(i)] == group)
			return true;
	return false;
}

bool Daemon::may_access(const TraceSession &s, const control::PeerCred &peer) const
{
	return peer.uid == 0 || peer.uid == s.owner();
}

bool Daemon::traces(const TraceSession &s, const App &app) const { return s.owner() == 0 || s.owner() == app.cred.uid; }

json Daemon::session_ids(TraceSession &s, App &app)
{
	json chans = json::array();
	for (const auto &ch : s.channels())
		chans.push_back({{"index", ch->index()},
		                 {"ids", s.ids_for(*ch, app.events)},
		                 {"filters", s.filters_for(*ch, app.events)}});
	return chans;
}

std::vector<Buffer *> Daemon::buffers_for(TraceSession &s, App &app, std::vector<Refusal> *refused,
                                          std::vector<TraceSession::NewBuffer> *made)
{
	std::vector<Buffer *> buffers;
	for (const auto &ch : s.channels()) {
		std::string why;
		Buffer *b = nullptr;
		try {
			b = s.buffer_for(*ch, app.cred.uid, app.cred.pid, &why, made);
			if (!b)
				why += "; stop a session of that user, or give traceryd a larger --buffer-quota";
		} catch (const std::exception &e) {
			if (made)
				throw;
			why = e.what();
		}
		if (!b)
			refused->push_back({ch.get(), {app.cred.pid, app.cred.uid, why}});
		buffers.push_back(b);
	}
	return buffers;
}

void Daemon::note(TraceSession &s, const std::vector<Refusal> &refused)
{
	for (const auto &r : refused) {
		log(Level::warn, "session %s: channel %s does not trace program %d (uid %u): %s", s.name().c_str(),
		    r.channel->spec().name.c_str(), r.what.pid, r.what.uid, r.what.reason.c_str());
		r.channel->note_not_traced(r.what);
	}
}

uint64_t Daemon::join(TraceSession &s, App &app, const std::vector<Buffer *> &buffers)
{
	if (std::none_of(buffers.begin(), buffers.end(), [](const Buffer *b) { return b != nullptr; }))
		return 0;
	json chans = session_ids(s, app);
	std::vector<int> fds;
	for (const auto &ch : s.channels()) {
		json &c = chans[ch->index()];
		Buffer *b = buffers[ch->index()];
		if (!b) {
			c["buffer"] = false; // this channel does not trace the program
			continue;
		}
		const event::ContextOptions &ctx = ch->spec().context;
		c["context"] = {{"vpid", ctx.vpid}, {"vtid", ctx.vtid}, {"procname", ctx.procname}};
		c["clock"] = clock::tick_unit_name(s.tick_unit());
		fds.push_back(b->ring->fd());
	}
	const uint64_t seq = request(
		app, s, {{control::kTypeKey, control::msg::kStartSession}, {"name", s.name()}, {"channels", chans}},
		fds);
	if (seq)
		members_[s.id()].insert(app.id);
	return seq;
}

uint64_t Daemon::request(App &app, const TraceSession &s, json msg, std::span<const int> fds)
{
	const uint64_t seq = next_seq_++;
	msg["session"] = s.id();
	msg["seq"] = seq;
	if (!app.send(msg, fds))
		return 0;
	app.awaiting[seq] = s.id();
	return seq;
}

void Daemon::take_ack(App &app, const json &ack)
{
	const uint64_t seq = ack.value("seq", uint64_t{0});
	const auto it = app.awaiting.find(seq);
	if (it == app.awaiting.end())
		return; // not a request of ours, or acknowledged before
	const uint64_t session = it->second;
	app.awaiting.erase(it);
	if (ack.value("tracing", false))
		app.tracing.insert(session);
	const json refused = ack.value("refused", json::array());
	if (!refused.is_array() || refused.empty())
		return;
	// A filter is refused once per event: no more entries than the program
	// has events, and each reason cut to a line.
	constexpr size_t kMaxReason = 512;
	json kept = json::array();
	for (const auto &r : refused) {
		if (kept.size() >= app.events.size() || !r.is_object())
			break;
		std::string event = r.value("event", ""), reason = r.value("reason", "");
		if (event.size() > kMaxReason)
			event.resize(kMaxReason);
		if (reason.size() > kMaxReason)
			reason.resize(kMaxReason);
		log(Level::warn, "program %d refused the filter of %s: %s", app.cred.pid, event.c_str(),
		    reason.c_str());
		kept.push_back({{"event", std::move(event)}, {"reason", std::move(reason)}});
	}
	app.refused[seq] = std::move(kept);
	if (app.refused.size() > 64) // nobody waits for the oldest any more
		app.refused.erase(app.refused.begin());
}

json Daemon::wait_acks(const std::vector<std::pair<uint64_t, uint64_t>> &pending, Lock &lock)
{
	auto late = [&] {
		json pids = json::array();
		for (auto [id, seq] : pending)
			if (auto it = apps_.find(id);
			    it != apps_.end() && !it->second->gone && it->second->awaiting.count(seq))
				pids.push_back(it->second->cred.pid);
		return pids;
	};
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.quiesce_timeout_ms);
	acks_.wait_until(lock, deadline, [&] { return late().empty(); });
	return late();
}

json Daemon::refusals(const std::vector<std::pair<uint64_t, uint64_t>> &pending)
{
	json out = json::array();
	for (auto [id, seq] : pending) {
		auto it = apps_.find(id);
		if (it == apps_.end())
			continue;
		auto r = it->second->refused.find(seq);
		if (r == it->second->refused.end())
			continue;
		for (const auto &one : r->second)
			out.push_back({{"pid", it->second->cred.pid},
			               {"event", one.value("event", "")},
			               {"reason", one.value("reason", "")}});
		it->second->refused.erase(r);
	}
	return out;
}

json Daemon::update_members(TraceSession &s, Lock &lock)
{
	std::vector<std::pair<uint64_t, uint64_t>> pending;
	for (uint64_t id : members_[s.id()]) {
		auto it = apps_.find(id);
		if (it == apps_.end() || it->second->gone)
			continue;
		if (const uint64_t seq = request(
			    *it->second, s,
			    {{control::kTypeKey, control::msg::kUpdate}, {"channels", session_ids(s, *it->second)}}))
			pending.emplace_back(id, seq);
	}
	s.begin_busy();
	wait_acks(pending, lock);
	s.end_busy();
	return refusals(pending);
}

void Daemon::app_registered(const std::shared_ptr<App> &app, const json &hello)
{
	Lock lock(mutex_);
	app->procname = hello.value("procname", "");
	add_events(*app, hello.value("events", json::array()));
	apps_[app->id] = app;
	log(Level::info, "program %d (%s, uid %u) registered with %zu events", app->cred.pid, app->procname.c_str(),
	    app->cred.uid, app->events.size());
	for (auto &[name, s] : sessions_) {
		if (!s->started() || !traces(*s, *app))
			continue;
		// A channel whose buffer does not fit or cannot be made does not
		// trace this program; the others do. Nothing here throws.
		std::vector<Refusal> refused;
		std::vector<Buffer *> buffers = buffers_for(*s, *app, &refused);
		note(*s, refused);
		join(*s, *app, buffers);
	}
	app->send({{control::kTypeKey, control::msg::kReady}});
}

void Daemon::add_events(App &app, const json &schemas)
{
	for (const auto &schema : schemas) {
		try {
			json checked = event::checked_schema(schema);
			std::string key = event::schema_key(checked);
			app.events[std::move(key)] = std::move(checked);
		} catch (const std::invalid_argument &e) {
			log(Level::warn, "program %d: an event it declared is not traced: %s", app.cred.pid, e.what());
		}
	}
}

void Daemon::app_message(App &app, const control::Message &msg)
{
	Lock lock(mutex_);
	const std::string type = msg.body.value(control::kTypeKey, "");
	if (type == control::msg::kAck) {
		take_ack(app, msg.body);
		acks_.notify_all();
	} else if (type == control::msg::kNewEvents) {
		add_events(app, msg.body.value("events", json::array()));
		json sessions = json::array();
		for (auto &[name, s] : sessions_)
			if (s->started() && members_[s->id()].count(app.id))
				sessions.push_back({{"session", s->id()}, {"channels", session_ids(*s, app)}});
		app.send({{control::kTypeKey, control::msg::kIds},
		          {"req", msg.body.value("req", uint64_t{0})},
		          {"sessions", sessions}});
	} else if (!app.told_unknown_type) { // once: a program may send many
		app.told_unknown_type = true;
		log(Level::warn, "program %d: unknown message type '%s' (further ones not logged)", app.cred.pid,
		    type.c_str());
	}
}

void Daemon::app_gone(App &app)
{
	Lock lock(mutex_);
	app.gone = true;
	RetiredWork work;
	for (auto &[name, s] : sessions_) {
		for (auto &r : s->program_ended(app.cred.pid, app.cred.uid))
			work.emplace_back(s.get(), std::move(r));
		members_[s->id()].erase(app.id);
	}
	apps_.erase(app.id);
	acks_.notify_all();
	log(Level::info, "program %d (%s) is gone", app.cred.pid, app.procname.c_str());
	if (work.empty())
		return;
	to_finish_.push_back(std::move(work));
	retired_.notify_one();
}

Daemon::Daemon(DaemonOptions options)
	: options_(std::move(options)), quota_(options_.buffer_quota), journal_(options_.rundir)
{
	finisher_ = std::thread([this] { finisher(); });
}

Daemon::~Daemon()
{
	{
		Lock lock(mutex_);
		closing_ = true;
	}
	retired_.notify_one();
	finisher_.join();
}

void Daemon::finisher()
{
	pthread_setname_np(pthread_self(), "finish-buffers");
	Lock lock(mutex_);
	for (;;) {
		retired_.wait(lock, [&] { return closing_ || !to_finish_.empty(); });
		if (to_finish_.empty())
			return;
		RetiredWork work = std::move(to_finish_.front());
		to_finish_.pop_front();
		finish_unlocked(std::move(work), lock);
	}
}

void Daemon::finish_unlocked(RetiredWork work, Lock &lock)
{
	if (work.empty())
		return;
	lock.unlock();
	for (auto &[s, r] : work)
		s->finish(r);
	lock.lock();
	for (auto &[s, r] : work)
		s->account(r);
	finished_.notify_all();
}

json Daemon::lost_report(const TraceSession &s) const
{
	json lost = json::array();
	for (const auto &ch : s.channels())
		lost.push_back({{"channel", ch->spec().name}, {"lost", ch->lost()}});
	const kernel::KernelSession *k = s.kernel_session();
	if (k && !s.snapshot()) // a snapshot session's kernel losses are in each snapshot's trace
		lost.push_back(
			{{"channel", s.kernel_spec().channel_name() + " (kernel)"}, {"lost", k->counts().discarded}});
	return lost;
}

json Daemon::stop_session(TraceSession &s, Lock &lock)
{
	s.mark_stopping();
	std::vector<std::pair<uint64_t, uint64_t>> pending;
	for (uint64_t id : members_[s.id()]) {
		auto it = apps_.find(id);
		if (it == apps_.end())
			continue;
		it->second->tracing.erase(s.id());
		if (const uint64_t seq = request(*it->second, s, {{control::kTypeKey, control::msg::kStopSession}}))
			pending.emplace_back(id, seq);
	}
	json late = wait_acks(pending, lock);
	if (!late.empty())
		log(Level::warn, "session %s: %zu programs did not detach within %d ms", s.name().c_str(), late.size(),
		    options_.quiesce_timeout_ms);
	members_.erase(s.id());
	// Buffers of programs that ended meanwhile are being finished by other
	// threads: the trace is whole once they are too.
	finished_.wait(lock, [&] { return !s.finishing_buffers(); });
	RetiredWork work;
	for (auto &r : s.retire_buffers(late.empty()))
		work.emplace_back(&s, std::move(r));
	finish_unlocked(std::move(work), lock);
	// The kernel trace too: every page drained, the streams closed, without
	// the lock (`stopping` keeps other commands off the session). Then what
	// the relay was sent is confirmed (bounded).
	lock.unlock();
	const std::string kernel_error = s.stop_kernel();
	const std::string relay_error = s.relay_link() ? s.relay_link()->flush(kRelayStopTimeoutMs) : "";
	lock.lock();
	s.mark_stopped();
	json quarantined = json::array();
	for (const auto &ch : s.channels())
		for (auto q : ch->quarantined()) {
			q["channel"] = ch->spec().name;
			quarantined.push_back(std::move(q));
		}
	json reply = {{"ok", true},
	              {"session", s.name()},
	              {"lost", lost_report(s)},
	              {"not_detached", late},
	              {"quarantined", quarantined}};
	if (!kernel_error.empty())
		reply["kernel_error"] = kernel_error;
	if (s.relay_link()) {
		reply["relay"] = relay_status(s);
		if (!relay_error.empty())
			reply["relay_error"] = relay_error;
	}
	// The consumers do not tell us of failed writes (they log them). A disk that
	// cannot take one more packet (a failed write is truncated away) is full.
	uint64_t packet = 4096;
	for (const auto &ch : s.channels())
		packet = std::max<uint64_t>(packet, ch->spec().subbuf_size + 4096);
	struct statvfs vfs;
	if (!s.snapshot() && s.local() && statvfs(s.output().c_str(), &vfs) == 0 &&
	    static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < packet)
		reply["disk_full"] = true;
	return reply;
}

void Daemon::note_open_traces()
{
	std::vector<JournalEntry> entries;
	for (const auto &[key, s] : sessions_) {
		if (!s->may_have_trace())
			continue;
		// Canonical, resolved as the owner: the repair follows no symbolic link.
		std::string dir = s->output();
		{
			base::FsCreds as_owner(s->owner(), s->owner_gid());
			char real[PATH_MAX];
			if (realpath(dir.c_str(), real))
				dir = real;
		}
		entries.push_back({s->owner(), s->owner_gid(), std::move(dir)});
	}
	if (entries == journaled_)
		return;
	try {
		journal_.write(entries);
		journaled_ = std::move(entries);
	} catch (const std::exception &e) {
		log(Level::error, "%s: traces cut by a crash would not be repaired at the next start", e.what());
	}
}

void Daemon::shutdown()
{
	Lock lock(mutex_);
	std::vector<SessionKey> started;
	for (auto &[key, s] : sessions_)
		if (s->started())
			started.push_back(key);
	for (const auto &key : started) // stop_session lets other requests in: look each up again
		if (auto it = sessions_.find(key); it != sessions_.end() && it->second->started())
			stop_session(*it->second, lock);
	// The relays are told that their sessions end (BYE), without the lock.
	std::vector<std::shared_ptr<consumer::RelayLink>> relays;
	for (auto &[key, s] : sessions_)
		if (s->relay_link())
			relays.push_back(s->relay_link());
	lock.unlock();
	for (const auto &relay : relays)
		relay->bye(kRelayStopTimeoutMs);
	lock.lock();
	try {
		journal_.write({});
	} catch (const std::exception &e) {
		log(Level::error, "%s", e.what());
	}
}

} // namespace tracery::daemon
