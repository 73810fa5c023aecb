// add-trigger, list-triggers, remove-trigger and watch: the daemon's
// triggers (src/daemon/triggers.hpp) with lttng's syntax. add-trigger's
// arguments are read in order, as lttng reads them: `--name` before
// `--condition` names the trigger, after it the events; a session name and
// `--rate-policy` belong to the `--action` before them.
#include "cli/triggers.hpp"

#include "cli/client.hpp"

#include "base/sizes.hpp"
#include "control/trigger_messages.hpp"
#include "filter/parser.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string_view>

namespace tracery::cli {

using nlohmann::json;

namespace {

// "--key=value" or "--key value": the value, taking the next argument if needed.
struct ArgReader {
	const std::vector<std::string> &args;
	size_t i = 0;
	bool done() const { return i >= args.size(); }
	// Whether args[i] is the option `key`; *value its value (then i is past it).
	bool option(const char *key, std::string *value)
	{
		const std::string &a = args[i];
		const size_t n = strlen(key);
		if (a.compare(0, n, key) != 0)
			return false;
		if (a.size() > n && a[n] == '=') {
			*value = a.substr(n + 1);
			i++;
			return true;
		}
		if (a.size() != n)
			return false;
		if (i + 1 >= args.size())
			throw CliError(std::string(key) + " needs a value");
		*value = args[i + 1];
		i += 2;
		return true;
	}
};

uint64_t parse_count(const std::string &text, const std::string &policy)
{
	char *end = nullptr;
	errno = 0;
	const unsigned long long n = strtoull(text.c_str(), &end, 10);
	if (text.empty() || *end || errno || n == 0 || text[0] == '-')
		throw CliError("bad rate policy '" + policy + "': the count must be an integer of at least 1");
	return n;
}

// --rate-policy=every:N | once-after:N
void set_policy(control::TriggerAction &a, const std::string &policy)
{
	const size_t colon = policy.find(':');
	const std::string kind = policy.substr(0, colon);
	if (colon == std::string::npos || (kind != "every" && kind != "once-after"))
		throw CliError("bad rate policy '" + policy + "': give every:N or once-after:N");
	a.policy = kind;
	a.count = parse_count(policy.substr(colon + 1), policy);
}

// --threshold-ratio: from 0 to 1, in hundredths (the daemon compares percents).
uint32_t parse_ratio(const std::string &text)
{
	const auto bad = [&] {
		return CliError("bad --threshold-ratio '" + text +
		                "': give a ratio from 0 to 1 in hundredths at most (e.g. 0.75)");
	};
	char *end = nullptr;
	errno = 0;
	const double r = strtod(text.c_str(), &end);
	if (text.empty() || *end || errno || !(r >= 0 && r <= 1))
		throw bad();
	const double percent = r * 100;
	const long rounded = lround(percent);
	if (std::fabs(percent - static_cast<double>(rounded)) > 1e-6)
		throw bad();
	return static_cast<uint32_t>(rounded);
}

std::string policy_text(const control::TriggerAction &a)
{
	if (a.policy == "every")
		return a.count == 1 ? "every time" : "every " + std::to_string(a.count) + " occurrences";
	return "once after " + std::to_string(a.count) + " occurrences";
}

// Time since the epoch as 2026-11-29T00:11:00.123456789Z.
std::string utc_text(uint64_t ns)
{
	const time_t s = static_cast<time_t>(ns / 1000000000);
	tm t{};
	gmtime_r(&s, &t);
	char out[64];
	snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%09lluZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
	         t.tm_hour, t.tm_min, t.tm_sec, static_cast<unsigned long long>(ns % 1000000000));
	return out;
}

} // namespace

control::AddTrigger parse_add_trigger(const std::vector<std::string> &args)
{
	control::AddTrigger req;
	req.condition.domain = "user";
	ArgReader r{args};
	bool condition = false;
	control::TriggerAction *action = nullptr;
	std::string value;
	while (!r.done()) {
		if (r.option("--condition", &value)) {
			if (condition)
				throw CliError("one --condition per trigger");
			condition = true;
			action = nullptr;
			req.condition.type = value;
		} else if (r.option("--action", &value)) {
			if (!condition)
				throw CliError("--action comes after the --condition it acts on");
			req.actions.push_back({value, std::nullopt, "every", 1});
			action = &req.actions.back();
		} else if (r.option("--rate-policy", &value)) {
			if (!action)
				throw CliError("--rate-policy follows the --action it applies to");
			set_policy(*action, value);
		} else if (r.option("--id", &value)) {
			req.name = value;
		} else if (!condition && r.option("--name", &value)) {
			req.name = value; // before --condition: the trigger's, as lttng's
		} else if (action) {
			const std::string &a = args[r.i];
			if (a.starts_with("-") || action->session)
				throw CliError("unexpected '" + a + "' after --action=" + action->type);
			action->session = a;
			r.i++;
		} else if (!condition) {
			throw CliError("unexpected '" + args[r.i] + "': give --condition=event-rule-matches first");
		} else if (r.option("--type", &value)) {
			req.condition.domain = value;
		} else if (r.option("--name", &value)) {
			req.condition.pattern = value;
		} else if (r.option("--filter", &value)) {
			filter::Error e;
			if (!filter::parse(value, &e))
				throw CliError("bad filter: " + filter::render_error(value, e));
			req.condition.filter = value;
		} else if (r.option("--capture", &value)) {
			req.condition.captures.push_back(value);
		} else if (r.option("--session", &value)) {
			req.condition.session = value;
		} else if (r.option("--channel", &value)) {
			req.condition.channel = value;
		} else if (r.option("--threshold-size", &value)) {
			const auto bytes = base::parse_size(value);
			if (!bytes)
				throw CliError("bad --threshold-size '" + value + "': give a size, e.g. 4M");
			req.condition.threshold_bytes = *bytes;
		} else if (r.option("--threshold-ratio", &value)) {
			req.condition.threshold_percent = parse_ratio(value);
		} else if (r.option("--domain", &value)) {
			req.condition.domain = value;
		} else if (r.option("--threshold-percent", &value)) {
			const uint64_t n = parse_count(value, value);
			if (n > 100)
				throw CliError("--threshold-percent is at most 100");
			req.condition.threshold_percent = static_cast<uint32_t>(n);
		} else if (args[r.i] == "-u" || args[r.i] == "--userspace") {
			req.condition.domain = "user";
			r.i++;
		} else if (args[r.i] == "-k" || args[r.i] == "--kernel") {
			req.condition.domain = "kernel";
			r.i++;
		} else {
			throw CliError("unknown argument '" + args[r.i] +
			               "' of the condition; see `tracery add-trigger --help`");
		}
	}
	if (!condition)
		throw CliError("no --condition: give --condition=event-rule-matches --type=user --name=PATTERN");
	if (req.actions.empty())
		throw CliError("no --action: give at least one, e.g. --action=notify");
	return req;
}

