// The daemon's triggers: see triggers.hpp.
#include "daemon/triggers.hpp"

#include "daemon/log.hpp"

#include "control/codec.hpp"
#include "event/event_pattern.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <stdexcept>

namespace tracery::daemon {

using nlohmann::json;

namespace {

constexpr char kEventRuleMatches[] = "event-rule-matches";
constexpr char kBufferUsageGe[] = "channel-buffer-usage-ge";
constexpr char kBufferUsageLe[] = "channel-buffer-usage-le";
constexpr char kConsumedSizeGe[] = "session-consumed-size-ge";
constexpr char kNotify[] = "notify";

[[noreturn]] void refuse(const std::string &why) { throw std::invalid_argument(why); }

bool is_identifier(const std::string &s)
{
	if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0])))
		return false;
	return std::all_of(s.begin(), s.end(),
	                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void check_name(const std::string &name, const char *what)
{
	if (name.empty() || name.size() > 128 || !std::all_of(name.begin(), name.end(), [](char c) {
		    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
	    }))
		refuse(std::string("bad ") + what + " '" + name + "': give 1 to 128 letters, digits, '_', '-' or '.'");
}

void check_pattern(const std::string &pattern)
{
	if (pattern.empty() || pattern.size() > 256 ||
	    !std::all_of(pattern.begin(), pattern.end(), [](char c) { return c > ' ' && c < 127 && c != ','; }))
		refuse("bad event name pattern '" + pattern +
		       "': give one PROVIDER:NAME of at most 256 characters, '*' wildcards allowed, no spaces or commas");
}

// channel-buffer-usage-ge/le and session-consumed-size-ge: a session (and
// a channel) of the trigger's owner, and one threshold.
void check_sample_condition(const control::TriggerCondition &c)
{
	const bool channel = c.type != kConsumedSizeGe;
	if (c.pattern || c.filter || !c.captures.empty())
		refuse("a " + c.type + " condition takes no event name, filter or capture");
	if (!c.session)
		refuse("the " + c.type + " condition needs the session: --session=NAME");
	check_name(*c.session, "session name");
	if (!channel) {
		if (c.channel || c.threshold_percent)
			refuse("a session-consumed-size-ge condition takes no channel or ratio: give --threshold-size");
		if (!c.threshold_bytes)
			refuse("the session-consumed-size-ge condition needs --threshold-size=SIZE");
		return;
	}
	if (!c.channel)
		refuse("the " + c.type + " condition needs the channel: --channel=NAME");
	check_name(*c.channel, "channel name");
	if (c.domain != "user" && c.domain != "kernel")
		refuse("unknown domain '" + c.domain + "': give --domain=user or --domain=kernel");
	if (c.threshold_bytes.has_value() == c.threshold_percent.has_value())
		refuse("the " + c.type +
		       " condition needs one threshold: --threshold-ratio=R or --threshold-size=SIZE");
	if (c.threshold_percent && *c.threshold_percent > 100)
		refuse("a buffer usage ratio is at most 1 (100 %)");
}

void check_condition(const control::TriggerCondition &c)
{
	if (c.type == kBufferUsageGe || c.type == kBufferUsageLe || c.type == kConsumedSizeGe)
		return check_sample_condition(c);
	if (c.type != kEventRuleMatches)
		refuse("unknown condition '" + c.type + "': give event-rule-matches, " + kBufferUsageGe + ", " +
		       kBufferUsageLe + " or " + kConsumedSizeGe);
	if (c.domain != "user" && c.domain != "kernel")
		refuse("unknown event rule type '" + c.domain + "': give --type=user or --type=kernel");
	if (!c.pattern)
		refuse("the event rule names no event: give --name=PROVIDER:NAME");
	check_pattern(*c.pattern);
	if (c.session || c.channel || c.threshold_bytes || c.threshold_percent)
		refuse("an event-rule-matches condition takes no session, channel or threshold");
	if (c.filter && (c.filter->empty() || c.filter->size() > 65536))
		refuse("the filter must be 1 to 65536 bytes");
	if (c.captures.size() > TriggerTable::kMaxCaptures)
		refuse("at most " + std::to_string(TriggerTable::kMaxCaptures) + " --capture per trigger");
	std::set<std::string> seen;
	for (const auto &f : c.captures) {
		if (!is_identifier(f))
			refuse("cannot capture '" + f + "': give the name of a payload field of the event");
		if (!seen.insert(f).second)
			refuse("field '" + f + "' is captured twice");
	}
}

void check_action(const control::TriggerAction &a)
{
	static const std::set<std::string> session_actions = {"start-session", "stop-session", "snapshot-session",
	                                                      "rotate-session"};
	if (a.type == kNotify) {
		if (a.session)
			refuse("the notify action takes no session");
	} else if (session_actions.count(a.type)) {
		if (!a.session)
			refuse("the " + a.type + " action needs the session's name: --action=" + a.type + " SESSION");
		check_name(*a.session, "session name");
	} else {
		refuse("unknown action '" + a.type +
		       "': give notify, start-session, stop-session, snapshot-session or rotate-session");
	}
	if (a.policy != "every" && a.policy != "once-after")
		refuse("unknown rate policy '" + a.policy + "': give every:N or once-after:N");
	if (a.count == 0)
		refuse("a rate policy's count must be at least 1");
}

// The rate policy of lttng's actions: every COUNT-th request, or the COUNT-th only.
bool policy_runs(const control::TriggerAction &a, uint64_t requests)
{
	return a.policy == "every" ? requests % a.count == 0 : requests == a.count;
}

// A captured value as the program sent it, kept if it is one a capture can
// be (a number, a bounded string, a bounded array of numbers), else null.
json sane_capture(const json &v)
{
	if (v.is_number() || v.is_boolean())
		return v;
	if (v.is_string() && v.get_ref<const std::string &>().size() <= TriggerTable::kMaxCapturedString)
		return v;
	if (v.is_array() && v.size() <= TriggerTable::kMaxCapturedArray &&
	    std::all_of(v.begin(), v.end(), [](const json &e) { return e.is_number(); }))
		return v;
	return nullptr;
}

} // namespace

