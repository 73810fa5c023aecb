// The C API's triggers and notifications (ctl.h): the requests of
// `add-trigger`, `remove-trigger`, `list-triggers`, and `watch`'s socket as a
// handle: a descriptor to poll and one notification (one datagram, a
// TriggerFired) read at a time without waiting.
#include "ctl/c_api.hpp"

#include "control/trigger_messages.hpp"
#include "ctl/autostart.hpp"

#include <sys/socket.h>
#include <cerrno>
#include <cstring>
#include <new>

struct tracery_ctl_watch {
	tracery::base::Fd socket;
};

namespace tracery::ctl {

namespace {

// A notification is at most some 20 KiB (the daemon's bounds on captures).
constexpr size_t kNotificationBytes = 256 * 1024;

std::string condition_type(int type)
{
	switch (type) {
	case TRACERY_CTL_CONDITION_EVENT_RULE_MATCHES:
		return "event-rule-matches";
	case TRACERY_CTL_CONDITION_BUFFER_USAGE_GE:
		return "channel-buffer-usage-ge";
	case TRACERY_CTL_CONDITION_BUFFER_USAGE_LE:
		return "channel-buffer-usage-le";
	case TRACERY_CTL_CONDITION_SESSION_CONSUMED_SIZE_GE:
		return "session-consumed-size-ge";
	}
	throw Error("condition->type " + std::to_string(type) + " is no enum tracery_ctl_condition_type");
}

std::string action_type(int type)
{
	switch (type) {
	case TRACERY_CTL_ACTION_NOTIFY:
		return "notify";
	case TRACERY_CTL_ACTION_START_SESSION:
		return "start-session";
	case TRACERY_CTL_ACTION_STOP_SESSION:
		return "stop-session";
	case TRACERY_CTL_ACTION_SNAPSHOT_SESSION:
		return "snapshot-session";
	case TRACERY_CTL_ACTION_ROTATE_SESSION:
		return "rotate-session";
	}
	throw Error("actions[].type " + std::to_string(type) + " is no enum tracery_ctl_action_type");
}

control::TriggerCondition condition_of(const tracery_ctl_trigger_condition *c)
{
	if (!c)
		throw Error("condition is NULL");
	check_struct_size(*c, "condition");
	control::TriggerCondition out;
	out.type = condition_type(c->type);
	out.domain = is_kernel(c->domain) ? "kernel" : "user";
	out.pattern = optional_text(c->pattern, "condition->pattern");
	out.filter = optional_text(c->filter, "condition->filter");
	out.captures = strings(c->captures, c->capture_count, "condition->captures");
	out.session = optional_text(c->session, "condition->session");
	out.channel = optional_text(c->channel, "condition->channel");
	if (c->threshold_bytes)
		out.threshold_bytes = c->threshold_bytes;
	else if (c->type != TRACERY_CTL_CONDITION_EVENT_RULE_MATCHES)
		out.threshold_percent = c->threshold_percent;
	return out;
}

control::TriggerAction action_of(const tracery_ctl_trigger_action *a)
{
	if (!a)
		throw Error("an action is NULL");
	check_struct_size(*a, "actions[]");
	control::TriggerAction out;
	out.type = action_type(a->type);
	out.session = optional_text(a->session, "actions[]->session");
	if (a->policy == TRACERY_CTL_RATE_EVERY)
		out.policy = "every";
	else if (a->policy == TRACERY_CTL_RATE_ONCE_AFTER)
		out.policy = "once-after";
	else
		throw Error("actions[]->policy " + std::to_string(a->policy) + " is no enum tracery_ctl_rate_policy");
	out.count = a->count ? a->count : 1;
	return out;
}

} // namespace

} // namespace tracery::ctl

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_add_trigger(const char *name, const struct tracery_ctl_trigger_condition *condition,
                                            const struct tracery_ctl_trigger_action *const *actions,
                                            size_t action_count, char **added_name)
{
	return c_call([&] {
		control::AddTrigger req;
		req.name = optional_text(name, "name");
		req.condition = condition_of(condition);
		if (action_count == 0)
			throw Error("no action: a trigger needs at least one (TRACERY_CTL_ACTION_NOTIFY, ...)");
		if (!actions)
			throw Error("actions is NULL with a count of " + std::to_string(action_count));
		if (action_count > control::kDaemonLimits.command)
			throw Error("actions: a count of " + std::to_string(action_count) +
			            " is more than a request can carry");
		for (size_t i = 0; i < action_count; i++)
			req.actions.push_back(action_of(actions[i]));
		ensure_daemon();
		give_string(request(req).name, added_name);
	});
}

TRACERY_CTL_API int tracery_ctl_remove_trigger(const char *name)
{
	return c_call([&] { request(control::RemoveTrigger{required(name, "name")}); });
}

TRACERY_CTL_API int tracery_ctl_list_triggers(char **json)
{
	return c_call([&] {
		if (!json)
			throw Error("json is NULL");
		give_reply(request(control::ListTriggers{}), json);
	});
}

TRACERY_CTL_API int tracery_ctl_watch_open(const char *const *names, size_t count, tracery_ctl_watch **watch)
{
	return c_call([&] {
		if (!watch)
			throw Error("watch is NULL");
		control::Watch req{strings(names, count, "names")};
		std::vector<base::Fd> fds;
		const nlohmann::json body = exchange(control::encode(req), &fds);
		try {
			control::decode<control::WatchReply>(body);
		} catch (const control::DecodeError &e) {
			bad_reply(e);
		}
		if (fds.size() != 1)
			throw Error(
				"the session daemon's reply to watch has no socket: libtracery-ctl and traceryd are "
				"from different releases",
				ErrorKind::protocol);
		*watch = new tracery_ctl_watch{std::move(fds[0])};
	});
}

TRACERY_CTL_API int tracery_ctl_watch_fd(const tracery_ctl_watch *watch)
{
	if (!watch) {
		set_error_message("watch is NULL");
		return TRACERY_CTL_ERROR_INVALID;
	}
	set_error_message("");
	return watch->socket.get();
}

TRACERY_CTL_API int tracery_ctl_watch_next(tracery_ctl_watch *watch, char **json)
{
	return c_call([&] {
		if (!watch)
			throw Error("watch is NULL");
		if (!json)
			throw Error("json is NULL");
		std::string buf(kNotificationBytes, '\0');
		ssize_t n;
		do
			n = recv(watch->socket.get(), buf.data(), buf.size(), MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			throw Error("no notification yet", ErrorKind::again);
		if (n < 0)
			throw Error(std::string("reading notifications: ") + strerror(errno), ErrorKind::connection);
		if (n == 0)
			throw Error("the session daemon ended the watch", ErrorKind::closed);
		buf.resize(static_cast<size_t>(n));
		control::TriggerFired fired;
		try {
			fired = control::decode<control::TriggerFired>(nlohmann::json::parse(buf));
		} catch (const std::exception &e) {
			throw Error(std::string("a notification that does not fit this library (") + e.what() +
			                    "): libtracery-ctl and traceryd are from different releases",
			            ErrorKind::protocol);
		}
		give_reply(fired, json);
	});
}

TRACERY_CTL_API void tracery_ctl_watch_close(tracery_ctl_watch *watch) { delete watch; }

} // extern "C"