int verb_add_trigger(const std::vector<std::string> &args)
{
	const auto reply = request(parse_add_trigger(args));
	printf("Trigger '%s' added\n", reply.name.c_str());
	return 0;
}

int verb_list_triggers()
{
	const auto reply = request(control::ListTriggers{});
	if (reply.triggers.empty()) {
		printf("No triggers\n");
		return 0;
	}
	for (const auto &t : reply.triggers) {
		const auto &c = t.condition;
		printf("- name: %s\n  owner uid: %u\n  condition: %s\n", t.name.c_str(), t.owner, c.type.c_str());
		if (c.pattern)
			printf("    rule: %s (type: %s%s%s)\n", c.pattern->c_str(), c.domain.c_str(),
			       c.filter ? ", filter: " : "", c.filter ? c.filter->c_str() : "");
		if (c.session)
			printf("    session: %s%s%s (domain: %s)\n", c.session->c_str(), c.channel ? ", channel: " : "",
			       c.channel ? c.channel->c_str() : "", c.domain.c_str());
		if (c.threshold_percent)
			printf("    threshold: ratio %.2f\n", *c.threshold_percent / 100.0);
		if (c.threshold_bytes)
			printf("    threshold: %s\n", base::format_size(*c.threshold_bytes).c_str());
		if (!c.captures.empty()) {
			printf("    captures:\n");
			for (const auto &f : c.captures)
				printf("      - %s\n", f.c_str());
		}
		printf("  actions:\n");
		for (const auto &a : t.actions) {
			printf("    %s%s%s, rate policy: %s\n", a.action.type.c_str(),
			       a.action.session ? " session " : "", a.action.session ? a.action.session->c_str() : "",
			       policy_text(a.action).c_str());
			printf("      requests: %llu, executed: %llu, failed: %llu%s%s\n",
			       static_cast<unsigned long long>(a.requests), static_cast<unsigned long long>(a.executed),
			       static_cast<unsigned long long>(a.failed),
			       a.error.empty() ? "" : ", last error: ", a.error.c_str());
		}
		printf("  fired: %llu, notifications dropped: %llu\n", static_cast<unsigned long long>(t.fired),
		       static_cast<unsigned long long>(t.dropped));
	}
	return 0;
}

int verb_remove_trigger(const std::string &name)
{
	const auto reply = request(control::RemoveTrigger{name});
	printf("Trigger '%s' removed\n", reply.name.c_str());
	return 0;
}

int verb_watch(const std::vector<std::string> &names)
{
	std::vector<base::Fd> fds;
	const json body = exchange(control::encode(control::Watch{names}), &fds);
	try {
		control::decode<control::WatchReply>(body);
	} catch (const control::DecodeError &e) {
		bad_reply(e);
	}
	if (fds.size() != 1)
		throw CliError("the session daemon's reply to watch has no socket: tracery and traceryd are from "
		               "different releases");
	std::string what = names.empty() ? "all your triggers" : "";
	for (const auto &n : names)
		what += (what.empty() ? "trigger " : ", ") + n;
	fprintf(stderr, "Watching %s; interrupt to stop\n", what.c_str());
	// A notification is at most some 20 KiB (TriggerTable's bounds on captures).
	std::vector<char> buf(256 * 1024);
	for (;;) {
		const ssize_t n = recv(fds[0].get(), buf.data(), buf.size(), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw CliError(std::string("reading notifications: ") + strerror(errno));
		if (n == 0) {
			fprintf(stderr, "tracery: the session daemon ended\n");
			return 1;
		}
		control::TriggerFired fired;
		try {
			fired = control::decode<control::TriggerFired>(
				json::parse(std::string_view(buf.data(), static_cast<size_t>(n))));
		} catch (const std::exception &e) {
			throw CliError(std::string("a notification that does not fit this command (") + e.what() +
			               "): tracery and traceryd are from different releases");
		}
		json line = {{"trigger", fired.trigger}, {"time", utc_text(fired.time_ns)},
		             {"time_ns", fired.time_ns}, {"event", fired.event},
		             {"pid", fired.pid},         {"captures", fired.captures},
		             {"dropped", fired.dropped}};
		const std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
		if (fwrite(text.data(), 1, text.size(), stdout) != text.size() || fflush(stdout) != 0)
			return 0; // the reader is gone
	}
}

} // namespace tracery::cli
