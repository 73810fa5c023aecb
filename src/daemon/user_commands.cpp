// The user space domain's requests of the tracery command (-u, the
// default), as traceryd answers them: a session's channels, the events they
// enable or disable (with filters, checked against the programs' events),
// the context their events carry, and the events of running programs. Every
// error is one line naming the problem and the fix; a failed command leaves
// every session as it was.
#include "daemon/daemon.hpp"
#include "daemon/tracefile_options.hpp"

#include "event/event_pattern.hpp"
#include "event/schema.hpp"
#include "filter/compiler.hpp"
#include "filter/parser.hpp"

#include <algorithm>
#include <climits>

namespace tracery::daemon {

namespace {

std::vector<std::string> patterns_of(const control::EventRules &req)
{
	if (req.all)
		return {"*"};
	for (const std::string &s : req.patterns)
		if (s.empty() || (s != "*" && s.find(':') == std::string::npos))
			throw CommandError("bad event pattern '" + s +
			                   "': write PROVIDER:NAME, with * wildcards (e.g. 'app:*')");
	if (req.patterns.empty())
		throw CommandError("no event given: name events (PROVIDER:NAME, * wildcards) or use -a for all");
	return req.patterns;
}

// enable-event --exclude, as LTTng has it: events a wildcard pattern
// matches that the rule leaves out, each PROVIDER:NAME (with * wildcards).
std::vector<std::string> exclusions_of(const control::EventRules &req, const std::vector<std::string> &patterns)
{
	if (!req.exclude || req.exclude->empty())
		return {};
	constexpr size_t kMaxExclusions = 256, kMaxName = 256;
	if (req.exclude->size() > kMaxExclusions)
		throw CommandError("--exclude: " + std::to_string(req.exclude->size()) + " names, more than " +
		                   std::to_string(kMaxExclusions) + ": exclude fewer, or with wildcards");
	for (const std::string &p : patterns)
		if (p.find('*') == std::string::npos)
			throw CommandError("--exclude leaves out events a wildcard pattern matches, and '" + p +
			                   "' has no wildcard: give 'PROVIDER:*' or the like");
	for (const std::string &e : *req.exclude)
		if (e.empty() || e.size() > kMaxName || e.find(':') == std::string::npos)
			throw CommandError("bad --exclude name '" + e.substr(0, kMaxName) +
			                   "': write PROVIDER:NAME, with * wildcards (e.g. 'app:debug_*')");
	return *req.exclude;
}

// A size of the request: a number below 2^32 (the command sends what
// base::parse_size read), else the default.
uint32_t size_argument(const std::optional<uint64_t> &size, const char *option, uint32_t fallback)
{
	if (!size)
		return fallback;
	if (*size > UINT32_MAX)
		throw CommandError(std::string("bad ") + option + " '" + std::to_string(*size) +
		                   "': give a power of two, optionally with k, M or G");
	return static_cast<uint32_t>(*size);
}

// --blocking-timeout: -1 (inf) or a number of microseconds; discard mode only, as LTTng has it (an overwrite
// channel always has space).
int64_t blocking_timeout_argument(const std::optional<int64_t> &us, ringbuf::Mode mode)
{
	if (!us || *us == 0)
		return 0;
	if (*us < -1)
		throw CommandError("bad --blocking-timeout '" + std::to_string(*us) +
		                   "': give 0, inf or a duration (500us, 20ms, 2s)");
	if (mode != ringbuf::Mode::discard)
		throw CommandError("--blocking-timeout is for discard channels: an overwrite channel never lacks "
		                   "space (drop --overwrite, or the timeout)");
	return *us;
}

} // namespace

control::EnableChannelReply Daemon::cmd_enable_channel(const control::EnableChannel &req, const control::PeerCred &peer,
                                                       Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	if (Channel *existing = s.find_channel(req.channel); existing && existing->disabled())
		return enable_channel_again(s, *existing, req, lock);
	ChannelSpec spec;
	spec.name = req.channel;
	spec.subbuf_size = size_argument(req.subbuf_size, "--subbuf-size", spec.subbuf_size);
	spec.num_subbuf = size_argument(req.num_subbuf, "--num-subbuf", spec.num_subbuf);
	spec.mode = req.overwrite ? ringbuf::Mode::overwrite : ringbuf::Mode::discard;
	spec.per_pid = req.per_pid;
	spec.blocking_timeout_us = blocking_timeout_argument(req.blocking_timeout_us, spec.mode);
	spec.tracefile = tracefile_limit(req.tracefile_size, req.tracefile_count, spec.subbuf_size, s.identity());
	spec.switch_timer_us = timer_argument(req.switch_timer_us, "--switch-timer", 0);
	spec.monitor_timer_us =
		timer_argument(req.monitor_timer_us, "--monitor-timer", control::kDefaultMonitorTimerUs);
	// Sizes the ring buffer refuses on this machine, or beyond the buffer
	// quota, are refused here, naming the limit (TraceSession::add_channel).
	Channel &ch = s.add_channel(spec);
	return {s.name(), ch.spec().name, ch.buffer_bytes()};
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
			    std::none_of(patterns.begin(), patterns.end(),
			                 [&](const std::string &p) { return event::event_pattern_matches(p, name); }))
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

control::EventRulesReply Daemon::cmd_event_rules(const control::EventRules &req, bool disable,
                                                 const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	const std::vector<std::string> patterns = patterns_of(req);
	const std::string &chname = req.channel;
	Channel *ch = disable ? s.find_channel(chname.empty() ? "channel0" : chname) : &s.channel_or_default(chname);
	if (!ch)
		throw CommandError("no channel '" + (chname.empty() ? "channel0" : chname) + "' in session '" +
		                   s.name() + "'");
	const std::string filter = disable ? "" : req.filter.value_or("");
	if (!filter.empty())
		check_filter(filter, patterns, peer);
	const std::vector<std::string> exclude = disable ? std::vector<std::string>() : exclusions_of(req, patterns);
	if (disable)
		ch->disable(patterns);
	else
		ch->enable(patterns, filter, exclude);
	control::EventRulesReply reply{s.name(), ch->spec().name, patterns, std::nullopt};
	if (s.started())
		reply.refused = update_members(s, lock); // returns once the programs apply it (bounded)
	return reply;
}

control::AddContextReply Daemon::cmd_add_context(const control::AddContext &req, const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req.session, peer);
	if (s.ever_started())
		throw CommandError("session '" + s.name() +
		                   "' has been started: add context before the first `tracery start`");
	event::ContextOptions added; // all checked before any channel changes
	for (const std::string &type : req.types)
		if (!event::set_user_context(added, type))
			throw CommandError("unknown context '" + type +
			                   "': `tracery add-context --list` lists those of user space (domain user)");
	if (const std::string why = event::perf_counters_unavailable(added); !why.empty())
		throw CommandError(why);
	std::vector<Channel *> targets;
	if (req.channel.empty() && !s.channels().empty()) {
		for (const auto &c : s.channels())
			targets.push_back(c.get());
	} else {
		targets.push_back(&s.channel_or_default(req.channel));
	}
	for (const std::string &type : req.types)
		for (Channel *c : targets)
			event::set_user_context(c->spec().context, type);
	return {s.name()};
}

control::ListEventsReply Daemon::cmd_list_events(const control::ListEvents &, const control::PeerCred &peer, Lock &)
{
	control::ListEventsReply reply;
	for (auto &[id, app] : apps_) {
		if (app->gone || (peer.uid != 0 && peer.uid != app->cred.uid))
			continue;
		control::ProgramEvents program{app->cred.pid, app->cred.uid, app->procname, {}};
		for (const auto &[key, schema] : app->events)
			program.events.push_back({event::full_name(schema), event::fields_summary(schema)});
		reply.programs.push_back(std::move(program));
	}
	return reply;
}

} // namespace tracery::daemon
