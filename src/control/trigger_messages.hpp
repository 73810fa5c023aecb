// control/trigger_messages.hpp — the messages of triggers and notifications,
// each a struct whose fields are named once (encoded and strictly decoded by
// codec.hpp, as those of messages.hpp; compiled in trigger_codecs.cpp).
//
// The tracery command's requests: add-trigger, list-triggers,
// remove-trigger, and watch, whose reply comes with one descriptor: the
// daemon's end of a SOCK_SEQPACKET pair, on which each notification of the
// watched triggers arrives as one datagram, a TriggerFired body.
//
// Between the daemon and a traced program:
//   daemon -> program  Triggers (the rules the program evaluates, all of them
//                      each time: sent before Ready and whenever they change)
//   program -> daemon  Notification (an event a trigger's rule matched)
// A daemon or program that does not know these types ignores them (the
// compatibility rule of wire.hpp: new messages keep the protocol's version).
#pragma once

#include "control/codec.hpp"

#include "event/json.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace tracery::control {

namespace cmd {
inline constexpr char kAddTrigger[] = "add-trigger";
inline constexpr char kListTriggers[] = "list-triggers";
inline constexpr char kRemoveTrigger[] = "remove-trigger";
inline constexpr char kWatch[] = "watch";
} // namespace cmd

namespace msg {
inline constexpr char kTriggers[] = "triggers";
inline constexpr char kNotification[] = "notification";
inline constexpr char kTriggerFired[] = "trigger_fired";
} // namespace msg

// What makes a trigger fire.
//   event-rule-matches        an event of `domain` (user, kernel) whose name matches
//                             `pattern` and that `filter` accepts; `captures` are its
//                             payload fields sent with the notification
//   channel-buffer-usage-ge   a channel of `session` (`channel`; `domain`) fills its
//   channel-buffer-usage-le   buffers to at least (at most) `threshold_percent` or
//                             `threshold_bytes`, sampled every monitor period
//   session-consumed-size-ge  `session` wrote at least `threshold_bytes`
struct TriggerCondition {
	std::string type;
	std::string domain; // user or kernel
	std::optional<std::string> pattern;
	std::optional<std::string> filter;
	std::vector<std::string> captures;
	std::optional<std::string> session, channel;
	std::optional<uint64_t> threshold_bytes;
	std::optional<uint32_t> threshold_percent;
	static constexpr auto kFields = std::tuple{
		field("type", &TriggerCondition::type),
		field("domain", &TriggerCondition::domain),
		optional_field("pattern", &TriggerCondition::pattern),
		optional_field("filter", &TriggerCondition::filter),
		field("captures", &TriggerCondition::captures),
		optional_field("session", &TriggerCondition::session),
		optional_field("channel", &TriggerCondition::channel),
		optional_field("threshold_bytes", &TriggerCondition::threshold_bytes),
		optional_field("threshold_percent", &TriggerCondition::threshold_percent),
	};
	bool operator==(const TriggerCondition &) const = default;
};

// What a trigger does when it fires, as lttng's actions: notify,
// start-session, stop-session, snapshot-session, rotate-session (the last
// four name a session of the trigger's owner). Rate policy: `every` N-th
// request (`policy` "every"), or only the N-th ("once-after").
struct TriggerAction {
	std::string type;
	std::optional<std::string> session;
	std::string policy = "every";
	uint64_t count = 1;
	static constexpr auto kFields = std::tuple{
		field("type", &TriggerAction::type),
		optional_field("session", &TriggerAction::session),
		field("policy", &TriggerAction::policy),
		field("count", &TriggerAction::count),
	};
	bool operator==(const TriggerAction &) const = default;
};

struct AddTriggerReply {
	static constexpr Tag tag = reply_to(cmd::kAddTrigger);
	std::string name;
	static constexpr auto kFields = std::tuple{field("name", &AddTriggerReply::name)};
	bool operator==(const AddTriggerReply &) const = default;
};
struct AddTrigger {
	static constexpr Tag tag = command(cmd::kAddTrigger);
	using Reply = AddTriggerReply;
	std::optional<std::string> name; // missing: the daemon names it
	TriggerCondition condition;
	std::vector<TriggerAction> actions;
	static constexpr auto kFields =
		std::tuple{optional_field("name", &AddTrigger::name), field("condition", &AddTrigger::condition),
	                   field("actions", &AddTrigger::actions)};
	bool operator==(const AddTrigger &) const = default;
};