bool Trigger::in_programs() const { return condition.type == kEventRuleMatches && condition.domain == "user"; }

bool Trigger::in_kernel() const { return condition.type == kEventRuleMatches && condition.domain == "kernel"; }

Trigger &TriggerTable::add(uid_t owner, gid_t group, const control::AddTrigger &req)
{
	check_condition(req.condition);
	if (req.actions.empty())
		refuse("a trigger needs at least one --action");
	if (req.actions.size() > kMaxActions)
		refuse("at most " + std::to_string(kMaxActions) + " actions per trigger");
	for (const auto &a : req.actions)
		check_action(a);
	size_t mine = 0;
	for (const auto &[key, t] : triggers_)
		mine += key.first == owner;
	if (mine >= kMaxPerUser)
		refuse("you have " + std::to_string(mine) + " triggers, the most a user may have: remove some first");
	std::string name;
	if (req.name) {
		name = *req.name;
		check_name(name, "trigger name");
		if (triggers_.count({owner, name}))
			refuse("you already have a trigger named '" + name +
			       "': remove it first or give another --name");
	} else {
		for (uint64_t n = 0; name.empty() || triggers_.count({owner, name}); n++)
			name = "trigger" + std::to_string(n);
	}
	Trigger t;
	t.id = next_id_++;
	t.owner = owner;
	t.group = group;
	t.name = name;
	t.condition = req.condition;
	for (const auto &a : req.actions)
		t.actions.push_back({a, 0, 0, 0, ""});
	return triggers_.emplace(std::pair{owner, name}, std::move(t)).first->second;
}

Trigger &TriggerTable::named(uid_t peer, const std::string &name)
{
	if (auto it = triggers_.find({peer, name}); it != triggers_.end())
		return it->second;
	if (peer == 0) {
		Trigger *found = nullptr;
		std::string owners;
		for (auto &[key, t] : triggers_) {
			if (key.second != name)
				continue;
			owners += (found ? ", " : "") + std::to_string(key.first);
			if (found)
				refuse("users " + owners + " each have a trigger named '" + name +
				       "' and root has none: run the command as its owner");
			found = &t;
		}
		if (found)
			return *found;
	}
	refuse("no trigger named '" + name + "': see `tracery list-triggers`");
}

std::unique_ptr<kernel::EventWatch> TriggerTable::remove(const Trigger &t)
{
	auto it = triggers_.find({t.owner, t.name});
	if (it == triggers_.end())
		return nullptr;
	std::unique_ptr<kernel::EventWatch> watch = std::move(it->second.watch);
	triggers_.erase(it);
	return watch;
}

std::vector<std::unique_ptr<kernel::EventWatch>> TriggerTable::take_watches()
{
	std::vector<std::unique_ptr<kernel::EventWatch>> out;
	for (auto &[key, t] : triggers_)
		if (t.watch)
			out.push_back(std::move(t.watch));
	return out;
}

std::vector<control::TriggerStatus> TriggerTable::list(uid_t peer) const
{
	std::vector<control::TriggerStatus> out;
	for (const auto &[key, t] : triggers_)
		if (peer == 0 || key.first == peer)
			out.push_back({t.name, t.owner, t.condition, t.actions, t.fired, t.dropped});
	return out;
}

Trigger *TriggerTable::find(uint64_t id)
{
	for (auto &[key, t] : triggers_)
		if (t.id == id)
			return &t;
	return nullptr;
}

