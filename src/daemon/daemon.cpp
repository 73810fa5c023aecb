// The core of traceryd: its state, the commands' dispatch and the sessions
// they name, and the conversation with programs (registration, requests and
// their acknowledgements, stopping a session's programs, their end). See
// daemon.hpp; the commands themselves are in *_commands.cpp.
#include "daemon/daemon.hpp"

#include "base/fs_creds.hpp"
#include "control/messages.hpp"
#include "daemon/log.hpp"
#include "daemon/session_status.hpp"

#include "event/schema.hpp"

#include <grp.h>
#include <pwd.h>

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

bool Daemon::traces(const TraceSession &s, const App &app) const
{
	return (s.owner() == 0 || s.owner() == app.cred.uid) && s.user_tracking().includes(app.ids);
}

namespace {

// A handler of two requests (enable and disable, track and untrack), told
// by `flag` which one it has: handler(request, flag, peer, lock).
template <class Handler>
auto with_flag(Handler handler, bool flag)
{
	return [handler, flag](auto &daemon, const auto &request, const auto &peer, auto &lock) {
		return (daemon.*handler)(request, flag, peer, lock);
	};
}

} // namespace

template <class Request, class Handler>
std::pair<std::string, Daemon::Command> Daemon::command(Handler handler)
{
	return {Request::tag.name,
	        [handler](Daemon &d, const json &body, const control::PeerCred &peer, Lock &lock) -> json {
			return control::encode(typename Request::Reply{
				std::invoke(handler, d, control::decode<Request>(body), peer, lock)});
		}};
}

json Daemon::handle_command(const json &req, const control::PeerCred &peer, std::vector<base::Fd> *reply_fds)
{
	static const std::map<std::string, Command> commands = {
		command<control::Create>(&Daemon::cmd_create),
		command<control::Destroy>(&Daemon::cmd_destroy),
		command<control::EnableChannel>(&Daemon::cmd_enable_channel),
		command<control::EnableEvent>(with_flag(&Daemon::cmd_event_rules, false)),
		command<control::DisableEvent>(with_flag(&Daemon::cmd_event_rules, true)),
		command<control::AddContext>(&Daemon::cmd_add_context),
		command<control::Start>(&Daemon::cmd_start),
		command<control::Stop>(&Daemon::cmd_stop),
		command<control::Status>(&Daemon::cmd_status),
		command<control::List>(&Daemon::cmd_list),
		command<control::ListEvents>(&Daemon::cmd_list_events),
		command<control::SnapshotRecord>(&Daemon::cmd_snapshot),
		command<control::KernelEnableEvent>(with_flag(&Daemon::cmd_kernel_event, false)),
		command<control::KernelDisableEvent>(with_flag(&Daemon::cmd_kernel_event, true)),
		command<control::KernelEnableChannel>(&Daemon::cmd_kernel_channel),
		command<control::KernelTrack>(with_flag(&Daemon::cmd_kernel_track, false)),
		command<control::KernelUntrack>(with_flag(&Daemon::cmd_kernel_track, true)),
		command<control::KernelList>(&Daemon::cmd_kernel_list),
		command<control::Track>(with_flag(&Daemon::cmd_track, false)),
		command<control::Untrack>(with_flag(&Daemon::cmd_track, true)),
		command<control::KernelAddContext>(&Daemon::cmd_kernel_context),
		command<control::AddTrigger>(&Daemon::cmd_add_trigger),
		command<control::ListTriggers>(&Daemon::cmd_list_triggers),
		command<control::RemoveTrigger>(&Daemon::cmd_remove_trigger),
		command<control::Rotate>(&Daemon::cmd_rotate),
		command<control::EnableRotation>(&Daemon::cmd_enable_rotation),
		command<control::DisableRotation>(&Daemon::cmd_disable_rotation),
		command<control::Clear>(&Daemon::cmd_clear),
		command<control::Save>(&Daemon::cmd_save),
		command<control::Load>(&Daemon::cmd_load),
		command<control::SnapshotAddOutput>(&Daemon::cmd_snapshot_add_output),
		command<control::SnapshotDelOutput>(&Daemon::cmd_snapshot_del_output),
		command<control::SnapshotListOutput>(&Daemon::cmd_snapshot_list_output),
		command<control::DisableChannel>(&Daemon::cmd_disable_channel),
	};
	const std::string cmd = control::command_of(req);
	if (cmd == control::cmd::kWatch)
		return cmd_watch(req, peer, reply_fds);
	auto it = commands.find(cmd);
	if (it == commands.end())
		return control::encode(control::ErrorReply{"unknown request '" + cmd +
		                                           "': tracery and traceryd are from different releases"});
	Lock lock(mutex_);
	try {
		return it->second(*this, req, peer, lock);
	} catch (const std::exception &e) {
		return control::encode(control::ErrorReply{e.what()});
	}
}