// An action's counts: requests (the trigger fired), executed (the rate
// policy let it run), failed (it ran and failed; `error` the last reason).
struct TriggerActionStatus {
	TriggerAction action;
	uint64_t requests = 0, executed = 0, failed = 0;
	std::string error;
	static constexpr auto kFields = std::tuple{
		field("action", &TriggerActionStatus::action),     field("requests", &TriggerActionStatus::requests),
		field("executed", &TriggerActionStatus::executed), field("failed", &TriggerActionStatus::failed),
		field("error", &TriggerActionStatus::error),
	};
	bool operator==(const TriggerActionStatus &) const = default;
};
struct TriggerStatus {
	std::string name;
	uint32_t owner = 0;
	TriggerCondition condition;
	std::vector<TriggerActionStatus> actions;
	uint64_t fired = 0;
	// Notifications lost: dropped by programs (their rate limit, a full
	// queue), by the daemon (a program over its rate), or not taken by a watcher.
	uint64_t dropped = 0;
	static constexpr auto kFields = std::tuple{
		field("name", &TriggerStatus::name),           field("owner", &TriggerStatus::owner),
		field("condition", &TriggerStatus::condition), field("actions", &TriggerStatus::actions),
		field("fired", &TriggerStatus::fired),         field("dropped", &TriggerStatus::dropped),
	};
	bool operator==(const TriggerStatus &) const = default;
};
struct ListTriggersReply {
	static constexpr Tag tag = reply_to(cmd::kListTriggers);
	std::vector<TriggerStatus> triggers;
	static constexpr auto kFields = std::tuple{field("triggers", &ListTriggersReply::triggers)};
	bool operator==(const ListTriggersReply &) const = default;
};
struct ListTriggers {
	static constexpr Tag tag = command(cmd::kListTriggers);
	using Reply = ListTriggersReply;
	static constexpr auto kFields = std::tuple{};
	bool operator==(const ListTriggers &) const = default;
};

struct RemoveTriggerReply {
	static constexpr Tag tag = reply_to(cmd::kRemoveTrigger);
	std::string name;
	static constexpr auto kFields = std::tuple{field("name", &RemoveTriggerReply::name)};
	bool operator==(const RemoveTriggerReply &) const = default;
};
struct RemoveTrigger {
	static constexpr Tag tag = command(cmd::kRemoveTrigger);
	using Reply = RemoveTriggerReply;
	std::string name;
	static constexpr auto kFields = std::tuple{field("name", &RemoveTrigger::name)};
	bool operator==(const RemoveTrigger &) const = default;
};

// watch: the reply carries the descriptor the notifications come on.
struct WatchReply {
	static constexpr Tag tag = reply_to(cmd::kWatch);
	std::vector<std::string> triggers; // watched now (empty: every trigger, those added later too)
	static constexpr auto kFields = std::tuple{field("triggers", &WatchReply::triggers)};
	bool operator==(const WatchReply &) const = default;
};
struct Watch {
	static constexpr Tag tag = command(cmd::kWatch);
	using Reply = WatchReply;
	std::vector<std::string> triggers; // names; empty: all the peer's
	static constexpr auto kFields = std::tuple{field("triggers", &Watch::triggers)};
	bool operator==(const Watch &) const = default;
};

// A trigger's rule as a program evaluates it.
struct ProgramTrigger {
	uint64_t id = 0; // the daemon's, named in Notification
	std::string pattern;
	std::optional<std::string> filter; // the expression, compiled by the program for each event
	std::vector<std::string> captures;
	static constexpr auto kFields = std::tuple{
		field("id", &ProgramTrigger::id), field("pattern", &ProgramTrigger::pattern),
		optional_field("filter", &ProgramTrigger::filter), field("captures", &ProgramTrigger::captures)};
	bool operator==(const ProgramTrigger &) const = default;
};
struct Triggers {
	static constexpr Tag tag = program_message(msg::kTriggers);
	std::vector<ProgramTrigger> triggers;
	static constexpr auto kFields = std::tuple{field("triggers", &Triggers::triggers)};
	bool operator==(const Triggers &) const = default;
};

// An event matched a trigger's rule in a program. Captures: field name ->
// value (a number, a string, an array of numbers; null: unavailable).
struct Notification {
	static constexpr Tag tag = program_message(msg::kNotification);
	uint64_t trigger = 0;
	uint64_t time_ns = 0; // CLOCK_REALTIME
	std::string event;    // provider:name; "": only `dropped` to tell
	std::map<std::string, nlohmann::json> captures;
	uint64_t dropped = 0; // this trigger's notifications the program dropped since the last one sent
	static constexpr auto kFields = std::tuple{
		field("trigger", &Notification::trigger), field("time_ns", &Notification::time_ns),
		field("event", &Notification::event),     field("captures", &Notification::captures),
		field("dropped", &Notification::dropped),
	};
	bool operator==(const Notification &) const = default;
};

// A notification as a watcher gets it (one datagram each), and as
// `tracery watch` prints it.
struct TriggerFired {
	static constexpr Tag tag = program_message(msg::kTriggerFired);
	std::string trigger;
	uint64_t time_ns = 0;
	std::string event; // the event that matched; "" for the other conditions
	int32_t pid = 0;   // the program it happened in (a kernel event: its thread; 0: the daemon's sampling)
	std::map<std::string, nlohmann::json> captures;
	// Notifications of this trigger lost so far (by its programs, by the
	// daemon, on a watcher's full socket): TriggerStatus::dropped.
	uint64_t dropped = 0;
	static constexpr auto kFields = std::tuple{
		field("trigger", &TriggerFired::trigger),   field("time_ns", &TriggerFired::time_ns),
		field("event", &TriggerFired::event),       field("pid", &TriggerFired::pid),
		field("captures", &TriggerFired::captures), field("dropped", &TriggerFired::dropped),
	};
	bool operator==(const TriggerFired &) const = default;
};

using TriggerMessages = std::tuple<AddTrigger, AddTriggerReply, ListTriggers, ListTriggersReply, RemoveTrigger,
                                   RemoveTriggerReply, Watch, WatchReply, Triggers, Notification, TriggerFired>;

} // namespace tracery::control