control::Triggers TriggerTable::rules_for(uid_t program_uid) const
{
	control::Triggers rules;
	for (const auto &[key, t] : triggers_)
		if (t.in_programs() && concerns(t, program_uid))
			rules.triggers.push_back(
				{t.id, *t.condition.pattern, t.condition.filter, t.condition.captures});
	return rules;
}

std::vector<ActionRun> TriggerTable::notified(uint64_t app, pid_t pid, uid_t uid, const control::Notification &n)
{
	Trigger *t = find(n.trigger);
	// A trigger removed meanwhile, or a program that names one it was not given.
	if (!t || !t->in_programs() || !concerns(*t, uid))
		return {};
	t->dropped += n.dropped;
	if (n.event.empty() || !event::event_pattern_matches(*t->condition.pattern, n.event))
		return {}; // drops alone, or an event the trigger does not match
	Rate &rate = rates_[app];
	const auto now = std::chrono::steady_clock::now();
	rate.tokens = std::min(kProgramRate,
	                       rate.tokens + kProgramRate * std::chrono::duration<double>(now - rate.at).count());
	rate.at = now;
	if (rate.tokens < 1) {
		t->dropped++;
		return {};
	}
	rate.tokens -= 1;
	control::TriggerFired fired{t->name, n.time_ns, n.event.substr(0, 512), pid, {}, 0};
	for (const auto &name : t->condition.captures) {
		auto it = n.captures.find(name);
		fired.captures[name] = it == n.captures.end() ? json(nullptr) : sane_capture(it->second);
	}
	return fire(*t, std::move(fired));
}

std::vector<ActionRun> TriggerTable::kernel_matched(uint64_t trigger, kernel::WatchMatch m)
{
	Trigger *t = find(trigger);
	if (!t || !t->in_kernel())
		return {};
	t->dropped += m.dropped;
	if (m.event.empty())
		return {}; // drops alone
	control::TriggerFired fired{t->name, m.time_ns, m.event, m.tid, {}, 0};
	for (auto &[name, value] : m.captures) {
		json &out = fired.captures[name];
		if (const auto *i = std::get_if<int64_t>(&value))
			out = *i;
		else if (const auto *u = std::get_if<uint64_t>(&value))
			out = *u;
		else if (const auto *s = std::get_if<std::string>(&value))
			out = std::move(*s);
		else
			out = nullptr;
	}
	return fire(*t, std::move(fired));
}

std::vector<ActionRun> TriggerTable::sampled(Trigger &t, uint64_t session_id, bool met,
                                             std::map<std::string, json> captures)
{
	const bool was_met = t.held_in == session_id;
	t.held_in = met ? session_id : 0;
	if (!met || was_met)
		return {};
	timespec now{};
	clock_gettime(CLOCK_REALTIME, &now);
	const uint64_t ns = static_cast<uint64_t>(now.tv_sec) * 1000000000 + static_cast<uint64_t>(now.tv_nsec);
	return fire(t, {t.name, ns, "", 0, std::move(captures), 0});
}

std::vector<ActionRun> TriggerTable::channel_sampled(const ChannelSample &sample)
{
	std::vector<ActionRun> runs;
	for (auto &[key, t] : triggers_) {
		const control::TriggerCondition &c = t.condition;
		const bool ge = c.type == kBufferUsageGe;
		if ((!ge && c.type != kBufferUsageLe) || t.owner != sample.owner || c.session != sample.session ||
		    c.channel != sample.channel || c.domain != sample.domain)
			continue;
		// LTTng's rule: the fullest stream against a lower bound, the emptiest against an upper one.
		const uint64_t usage = ge ? sample.highest_bytes : sample.lowest_bytes;
		const bool met = c.threshold_bytes
		                         ? (ge ? usage >= *c.threshold_bytes : usage <= *c.threshold_bytes)
		                         : (ge ? usage * 100 >= uint64_t{*c.threshold_percent} * sample.stream_bytes
		                               : usage * 100 <= uint64_t{*c.threshold_percent} * sample.stream_bytes);
		const double ratio =
			sample.stream_bytes ? static_cast<double>(usage) / static_cast<double>(sample.stream_bytes) : 0;
		auto more = sampled(t, sample.session_id, met,
		                    {{"session", sample.session},
		                     {"channel", sample.channel},
		                     {"domain", sample.domain},
		                     {"buffer_usage_bytes", usage},
		                     {"buffer_usage_ratio", ratio},
		                     {"stream_bytes", sample.stream_bytes}});
		runs.insert(runs.end(), more.begin(), more.end());
	}
	return runs;
}

