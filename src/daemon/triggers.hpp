// The daemon's triggers: each belongs to the user who added it (named in a
// space of that user's, as sessions are), outlives the sessions its actions
// name, and is evaluated where its events happen: a user event trigger's rule
// goes to the programs its owner may trace (control::Triggers), which send a
// control::Notification for each event it matches; a kernel event
// trigger's rule goes to a tracefs instance of its own
// (kernel/event_watch.hpp), whose reader thread reports each match
// (kernel_matched()). TriggerTable holds them
// (checked when added), applies each action's rate policy when one fires,
// and sends notifications to the watchers (`tracery watch`): one datagram a
// notification on a SOCK_SEQPACKET pair whose other end the watcher holds,
// never blocking (a full socket costs that notification, counted).
// Guarded by the daemon's lock; the actions that act on sessions run on
// ActionRunner's thread, as commands of the trigger's owner.
#pragma once

#include "base/fd.hpp"
#include "control/trigger_messages.hpp"
#include "kernel/event_watch.hpp"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tracery::daemon {

struct Trigger {
	uint64_t id = 0;
	uid_t owner = 0;
	gid_t group = 0; // the adding peer's, for the actions it runs as its owner
	std::string name;
	control::TriggerCondition condition;
	std::vector<control::TriggerActionStatus> actions;
	uint64_t fired = 0;
	uint64_t dropped = 0;
	// A condition on samples (a channel's buffer usage, a session's consumed
	// size): the id of the session whose last sample met it, 0 if none did.
	// It fires when a sample meets it and the previous one did not (as
	// LTTng's: on crossing the threshold, again once it went back).
	uint64_t held_in = 0;
	// A user event trigger: evaluated in the programs.
	bool in_programs() const;
	// A kernel event trigger: evaluated in its own tracefs instance, once
	// the daemon gave it one (set_watch()).
	bool in_kernel() const;
	std::unique_ptr<kernel::EventWatch> watch;
};

// A channel's buffers as one monitor period found them (channel_monitor.cpp):
// of its streams (a per-CPU buffer of each of its ring buffers), the bytes
// the fullest and the emptiest hold that their consumer has not taken, and
// the size of one.
struct ChannelSample {
	uid_t owner = 0;
	uint64_t session_id = 0;
	std::string session, channel;
	std::string domain = "user";
	uint64_t highest_bytes = 0, lowest_bytes = 0, stream_bytes = 0;
};
// A session's consumers at the same time: the bytes they took from its buffers so far.
struct SessionSample {
	uid_t owner = 0;
	uint64_t session_id = 0;
	std::string session;
	uint64_t consumed_bytes = 0;
};

// An action whose rate policy let it run (not notify: the table sends those).
struct ActionRun {
	uint64_t trigger = 0;
	size_t index = 0; // in the trigger's actions
	std::string type;
	std::string session;
	uid_t owner = 0;
	gid_t group = 0;
};

class TriggerTable {
public:
	static constexpr size_t kMaxPerUser = 256;
	static constexpr size_t kMaxWatchersPerUser = 16;
	static constexpr size_t kMaxCaptures = 16;
	static constexpr size_t kMaxActions = 8;
	// A program's notifications the daemon takes per second (and at once).
	static constexpr double kProgramRate = 1000;
	// The longest string, and array, of a captured value kept.
	static constexpr size_t kMaxCapturedString = 1024, kMaxCapturedArray = 64;

	// Checks the request (every field; one line naming the fault and the fix
	// on std::invalid_argument) and adds the trigger; the filter is the
	// caller's to check against the programs' events.
	Trigger &add(uid_t owner, gid_t group, const control::AddTrigger &req);
	// The trigger `peer` names: its own of that name; for root, failing that,
	// another user's if only one has one of that name. Throws std::invalid_argument.
	Trigger &named(uid_t peer, const std::string &name);
	// Removes it (its watchers keep watching, and get nothing more of it).
	// Returns its kernel instance, if any, for the caller to end without
	// the daemon's lock (its reader may be waiting for it).
	std::unique_ptr<kernel::EventWatch> remove(const Trigger &t);
	// Every kernel instance, taken out (the daemon's end: see remove()).
	std::vector<std::unique_ptr<kernel::EventWatch>> take_watches();
	// The peer's triggers (root: every user's).
	std::vector<control::TriggerStatus> list(uid_t peer) const;
	Trigger *find(uint64_t id);