TraceSession &Daemon::session_for(const std::string &name, const control::PeerCred &peer)
{
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

std::vector<control::ChannelRules> Daemon::session_ids(TraceSession &s, App &app)
{
	std::vector<control::ChannelRules> chans;
	for (const auto &ch : s.channels()) {
		control::ChannelRules c;
		c.index = ch->index();
		if (!ch->disabled()) { // disable-channel: no event of it has an id in the program
			c.ids = s.ids_for(*ch, app.events);
			c.filters = s.filters_for(*ch, app.events);
		}
		chans.push_back(std::move(c));
	}
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
	control::StartSession start;
	start.name = s.name();
	start.channels = session_ids(s, app);
	std::vector<int> fds;
	for (const auto &ch : s.channels()) {
		control::ChannelRules &c = start.channels[ch->index()];
		Buffer *b = buffers[ch->index()];
		if (!b) {
			c.buffer = false; // this channel does not trace the program
			continue;
		}
		const event::ContextOptions &ctx = ch->spec().context;
		c.context = control::ContextFlags{ctx.vpid, ctx.vtid, ctx.procname, {}};
		for (size_t i = 0; i < event::kUserContexts.size(); ++i)
			if (ctx.more >> i & 1)
				c.context->more.emplace_back(event::kUserContexts[i].name);
		c.clock = clock::tick_unit_name(s.tick_unit());
		if (ch->spec().blocking_timeout_us != 0)
			c.blocking_timeout_us = ch->spec().blocking_timeout_us;
		fds.push_back(b->ring->fd());
	}
	const uint64_t seq = request(app, s, std::move(start), fds);
	if (seq)
		members_[s.id()].insert(app.id);
	return seq;
}

template <class Message>
uint64_t Daemon::request(App &app, const TraceSession &s, Message msg, std::span<const int> fds)
{
	const uint64_t seq = next_seq_++;
	msg.session = s.id();
	msg.seq = seq;
	if (!app.send(control::encode(msg), fds))
		return 0;
	app.awaiting[seq] = s.id();
	return seq;
}

void Daemon::take_ack(App &app, const control::Ack &ack)
{
	const uint64_t seq = ack.seq;
	const auto it = app.awaiting.find(seq);
	if (it == app.awaiting.end())
		return; // not a request of ours, or acknowledged before
	const uint64_t session = it->second;
	app.awaiting.erase(it);
	if (ack.tracing)
		app.tracing.insert(session);
	if (ack.refused.empty())
		return;
	// A filter is refused once per event: no more entries than the program
	// has events, and each reason cut to a line.
	constexpr size_t kMaxReason = 512;
	std::vector<control::FilterRefusal> kept;
	for (const auto &r : ack.refused) {
		if (kept.size() >= app.events.size())
			break;
		std::string event = r.event, reason = r.reason;
		if (event.size() > kMaxReason)
			event.resize(kMaxReason);
		if (reason.size() > kMaxReason)
			reason.resize(kMaxReason);
		log(Level::warn, "program %d refused the filter of %s: %s", app.cred.pid, event.c_str(),
		    reason.c_str());
		kept.push_back({std::move(event), std::move(reason)});
	}
	app.refused[seq] = std::move(kept);
	if (app.refused.size() > 64) // nobody waits for the oldest any more
		app.refused.erase(app.refused.begin());
}

std::vector<int32_t> Daemon::wait_acks(const std::vector<std::pair<uint64_t, uint64_t>> &pending, Lock &lock)
{
	auto late = [&] {
		std::vector<int32_t> pids;
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

std::vector<control::ProgramRefusal> Daemon::refusals(const std::vector<std::pair<uint64_t, uint64_t>> &pending)
{
	std::vector<control::ProgramRefusal> out;
	for (auto [id, seq] : pending) {
		auto it = apps_.find(id);
		if (it == apps_.end())
			continue;
		auto r = it->second->refused.find(seq);
		if (r == it->second->refused.end())
			continue;
		for (const auto &one : r->second)
			out.push_back({it->second->cred.pid, one.event, one.reason});
		it->second->refused.erase(r);
	}
	return out;
}

std::vector<control::ProgramRefusal> Daemon::update_members(TraceSession &s, Lock &lock)
{
	std::vector<std::pair<uint64_t, uint64_t>> pending;
	for (uint64_t id : members_[s.id()]) {
		auto it = apps_.find(id);
		if (it == apps_.end() || it->second->gone)
			continue;
		control::Update update;
		update.channels = session_ids(s, *it->second);
		if (const uint64_t seq = request(*it->second, s, std::move(update)))
			pending.emplace_back(id, seq);
	}
	s.begin_busy();
	wait_acks(pending, lock);
	s.end_busy();
	return refusals(pending);
}

void Daemon::retrack_members(TraceSession &s, Lock &lock)
{
	std::set<uint64_t> &members = members_[s.id()];
	std::vector<std::pair<uint64_t, uint64_t>> pending;
	std::vector<Refusal> refused;
	for (auto &[id, app] : apps_) {
		const bool member = members.count(id) != 0;
		if (app->gone || traces(s, *app) == member)
			continue;
		uint64_t seq = 0;
		if (member) {
			members.erase(id);
			app->tracing.erase(s.id());
			seq = request(*app, s, control::StopSession{});
		} else {
			seq = join(s, *app, buffers_for(s, *app, &refused));
		}
		if (seq)
			pending.emplace_back(id, seq);
	}
	note(s, refused);
	s.begin_busy();
	const std::vector<int32_t> late = wait_acks(pending, lock);
	s.end_busy();
	if (!late.empty())
		log(Level::warn, "session %s: %zu programs did not apply its new tracking within %d ms",
		    s.name().c_str(), late.size(), options_.quiesce_timeout_ms);
}

void Daemon::app_registered(const std::shared_ptr<App> &app, const json &body)
{
	const control::Hello hello = control::decode<control::Hello>(body);
	app->registered_ids(hello); // reads /proc: before the lock
	Lock lock(mutex_);
	app->procname = hello.procname;
	add_events(*app, hello.events);
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
	if (control::Triggers rules = triggers_.rules_for(app->cred.uid); !rules.triggers.empty())
		app->send(control::encode(rules));
	app->send(control::encode(control::Ready{}));
}

void Daemon::add_events(App &app, const std::vector<json> &schemas)
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
	const std::string type = control::type_of(msg.body);
	if (type == control::msg::kAck) {
		const control::Ack ack = control::decode<control::Ack>(msg.body);
		Lock lock(mutex_);
		take_ack(app, ack);
		acks_.notify_all();
	} else if (type == control::msg::kNewEvents) {
		const control::NewEvents events = control::decode<control::NewEvents>(msg.body);
		Lock lock(mutex_);
		add_events(app, events.events);
		control::Ids ids;
		ids.req = events.req;
		for (auto &[name, s] : sessions_)
			if (s->started() && members_[s->id()].count(app.id))
				ids.sessions.push_back({s->id(), session_ids(*s, app)});
		app.send(control::encode(ids));
	} else if (type == control::msg::kNotification) {
		take_notification(app, control::decode<control::Notification>(msg.body));
	} else {
		Lock lock(mutex_);
		if (app.told_unknown_type) // once: a program may send many
			return;
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
	triggers_.forget_program(app.id);
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
	start_trigger_actions();
	rotator_ = std::thread([this] { rotator(); });
	monitor_ = std::thread([this] { monitor(); });
}

Daemon::~Daemon()
{
	actions_->stop();
	stop_kernel_triggers();
	{
		Lock lock(mutex_);
		closing_ = true;
	}
	retired_.notify_one();
	rotate_wake_.notify_one();
	monitor_wake_.notify_one();
	rotator_.join();
	monitor_.join();
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

std::vector<control::LostCount> Daemon::lost_report(const TraceSession &s) const
{
	std::vector<control::LostCount> lost;
	for (const auto &ch : s.channels())
		lost.push_back({ch->spec().name, ch->lost(), ch->write_loss()});
	const kernel::KernelSession *k = s.kernel_session();
	if (k && !s.snapshot()) // a snapshot session's kernel losses are in each snapshot's trace
		lost.push_back({s.kernel_spec().channel_name() + " (kernel)", k->counts().discarded,
		                write_loss_of(k->write_losses())});
	return lost;
}

control::StopReply Daemon::stop_session(TraceSession &s, Lock &lock)
{
	wait_kernel_move(s, lock);
	s.mark_stopping();
	std::vector<std::pair<uint64_t, uint64_t>> pending;
	for (uint64_t id : members_[s.id()]) {
		auto it = apps_.find(id);
		if (it == apps_.end())
			continue;
		it->second->tracing.erase(s.id());
		if (const uint64_t seq = request(*it->second, s, control::StopSession{}))
			pending.emplace_back(id, seq);
	}
	std::vector<int32_t> late = wait_acks(pending, lock);
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
	control::StopReply reply;
	reply.session = s.name();
	reply.lost = lost_report(s);
	reply.not_detached = std::move(late);
	for (const auto &ch : s.channels())
		for (auto q : ch->quarantined()) {
			q.channel = ch->spec().name;
			reply.quarantined.push_back(std::move(q));
		}
	if (!kernel_error.empty())
		reply.kernel_error = kernel_error;
	if (s.relay_link()) {
		reply.relay = relay_status(s);
		if (!relay_error.empty())
			reply.relay_error = relay_error;
	}
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
	actions_->stop(); // no trigger starts a session from now on
	stop_kernel_triggers();
	Lock lock(mutex_);
	// No rotation begins from now on; those under way end first.
	rotations_over_ = true;
	to_rotate_.clear();
	std::vector<SessionKey> keys;
	for (auto &[key, s] : sessions_)
		keys.push_back(key);
	for (const auto &key : keys)
		wait_rotation(key, lock);
	for (const auto &key : keys) // stop_session lets other requests in: look each up again
		if (auto it = sessions_.find(key); it != sessions_.end() && it->second->started())
			stop_session(*it->second, lock);
	// Sessions that rotated: their last chunk archived, as destroy does.
	for (auto &[key, s] : sessions_)
		if (s->chunks().moved()) {
			s->destroy_kernel(); // its streams closed first
			archive_last_chunk(*s);
		}
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