std::vector<ActionRun> TriggerTable::session_sampled(const SessionSample &sample)
{
	std::vector<ActionRun> runs;
	for (auto &[key, t] : triggers_) {
		const control::TriggerCondition &c = t.condition;
		if (c.type != kConsumedSizeGe || t.owner != sample.owner || c.session != sample.session)
			continue;
		auto more = sampled(t, sample.session_id, sample.consumed_bytes >= *c.threshold_bytes,
		                    {{"session", sample.session}, {"consumed_bytes", sample.consumed_bytes}});
		runs.insert(runs.end(), more.begin(), more.end());
	}
	return runs;
}

std::vector<ActionRun> TriggerTable::fire(Trigger &t, control::TriggerFired fired)
{
	t.fired++;
	std::vector<ActionRun> runs;
	for (size_t i = 0; i < t.actions.size(); i++) {
		auto &a = t.actions[i];
		a.requests++;
		if (!policy_runs(a.action, a.requests))
			continue;
		if (a.action.type == kNotify) {
			a.executed++;
			deliver(t, fired);
		} else {
			runs.push_back({t.id, i, a.action.type, a.action.session.value_or(""), t.owner, t.group});
		}
	}
	return runs;
}

void TriggerTable::action_done(const ActionRun &run, const std::string &error)
{
	Trigger *t = find(run.trigger);
	if (!t || run.index >= t->actions.size())
		return; // removed meanwhile
	auto &a = t->actions[run.index];
	if (error.empty()) {
		a.executed++;
	} else {
		a.failed++;
		a.error = error;
	}
}

void TriggerTable::deliver(Trigger &t, const control::TriggerFired &fired)
{
	std::string body;
	for (auto it = watchers_.begin(); it != watchers_.end();) {
		if ((it->uid != 0 && it->uid != t.owner) || (!it->names.empty() && !it->names.count(t.name))) {
			++it;
			continue;
		}
		if (body.empty()) {
			control::TriggerFired copy = fired;
			copy.dropped = t.dropped;
			body = control::encode(copy).dump(-1, ' ', false, json::error_handler_t::replace);
		}
		if (send(it->sock.get(), body.data(), body.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
			++it;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
			t.dropped++; // the watcher does not keep up: this one is lost, counted
			++it;
		} else {
			it = watchers_.erase(it); // the watcher is gone
		}
	}
}

void TriggerTable::sweep_watchers()
{
	std::erase_if(watchers_, [](const Watcher &w) {
		pollfd p{w.sock.get(), POLLOUT, 0};
		return poll(&p, 1, 0) < 0 || (p.revents & (POLLHUP | POLLERR));
	});
}

base::Fd TriggerTable::watch(uid_t peer, const std::vector<std::string> &names, std::vector<std::string> *watched)
{
	for (const auto &name : names)
		named(peer, name); // throws for a name the peer has not
	sweep_watchers();
	if (std::count_if(watchers_.begin(), watchers_.end(), [&](const Watcher &w) { return w.uid == peer; }) >=
	    static_cast<long>(kMaxWatchersPerUser))
		refuse("you have " + std::to_string(kMaxWatchersPerUser) +
		       " watchers, the most a user may have: end one first");
	int pair[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
		refuse(std::string("cannot make the watcher's socket: ") + strerror(errno));
	base::Fd ours(pair[0]), theirs(pair[1]);
	shutdown(ours.get(), SHUT_RD);
	watchers_.push_back({peer, std::move(ours), {names.begin(), names.end()}});
	*watched = names;
	return theirs;
}

ActionRunner::ActionRunner(Command command, Done done) : command_(std::move(command)), done_(std::move(done))
{
	thread_ = std::thread([this] { run(); });
}

ActionRunner::~ActionRunner() { stop(); }

bool ActionRunner::post(ActionRun run)
{
	std::lock_guard lock(mutex_);
	if (stopping_ || queue_.size() >= kMaxQueued)
		return false;
	queue_.push_back(std::move(run));
	cv_.notify_one();
	return true;
}

void ActionRunner::stop()
{
	{
		std::lock_guard lock(mutex_);
		stopping_ = true;
		queue_.clear();
	}
	cv_.notify_one();
	if (thread_.joinable())
		thread_.join();
}

void ActionRunner::run()
{
	pthread_setname_np(pthread_self(), "trigger-actions");
	std::unique_lock lock(mutex_);
	for (;;) {
		cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
		if (stopping_)
			return;
		ActionRun run = std::move(queue_.front());
		queue_.pop_front();
		lock.unlock();
		std::string error;
		try {
			error = command_(run);
		} catch (const std::exception &e) {
			error = e.what();
		}
		if (!error.empty())
			log(Level::warn, "trigger action %s of session '%s' (uid %u) failed: %s", run.type.c_str(),
			    run.session.c_str(), run.owner, error.c_str());
		done_(run, error);
		lock.lock();
	}
}

} // namespace tracery::daemon