	// The rules a program of this user evaluates: the user event triggers of
	// its user and of root.
	control::Triggers rules_for(uid_t program_uid) const;
	// Whether a change to t's rules concerns a program of this user.
	static bool concerns(const Trigger &t, uid_t program_uid) { return t.owner == 0 || t.owner == program_uid; }

	// A program's notification, as it came: taken if its trigger is a user
	// event trigger this program's user may see and the event matches its
	// pattern, within the program's rate; the trigger fires (fire()). Returns
	// the actions to run.
	std::vector<ActionRun> notified(uint64_t app, pid_t pid, uid_t uid, const control::Notification &n);
	// A kernel event trigger's match (or drops alone, without an event), as
	// its instance's reader reported it: the trigger fires. Returns the
	// actions to run (none if the trigger is gone).
	std::vector<ActionRun> kernel_matched(uint64_t trigger, kernel::WatchMatch m);
	// A monitor's samples: the triggers on them (of the session's owner, on
	// that session and channel) fire on crossing. Return the actions to run.
	std::vector<ActionRun> channel_sampled(const ChannelSample &sample);
	std::vector<ActionRun> session_sampled(const SessionSample &sample);
	// A program is gone: its rate is forgotten.
	void forget_program(uint64_t app) { rates_.erase(app); }
	// The trigger fired: each action's request counted and its rate policy
	// applied; notify sends `fired` to the watchers. Returns the other actions to run.
	std::vector<ActionRun> fire(Trigger &t, control::TriggerFired fired);
	// What running an action came to ("" when it succeeded).
	void action_done(const ActionRun &run, const std::string &error);

	// A watcher of `peer`'s triggers named (all of them when none, those
	// added later too): returns the watcher's end of the pair, and in
	// *watched the names. Throws std::invalid_argument for a name it does
	// not have, or over kMaxWatchersPerUser.
	base::Fd watch(uid_t peer, const std::vector<std::string> &names, std::vector<std::string> *watched);

private:
	struct Watcher {
		uid_t uid = 0;
		base::Fd sock; // the daemon's end
		std::set<std::string> names;
	};
	struct Rate {
		double tokens = kProgramRate;
		std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
	};
	void deliver(Trigger &t, const control::TriggerFired &fired);
	// A sample of session `session_id` that meets t's condition (`met`) or
	// not: fires t with `captures` when it meets it and the previous did not.
	std::vector<ActionRun> sampled(Trigger &t, uint64_t session_id, bool met,
	                               std::map<std::string, nlohmann::json> captures);
	// Drops watchers whose other end is closed.
	void sweep_watchers();

	uint64_t next_id_ = 1;
	std::map<std::pair<uid_t, std::string>, Trigger> triggers_;
	std::vector<Watcher> watchers_;
	std::map<uint64_t, Rate> rates_; // by program
};

// Runs the session actions of triggers on a thread of its own, in order,
// each as a command of the trigger's owner (`command`: the daemon's
// handle_command); at most kMaxQueued wait, more are failed at once.
class ActionRunner {
public:
	using Command = std::function<std::string(const ActionRun &)>; // "" or the error
	using Done = std::function<void(const ActionRun &, const std::string &)>;
	static constexpr size_t kMaxQueued = 256;
	ActionRunner(Command command, Done done);
	~ActionRunner();
	ActionRunner(const ActionRunner &) = delete;
	ActionRunner &operator=(const ActionRunner &) = delete;
	// False when the queue is full (the action did not run).
	bool post(ActionRun run);
	// Waits for the action under way, if any, and ends the thread.
	void stop();

private:
	void run();
	Command command_;
	Done done_;
	std::mutex mutex_;
	std::condition_variable cv_;
	std::deque<ActionRun> queue_;
	bool stopping_ = false;
	std::thread thread_;
};

} // namespace tracery::daemon
