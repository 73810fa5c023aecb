// Triggers in the daemon (triggers.hpp): add-trigger, list-triggers,
// remove-trigger and watch; the rules sent to programs; their notifications
// taken; the session actions run as commands of the trigger's owner.
#include "daemon/daemon.hpp"

#include "daemon/log.hpp"

#include "control/messages.hpp"
#include "control/trigger_messages.hpp"

#include <stdexcept>

namespace tracery::daemon {

using nlohmann::json;

namespace {

// A TriggerTable refusal, as the command's one line.
template <class Work>
decltype(auto) checked(Work &&work)
{
	try {
		return work();
	} catch (const std::invalid_argument &e) {
		throw CommandError(e.what());
	}
}

// The command an action runs, as its owner would type it.
json action_request(const ActionRun &run)
{
	if (run.type == "start-session")
		return control::encode(control::Start{{run.session}});
	if (run.type == "stop-session")
		return control::encode(control::Stop{{run.session}});
	if (run.type == "rotate-session")
		return control::encode(control::Rotate{run.session, true}); // the action thread waits for no rotation
	return control::encode(control::SnapshotRecord{run.session, std::nullopt, std::nullopt, std::nullopt});
}

} // namespace

void Daemon::start_trigger_actions()
{
	actions_ = std::make_unique<ActionRunner>(
		[this](const ActionRun &run) {
			const json reply = handle_command(action_request(run), {0, run.owner, run.group});
			return control::is<control::ErrorReply>(reply)
		                       ? control::decode<control::ErrorReply>(reply).error
		                       : std::string();
		},
		[this](const ActionRun &run, const std::string &error) {
			Lock lock(mutex_);
			triggers_.action_done(run, error);
		});
}

void Daemon::send_trigger_rules(uid_t owner)
{
	for (auto &[id, app] : apps_)
		if (!app->gone && (owner == 0 || app->cred.uid == owner))
			app->send(control::encode(triggers_.rules_for(app->cred.uid)));
}

void Daemon::run_actions(const std::vector<ActionRun> &runs)
{
	for (const auto &run : runs)
		if (!actions_->post(run))
			triggers_.action_done(run, "too many trigger actions waiting: this one did not run");
}

// A kernel event trigger's instance: tracery-PID-trigger-ID (so that a
// later daemon removes it as stale), its matches fired under the daemon's lock.
void Daemon::watch_kernel_events(Trigger &t)
{
	const control::TriggerCondition &c = t.condition;
	kernel::WatchRule rule{*c.pattern, c.filter.value_or(""), c.captures};
	const uint64_t id = t.id;
	try {
		t.watch = std::make_unique<kernel::EventWatch>(
			kernel::open_tracefs(true).root, "trigger-" + std::to_string(id), std::move(rule),
			[this, id](kernel::WatchMatch m) {
				Lock lock(mutex_);
				run_actions(triggers_.kernel_matched(id, std::move(m)));
			});
	} catch (const std::exception &e) {
		const std::string why = "cannot watch kernel events '" + *c.pattern + "': " + e.what();
		triggers_.remove(t);
		throw CommandError(why);
	}
}

control::AddTriggerReply Daemon::cmd_add_trigger(const control::AddTrigger &req, const control::PeerCred &peer, Lock &)
{
	const bool kernel_rule = req.condition.type == "event-rule-matches" && req.condition.domain == "kernel";
	if (kernel_rule)
		check_kernel_access(peer);
	else if (req.condition.filter && req.condition.pattern)
		check_filter(*req.condition.filter, {*req.condition.pattern}, peer);
	Trigger &t = checked([&]() -> Trigger & { return triggers_.add(peer.uid, peer.gid, req); });
	if (t.in_kernel())
		watch_kernel_events(t);
	log(Level::info, "uid %u added trigger '%s'", peer.uid, t.name.c_str());
	if (t.in_programs())
		send_trigger_rules(t.owner);
	return {t.name};
}

control::ListTriggersReply Daemon::cmd_list_triggers(const control::ListTriggers &, const control::PeerCred &peer,
                                                     Lock &)
{
	return {triggers_.list(peer.uid)};
}

control::RemoveTriggerReply Daemon::cmd_remove_trigger(const control::RemoveTrigger &req, const control::PeerCred &peer,
                                                       Lock &lock)
{
	Trigger &t = checked([&]() -> Trigger & { return triggers_.named(peer.uid, req.name); });
	const bool in_programs = t.in_programs();
	const uid_t owner = t.owner;
	std::unique_ptr<kernel::EventWatch> watch = triggers_.remove(t);
	log(Level::info, "uid %u removed trigger '%s' of uid %u", peer.uid, req.name.c_str(), owner);
	if (in_programs)
		send_trigger_rules(owner);
	if (watch) {
		// Its reader may be waiting for the lock to report a match.
		lock.unlock();
		watch.reset();
		lock.lock();
	}
	return {req.name};
}

void Daemon::stop_kernel_triggers()
{
	std::vector<std::unique_ptr<kernel::EventWatch>> watches;
	{
		Lock lock(mutex_);
		watches = triggers_.take_watches();
	}
	watches.clear();
}

json Daemon::cmd_watch(const json &body, const control::PeerCred &peer, std::vector<base::Fd> *reply_fds)
{
	if (!reply_fds)
		return control::encode(control::ErrorReply{"watch cannot be a trigger's action"});
	Lock lock(mutex_);
	try {
		const control::Watch req = control::decode<control::Watch>(body);
		control::WatchReply reply;
		base::Fd fd = checked([&] { return triggers_.watch(peer.uid, req.triggers, &reply.triggers); });
		reply_fds->push_back(std::move(fd));
		return control::encode(reply);
	} catch (const std::exception &e) {
		return control::encode(control::ErrorReply{e.what()});
	}
}

void Daemon::take_notification(App &app, const control::Notification &n)
{
	Lock lock(mutex_);
	run_actions(triggers_.notified(app.id, app.cred.pid, app.cred.uid, n));
}

} // namespace tracery::daemon
