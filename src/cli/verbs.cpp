// The verbs of the tracery command: build the request, show the reply.
#include "cli/verbs.hpp"

#include "cli/analyze_preload.hpp"
#include "cli/channel_options.hpp"
#include "cli/client.hpp"
#include "cli/current.hpp"
#include "cli/durations.hpp"
#include "cli/export_formats.hpp"
#include "cli/print.hpp"

#include "ctl/request_inputs.hpp"

#include "analysis/analyze/analyses.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/read/trace_scan.hpp"
#include "analysis/sql/clickhouse_export.hpp"
#include "analysis/sql/clickhouse_query.hpp"
#include "analysis/sql/query.hpp"
#include "analysis/sql/sqlite_export.hpp"
#include "analysis/stats/trace_stats.hpp"
#include "analysis/view/text_view.hpp"

#include "base/cat.hpp"
#include "base/sizes.hpp"
#include "control/messages.hpp"
#include "control/paths.hpp"
#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"
#include "control/version.hpp"
#include "control/wire.hpp"
#include "event/context_table.hpp"
#include "filter/parser.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>

namespace tracery::cli {

using base::cat;
namespace {

// -u and -k exclude each other (as in lttng).
void one_domain(const Args &a)
{
	if (a.kernel && a.userspace)
		throw CliError("-u and -k exclude each other: give one domain per command");
}

} // namespace

std::vector<std::string> split_commas(const std::vector<std::string> &args)
{
	std::vector<std::string> out;
	for (const auto &p : args) {
		size_t start = 0;
		for (;;) {
			size_t comma = p.find(',', start);
			std::string one =
				p.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
			if (!one.empty())
				out.push_back(one);
			if (comma == std::string::npos)
				break;
			start = comma + 1;
		}
	}
	return out;
}

namespace {

std::string default_output(const std::string &name)
{
	time_t t = time(nullptr);
	tm tm_;
	localtime_r(&t, &tm_);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm_);
	return control::home_dir() + "/tracery-traces/" + name + "-" + stamp;
}

// "512k", "4M", "1G", "65536" (base::parse_size), at least 1 and at most
// 2^32 - 1.
uint64_t parse_size(const std::string &s, const char *option)
{
	const auto v = base::parse_size(s);
	if (!v || *v == 0 || *v > UINT32_MAX)
		throw CliError(std::string("bad ") + option + " '" + s + "': give a number, optionally with k, M or G");
	return *v;
}

// --live's PERIOD: a duration (a bare number: seconds), 10ms to 1h; in ns.
uint64_t parse_period(const std::string &s)
{
	const std::optional<uint64_t> ns = parse_duration_ns(s, 1'000'000'000);
	if (!ns || *ns < 10'000'000 || *ns > 3'600'000'000'000)
		throw CliError("bad --live period '" + s +
		               "': give a duration from 10ms to 1h, e.g. --live=500ms or --live=2s");
	return *ns;
}

// The session a request names: -s NAME, or the current one.
control::SessionRequest named_session(const Args &a) { return {session_or_current(a.session)}; }

} // namespace

int verb_create(const Args &a)
{
	std::string url = a.url;
	control::Create req;
	req.session = a.session;
	req.snapshot = a.snapshot;
	if (a.live_given) {
		req.live_period_ns = parse_period(a.live.empty() ? "1s" : a.live);
		if (url.empty())
			url = "net://localhost";
		if (a.public_live)
			req.public_live = true;
	} else if (a.public_live) {
		throw CliError("--public-live marks a live session: add --live[=PERIOD], or drop --public-live");
	}
	if (a.local_copy && url.empty())
		throw CliError(
			"--local-copy keeps a copy of what --set-url sends: give --set-url net://HOST[:PORT] too, "
			"or drop --local-copy");
	const bool local = url.empty() || a.local_copy;
	if (!url.empty()) {
		std::string why;
		if (!control::relay::parse_relay_url(url, control::relay::kDefaultPort, &why))
			throw CliError(why);
		if (!local && !a.output.empty())
			throw CliError(
				"--output names the local copy of a session sent to a relay: add --local-copy, or "
				"drop --output");
		req.url = url;
		req.local_copy = a.local_copy;
		// the files read here, with the user's rights, their contents sent to the daemon
		ctl::add_relay_security(a.relay_key, a.relay_ca, req, "--relay-key", "--relay-ca");
	} else if (!a.relay_key.empty() || !a.relay_ca.empty()) {
		if (!a.snapshot)
			throw CliError("--relay-key and --relay-ca are for a session sent to a relay, or the snapshots "
			               "of a snapshot session: give --set-url net://HOST[:PORT] or --snapshot too, or "
			               "drop them");
		// The key of the snapshots it sends to a relay (`snapshot add-output net://...`).
		ctl::add_relay_security(a.relay_key, a.relay_ca, req, "--relay-key", "--relay-ca");
	}
	if (local)
		req.output = a.output.empty() ? default_output(a.session) : ctl::absolute_path(a.output);
	const control::CreateReply r = request(req);
	set_current_session(a.session);
	std::string where = r.output;
	if (r.relay) {
		where = cat("the relay at ", r.relay->url, " (its ", r.relay->path, ")",
		            where.empty() ? "" : " and to ", where);
		if (const uint64_t p = r.relay->live_period_ns)
			where += cat(", live every ", std::to_string(p / 1000000), " ms",
			             a.public_live ? ", public (the relay's plain lttng-live port serves it)" : "");
	}
	if (a.snapshot && !url.empty())
		where = cat("the relay at ", url, " by `snapshot record`");
	printf("Session '%s' created%s; traces go to %s\n", a.session.c_str(), a.snapshot ? " in snapshot mode" : "",
	       where.c_str());
	return 0;
}

int verb_destroy(const Args &a)
{
	control::Destroy req;
	if (a.all)
		req.all = true;
	else
		req.session = session_or_current(a.session);
	if (a.no_wait) {
		if (req.session)
			request(control::Status{{*req.session}}); // it exists: say so now, not never
		post(control::encode(req));
		if (req.session)
			forget_current_session(*req.session);
		printf("%s being destroyed (its trace is complete once `tracery list` no longer shows it)\n",
		       req.session ? ("Session '" + *req.session + "'").c_str() : "Your sessions are");
		return 0;
	}
	const control::DestroyReply r = request(req);
	for (const std::string &n : r.destroyed) {
		forget_current_session(n);
		printf("Session '%s' destroyed\n", n.c_str());
	}
	if (r.destroyed.empty())
		printf("No session to destroy\n");
	return 0;
}

namespace {

// The channel's name, sizes and mode, of a user space or a kernel channel.
template <class Request>
Request channel_request(const Args &a)
{
	Request req;
	req.session = session_or_current(a.session);
	req.channel = a.channel;
	if (!a.subbuf_size.empty())
		req.subbuf_size = parse_size(a.subbuf_size, "--subbuf-size");
	if (!a.num_subbuf.empty())
		req.num_subbuf = parse_size(a.num_subbuf, "--num-subbuf");
	req.overwrite = a.overwrite;
	if (!a.tracefile_size.empty())
		req.tracefile_size = parse_tracefile_size(a.tracefile_size);
	if (!a.tracefile_count.empty())
		req.tracefile_count = parse_tracefile_count(a.tracefile_count);
	return req;
}

} // namespace

int verb_enable_channel(const Args &a)
{
	one_domain(a);
	if (a.kernel && (a.buffers_pid || a.buffers_uid))
		throw CliError("--buffers-pid and --buffers-uid are for user space channels: drop them with -k (the "
		               "kernel has one buffer per CPU)");
	if (a.buffers_pid && a.buffers_uid)
		throw CliError("--buffers-pid and --buffers-uid exclude each other: choose one");
	if (a.kernel && !a.blocking_timeout.empty())
		throw CliError("--blocking-timeout is for user space channels: the kernel's writers never wait");
	if (a.kernel && !a.switch_timer.empty())
		throw CliError("--switch-timer is for user space channels: the kernel's readers write what they read "
		               "whenever a CPU's buffer is empty, so no event waits for a page to fill");
	if (a.kernel) {
		auto req = channel_request<control::KernelEnableChannel>(a);
		if (!a.monitor_timer.empty())
			req.monitor_timer_us = parse_duration_us(a.monitor_timer, "--monitor-timer");
		const auto r = request(req);
		printf("Kernel channel '%s' enabled in session '%s' (%s per CPU)\n", a.channel.c_str(),
		       r.session.c_str(),
		       r.buffer_bytes ? base::format_size(r.buffer_bytes).c_str() : "the kernel's default buffer size");
		return 0;
	}
	auto req = channel_request<control::EnableChannel>(a);
	req.per_pid = a.buffers_pid;
	if (!a.blocking_timeout.empty())
		req.blocking_timeout_us = parse_blocking_timeout(a.blocking_timeout);
	if (!a.switch_timer.empty())
		req.switch_timer_us = parse_duration_us(a.switch_timer, "--switch-timer");
	if (!a.monitor_timer.empty())
		req.monitor_timer_us = parse_duration_us(a.monitor_timer, "--monitor-timer");
	const auto r = request(req);
	printf("Channel '%s' enabled in session '%s' (%s a buffer)\n", a.channel.c_str(), r.session.c_str(),
	       base::format_size(r.buffer_bytes).c_str());
	return 0;
}

int verb_disable_channel(const Args &a)
{
	one_domain(a);
	const auto r = request(control::DisableChannel{session_or_current(a.session), a.channel, a.kernel});
	printf("%s channel '%s' disabled in session '%s'\n", a.kernel ? "Kernel" : "User space", r.channel.c_str(),
	       r.session.c_str());
	return 0;
}

// Programs that refused a filter (its bytecode failed their verifier) do not
// record the event: a failure of the command.
void check_refusals(const std::vector<control::ProgramRefusal> &refused)
{
	if (refused.empty())
		return;
	std::string what;
	for (const auto &r : refused)
		what += (what.empty() ? "" : "; ") + std::string("program ") + std::to_string(r.pid) +
		        " refused the filter of " + r.event + ": " + r.reason;
	fflush(stdout);
	throw CliError(what + " (those programs do not record the event; report this as a bug)");
}

// enable-event -k --userspace-probe=SPEC NAME: the spec's path made
// absolute (the daemon does not share our working directory).
int kernel_probe(const Args &a, const std::vector<std::string> &names)
{
	if (names.size() != 1 || a.all || a.syscall)
		throw CliError("--userspace-probe names one event: enable-event -k --userspace-probe=SPEC NAME");
	control::KernelEnableEvent req;
	req.session = session_or_current(a.session);
	req.probe = ctl::absolute_probe_spec(a.userspace_probe);
	req.probe_name = names[0];
	req.args = a.probe_args;
	req.filter = a.filter;
	req.channel = a.channel;
	const control::KernelEnableEventReply r = request(req);
	for (const std::string &e : r.events)
		printf("Kernel event %s enabled in channel '%s' of session '%s'\n", e.c_str(), r.channel.c_str(),
		       r.session.c_str());
	const uint64_t sites = r.sites.value_or(1);
	printf("  %llu probe site%s; arguments: %s\n", static_cast<unsigned long long>(sites), sites == 1 ? "" : "s",
	       r.args_source.value_or("").c_str());
	for (const std::string &n : r.notes.value_or(std::vector<std::string>{}))
		printf("  %s\n", n.c_str());
	return 0;
}

// enable-event -k / disable-event -k: tracepoints, or with --syscall system calls; -a all of them.
int kernel_event(const Args &a, bool disable)
{
	if (!a.filter.empty()) {
		filter::Error e;
		if (!filter::parse(a.filter, &e))
			throw CliError("bad filter: " + filter::render_error(a.filter, e));
	}
	const std::vector<std::string> names = split_commas(a.patterns);
	if (!a.userspace_probe.empty())
		return kernel_probe(a, names);
	if (!a.probe_args.empty())
		throw CliError("--args is for --userspace-probe");
	if (a.all && !names.empty())
		throw CliError("-a and event names exclude each other: give one or the other");
	if (!a.all && names.empty())
		throw CliError(std::string("no kernel event given: name tracepoints (e.g. sched_switch, 'irq:*') or ") +
		               "system calls with --syscall NAME[,NAME...] or --syscall -a");
	control::KernelEvents req;
	req.session = session_or_current(a.session);
	// -a: every system call, and without --syscall every tracepoint too.
	(a.syscall ? req.syscalls : req.tracepoints) = a.all && !a.syscall ? std::vector<std::string>{"*"} : names;
	req.all_syscalls = a.all;
	req.channel = a.channel;
	if (!a.filter.empty())
		req.filter = a.filter;
	if (a.capture_buffers != 0) {
		if (!a.syscall)
			throw CliError("--capture-buffers is for system calls: enable-event -k --syscall read,write "
			               "--capture-buffers[=BYTES]");
		req.capture_buffers = a.capture_buffers;
	}
	control::KernelEventsReply r;
	if (disable)
		r = request(control::KernelDisableEvent{req});
	else
		r = request(control::KernelEnableEvent{req});
	for (const std::string &e : r.events)
		printf("Kernel event %s %s in channel '%s' of session '%s'\n", e.c_str(),
		       disable ? "disabled" : "enabled", r.channel.c_str(), r.session.c_str());
	for (const std::string &n : r.not_recorded.value_or(std::vector<std::string>{}))
		printf("  %s\n", n.c_str());
	return 0;
}

int verb_enable_event(const Args &a, bool disable)
{
	one_domain(a);
	if (a.kernel)
		return kernel_event(a, disable);
	if (a.syscall)
		throw CliError("--syscall is for kernel events: add -k");
	if (!a.filter.empty()) {
		filter::Error e;
		if (!filter::parse(a.filter, &e))
			throw CliError("bad filter: " + filter::render_error(a.filter, e));
	}
	control::EventRules req;
	req.session = session_or_current(a.session);
	req.patterns = split_commas(a.patterns);
	req.all = a.all;
	req.channel = a.channel;
	if (!a.filter.empty())
		req.filter = a.filter;
	if (!a.exclude.empty()) {
		if (disable)
			throw CliError("--exclude is for enable-event");
		req.exclude = split_commas(a.exclude);
	}
	control::EventRulesReply r;
	if (disable)
		r = request(control::DisableEvent{req});
	else
		r = request(control::EnableEvent{req});
	for (const std::string &p : r.patterns)
		printf("Event %s %s in channel '%s' of session '%s'%s\n", p.c_str(), disable ? "disabled" : "enabled",
		       r.channel.c_str(), r.session.c_str(),
		       a.filter.empty() ? "" : (" with filter '" + a.filter + "'").c_str());
	check_refusals(r.refused.value_or(std::vector<control::ProgramRefusal>{}));
	return 0;
}

// add-context --list: each name and its domains, as "vpid    user".
void list_contexts()
{
	for (const event::ContextListing &c : event::context_listing()) {
		const char *domains = c.domains == (event::kUserDomain | event::kKernelDomain) ? "user, kernel"
		                      : c.domains == event::kKernelDomain                      ? "kernel"
		                                                                               : "user";
		printf("%-38.*s %s\n", static_cast<int>(c.name.size()), c.name.data(), domains);
	}
}

int verb_add_context(const Args &a)
{
	if (a.list_contexts) {
		if (!a.contexts.empty())
			throw CliError("add-context --list takes no -t: it lists the contexts -t takes");
		list_contexts();
		return 0;
	}
	if (a.contexts.empty())
		throw CliError("add-context needs -t NAME (one or more; `tracery add-context --list` lists them)");
	one_domain(a);
	if (a.kernel) {
		const control::KernelAddContextReply r =
			request(control::KernelAddContext{session_or_current(a.session), a.channel, a.contexts});
		for (const auto &t : a.contexts)
			printf("Kernel context %s added to session '%s'\n", t.c_str(), r.session.c_str());
		return 0;
	}
	const control::AddContextReply r =
		request(control::AddContext{session_or_current(a.session), a.channel, a.contexts});
	for (const auto &t : a.contexts)
		printf("Context %s added to session '%s'\n", t.c_str(), r.session.c_str());
	return 0;
}

int verb_start(const Args &a)
{
	const control::StartReply r = request(control::Start{named_session(a)});
	printf("Tracing started for session '%s' (%d running programs)\n", r.session.c_str(),
	       static_cast<int>(r.programs));
	for (const auto &n : r.not_traced)
		printf("  warning: channel %s does not trace program %d: %s\n", n.channel.value_or("").c_str(), n.pid,
		       n.reason.c_str());
	check_refusals(r.refused);
	return 0;
}

int verb_stop(const Args &a)
{
	const control::StopReply r = request(control::Stop{named_session(a)});
	printf("Tracing stopped for session '%s'\n", r.session.c_str());
	print_lost(r.lost);
	print_relay(r.relay, "  ");
	if (r.relay_error)
		printf("  warning: relay: %s\n", r.relay_error->c_str());
	print_quarantined(r.quarantined, "  ");
	if (r.kernel_error)
		printf("  warning: the kernel trace may be incomplete: %s\n", r.kernel_error->c_str());
	for (const int32_t pid : r.not_detached)
		printf("  warning: program %d did not detach in time; its last events may be incomplete\n", pid);
	std::string refused;
	for (const auto &c : r.lost)
		if (c.write_loss)
			refused += (refused.empty() ? "" : "; ") + ("channel " + c.channel + ": ") +
			           std::to_string(c.write_loss->events) + " events lost, " + c.write_loss->reason;
	if (r.relay && r.relay->packets_not_written)
		refused += (refused.empty() ? "" : "; ") + std::string("relay: ") +
		           std::to_string(r.relay->events_not_written) + " events not written by its disk";
	if (!refused.empty()) {
		fflush(stdout);
		throw CliError("the trace lost events because writes were refused (" + refused +
		               "): make room on that disk, or choose another --output or relay, and trace again");
	}
	return 0;
}

int verb_status(const Args &a)
{
	print_status(request(control::Status{named_session(a)}));
	return 0;
}

int verb_list(const Args &a)
{
	one_domain(a);
	if (a.syscall && !a.kernel)
		throw CliError("--syscall lists the kernel's system calls: add -k");
	if (a.kernel) {
		const control::KernelListReply r = request(control::KernelList{});
		if (!a.syscall) {
			printf("Kernel tracepoints (%zu):\n", r.tracepoints.size());
			for (const std::string &t : r.tracepoints)
				printf("      %s\n", t.c_str());
		}
		printf("%sKernel system calls (%zu; enable-event -k --syscall NAME):\n", a.syscall ? "" : "\n",
		       r.syscalls.size());
		for (const std::string &c : r.syscalls)
			printf("      %s\n", c.c_str());
		return 0;
	}
	if (a.userspace) {
		print_program_events(request(control::ListEvents{}));
		return 0;
	}
	if (!a.session.empty()) {
		print_status(request(control::Status{{a.session}}));
		return 0;
	}
	print_sessions(request(control::List{}));
	return 0;
}

int verb_track(const Args &a, bool untrack)
{
	one_domain(a);
	const control::Tracking req = tracking_request(a.tracking, a.kernel, untrack, session_or_current(a.session));
	const control::TrackingReply r =
		untrack ? control::TrackingReply(request(control::Untrack{req})) : request(control::Track{req});
	printf("Tracking of session '%s' changed\n", r.session.c_str());
	print_tracking(r.tracking, "  ");
	return 0;
}

namespace {

// The traces of the targets, and the stream files to check if reading them fails.
struct TraceInputs {
	std::vector<analysis::TraceInput> inputs;
	std::vector<std::string> check; // analysis::TraceScan::ours
};

enum class TargetKind { guess, session, path };

// The traces one TARGET names, after the warnings about it. Guessed, TARGET is
// a trace directory when it has a '/' or begins with '.' (no session name
// does), else a session name: a directory of the working directory named
// like a session never hides it (--path names that one).
void view_target(const std::string &target, TraceInputs &traces, TargetKind kind = TargetKind::guess)
{
	std::string path;
	std::optional<control::StatusReply> session; // when TARGET names one
	struct stat st;
	const bool exists = !target.empty() && stat(target.c_str(), &st) == 0;
	if (kind == TargetKind::guess)
		kind = target.find('/') != std::string::npos || target.starts_with('.') ? TargetKind::path
		                                                                        : TargetKind::session;
	if (kind == TargetKind::path) {
		if (!exists)
			throw CliError(
				"no trace directory '" + target +
				(errno == ENOENT ? "': it does not exist" : "': " + std::string(strerror(errno))) +
				"; give the directory of a trace, or a session name (see `tracery list`)");
		if (!S_ISDIR(st.st_mode))
			throw CliError(
				"'" + target +
				"' is not a directory: give the directory of a trace (the one holding its metadata "
				"file), or a session name");
		path = target;
	} else {
		try {
			session = request(control::Status{{session_or_current(target)}});
		} catch (const CliError &e) {
			if (!exists || !S_ISDIR(st.st_mode))
				throw;
			throw CliError(std::string(e.what()) + " (a name is a session: for the directory '" + target +
			               "', give ./" + target + " or --path " + target + ")");
		}
		path = session->output;
		if (path.empty() && session->relay)
			throw CliError("session '" + session->name + "' is sent to the relay at " +
			               session->relay->url + " and not written here: read the relay's copy (" +
			               session->relay->path +
			               " under its --output), or create the session with --local-copy");
	}
	analysis::TraceScan scan;
	try {
		scan = analysis::scan_traces(path);
	} catch (const std::system_error &e) {
		throw CliError(std::string(e.what()) + ": view the trace as a user who may read it");
	}
	if (scan.traces.empty()) {
		if (!session)
			throw CliError(
				"'" + path +
				"' is not a trace: neither it nor a directory below it has a metadata file; give the "
				"directory of a trace");
		const std::string &name = session->name;
		if (session->snapshot)
			throw CliError("session '" + name + "' has no snapshot in " + path +
			               " yet: record one with `tracery snapshot record -s " + name + "`");
		throw CliError("session '" + name + "' has no trace in " + path +
		               " yet (no metadata file): `tracery start " + name + "` it first");
	}
	if (session && session->state == "started") {
		// Its consumers write a sub-buffer once it is full: what is on disk
		// is the older part, stream files still growing (not checked).
		const std::string &name = session->name;
		if (session->snapshot)
			fprintf(stderr,
			        "tracery: warning: session '%s' is still running: its snapshots hold the events up to "
			        "when they were recorded; `tracery snapshot record -s %s` for the newest\n",
			        name.c_str(), name.c_str());
		else
			fprintf(stderr,
			        "tracery: warning: session '%s' is still running: its newest events are still in its "
			        "buffers and are not shown; run `tracery stop %s` first to see them all\n",
			        name.c_str(), name.c_str());
	} else {
		// An empty stream file holds no event: say which first. (A packet
		// cut short makes the whole trace unreadable: reading() names it.)
		for (const auto &w : scan.warnings)
			fprintf(stderr, "tracery: warning: %s\n", w.c_str());
		traces.check.insert(traces.check.end(), scan.ours.begin(), scan.ours.end());
	}
	for (const std::string &t : scan.traces) {
		std::string rel = std::filesystem::path(t).lexically_relative(path).string();
		if (rel == ".")
			rel.clear();
		traces.inputs.push_back({t, rel});
	}
}

// The traces of the targets (default: the current session's), after the
// warnings about them.
TraceInputs trace_inputs(const Args &a)
{
	TraceInputs traces;
	if (a.targets.empty() && a.target_sessions.empty() && a.target_paths.empty())
		view_target("", traces);
	for (const std::string &t : a.targets)
		view_target(t, traces);
	for (const std::string &t : a.target_sessions)
		view_target(t, traces, TargetKind::session);
	for (const std::string &t : a.target_paths)
		view_target(t, traces, TargetKind::path);
	return traces;
}

// read(inputs); when it fails (a damaged trace: the reader's error names the
// file and the offset), first a warning for each stream file that is not
// whole packets, with the fix, as before the reading when it began.
template <class Read>
int reading(const TraceInputs &traces, Read &&read)
{
	try {
		return read(traces.inputs);
	} catch (...) {
		for (const std::string &w : analysis::check_streams(traces.check))
			fprintf(stderr, "tracery: warning: %s\n", w.c_str());
		throw;
	}
}

// reading() of the traces' merged items for a product (stats, analyze,
// export, query): a damaged packet ends the walk where view stops, the
// product is made of the items before it (product(walk) returns the exit
// status), then the walk's error is thrown, as view's is.
template <class Product>
int walking(const TraceInputs &traces, const std::string &label, Product &&product,
            analysis::EventWalk::FieldsWanted fields = {}, analysis::EventWalk::Counted counted = {},
            analysis::EventWalk::Counted noted = {})
{
	return reading(traces, [&](const auto &inputs) {
		analysis::EventWalk walk(inputs, label, std::move(fields), std::move(counted), std::move(noted));
		const int status = product(walk);
		walk.throw_if_stopped();
		return status;
	});
}

// --symbols and --debug-info-dir, as the analysis takes them.
std::optional<analysis::SymbolOptions> symbol_options(const Args &a)
{
	if (!a.symbols) {
		if (!a.debug_info_dir.empty())
			throw CliError("--debug-info-dir goes with --symbols");
		return std::nullopt;
	}
	return analysis::SymbolOptions{a.debug_info_dir};
}

} // namespace

int verb_view(const Args &a)
{
	analysis::ViewOptions options;
	options.begin = a.begin;
	options.end = a.end;
	options.names = split_commas(a.names);
	options.fields = split_commas(a.fields);
	options.filter = a.filter;
	options.symbols = symbol_options(a);
	if (!a.live_url.empty()) {
		if (!a.targets.empty() || !a.begin.empty() || !a.end.empty())
			throw CliError("--live reads a relay's live session: give it no TARGET, --begin or --end");
		return view_live(a, options);
	}
	if (a.from_now || !a.view_key.empty() || !a.view_ca.empty())
		throw CliError("--from-now, --relay-key and --relay-ca go with --live");
	const TraceInputs traces = trace_inputs(a);
	fflush(stdout);
	// A reader that goes away (`tracery view | head`) ends the output
	// quietly: EPIPE instead of the signal.
	signal(SIGPIPE, SIG_IGN);
	// A damaged trace throws an error naming the file and the offset.
	return reading(traces, [&](const auto &inputs) {
		analysis::view_traces(inputs, options, STDOUT_FILENO, stderr);
		return 0;
	});
}

namespace {

// --bucket-width, --buckets, --min and --max; CliError for a duration that is not one.
analysis::HistogramOptions histogram_options(const Args &a)
{
	const auto duration = [](const std::string &text, const char *option) {
		const auto ns = parse_duration_ns(text, 1);
		if (!ns || *ns > static_cast<uint64_t>(INT64_MAX))
			throw CliError(std::string(option) +
			               " takes a duration: a whole number with ns, us, ms or s (bare: ns), "
			               "not '" +
			               text + "'");
		return static_cast<int64_t>(*ns);
	};
	analysis::HistogramOptions h;
	if (!a.bucket_width.empty()) {
		h.bucket_width = duration(a.bucket_width, "--bucket-width");
		if (h.bucket_width == 0)
			throw CliError("--bucket-width takes a duration above 0");
	}
	h.buckets = a.buckets;
	if (h.bucket_width && h.buckets)
		throw CliError("give --bucket-width or --buckets, not both");
	if (!a.hist_min.empty())
		h.min = duration(a.hist_min, "--min");
	if (!a.hist_max.empty())
		h.max = duration(a.hist_max, "--max");
	if (h.min && h.max && *h.min > *h.max)
		throw CliError("--min is above --max");
	return h;
}

} // namespace

int print_report(analysis::Report r, const Args &a)
{
	if (!a.sort.empty())
		analysis::sort_tables(r, a.sort);
	analysis::rebucket_histograms(r, histogram_options(a));
	if (a.top)
		analysis::keep_top(r, a.top);
	if (a.json)
		fputs(analysis::to_json(r).c_str(), stdout);
	else
		analysis::print_text(r, stdout, {.fixed_units = a.fixed_units});
	return 0;
}

namespace {

analysis::sql::OutputFormat query_format(const Args &a)
{
	return a.csv    ? analysis::sql::OutputFormat::csv
	       : a.json ? analysis::sql::OutputFormat::json
	                : analysis::sql::OutputFormat::text;
}

} // namespace

int verb_stats(const Args &a)
{
	const auto symbols = symbol_options(a);
	return walking(
		trace_inputs(a), "stats",
		[&](analysis::EventWalk &walk) {
			return print_report(analysis::trace_stats(walk, symbols, analysis::Narrowing(a.narrow)), a);
		},
		// narrowed, every event is looked at: none only counted
		a.narrow.narrows() ? analysis::EventWalk::FieldsWanted{}
		: symbols          ? analysis::stats_reads_fields_with_symbols
				   : analysis::stats_reads_fields,
		a.narrow.narrows() ? analysis::EventWalk::Counted{}
		: symbols          ? analysis::stats_counts_with_symbols
				   : analysis::stats_counts,
		analysis::stats_notes);
}

int verb_analyze(const Args &a, const std::string &kind)
{
	histogram_options(a); // its errors before the trace is read
	return walking(trace_inputs(a), "analyze " + kind, [&](analysis::EventWalk &walk) {
		const analysis::Narrowing narrowing(a.narrow);
		if (kind == "cputop")
			return print_report(analysis::analyze_cputop(walk, narrowing), a);
		if (kind == "syscalls")
			return print_report(analysis::analyze_syscalls(walk, narrowing), a);
		if (kind == "schedlat")
			return print_report(analysis::analyze_schedlat(walk, narrowing), a);
		if (kind == "irq")
			return print_report(analysis::analyze_irq(walk, narrowing), a);
		if (kind == "locks" || kind == "calls")
			return analyze_preload(walk, a, kind, symbol_options(a));
		return print_report(analysis::analyze_latency(walk, {a.span_begin, a.span_end, a.match}, narrowing), a);
	});
}

namespace {

// TARGET... LAST: the targets (none: the current session) and the last argument.
std::pair<Args, std::string> split_last(const Args &a)
{
	Args t = a;
	std::string last = t.targets.back();
	t.targets.pop_back();
	return {t, last};
}

} // namespace

namespace {

clickhouse::Timeouts clickhouse_timeouts(const Args &a)
{
	if (a.clickhouse_timeout_s < 1)
		throw CliError("--timeout: give a number of seconds, at least 1");
	clickhouse::Timeouts t;
	t.stall_s = a.clickhouse_timeout_s;
	return t;
}

// export --format clickhouse --url URL TRACE...: every argument a trace.
int export_clickhouse(const Args &a)
{
	if (!a.counters.empty() || a.symbols || a.force)
		throw CliError("--counter, --symbols and --force do not go with --format clickhouse");
	clickhouse::Client client(clickhouse::parse_url(a.clickhouse_url), clickhouse_timeouts(a));
	analysis::sql::ClickHouseOptions options{a.table_prefix, a.cluster, {}};
	for (const std::string &s : a.spans)
		options.spans.push_back(analysis::sql::parse_span(s));
	return walking(trace_inputs(a), "export clickhouse", [&](analysis::EventWalk &walk) {
		const analysis::sql::ClickHouseCounts n = analysis::sql::load_into_clickhouse(walk, client, options);
		fprintf(stderr, "tracery: %llu events (%llu rows in all) sent to %s, load = '%s'\n",
		        static_cast<unsigned long long>(n.events), static_cast<unsigned long long>(n.rows),
		        client.endpoint().shown.c_str(), n.load_id.c_str());
		return 0;
	});
}

} // namespace

int verb_export(const Args &a)
{
	if (a.format == "clickhouse") {
		if (a.clickhouse_url.empty())
			throw CliError("--format clickhouse needs --url http://HOST:8123/DATABASE");
		return export_clickhouse(a);
	}
	if (!a.clickhouse_url.empty() || !a.table_prefix.empty() || !a.cluster.empty())
		throw CliError("--url, --table-prefix and --cluster go with --format clickhouse");
	const ExportFormat *f = find_export_format(a.format);
	if (!f) {
		std::string names;
		for (const auto &e : export_formats()) {
			names += names.empty() ? "" : ", ";
			names += e.name;
		}
		throw CliError("unknown format '" + a.format + "' (--format): give one of " + names + ", clickhouse");
	}
	const auto split = split_last(a); // (not a structured binding: clang 14 does not let a lambda capture one)
	const Args &targets = split.first;
	const std::string &out = split.second;
	if (std::filesystem::is_directory(out))
		throw CliError("'" + out + "' is a directory: give the file to write last (tracery export --format " +
		               a.format + " TRACE... OUT)");
	return walking(trace_inputs(targets), std::string("export ") + f->name, [&](analysis::EventWalk &walk) {
		const analysis::ExportCounts n =
			f->write(walk, out, {a.spans, a.counters, a.force, symbol_options(a), a.focus});
		fprintf(stderr, "tracery: %llu events written to %s\n", static_cast<unsigned long long>(n.events),
		        out.c_str());
		if (n.discarded)
			fprintf(stderr, "tracery: the traces lost %llu events (not in the export)\n",
			        static_cast<unsigned long long>(n.discarded));
		return 0;
	});
}

int verb_query(const Args &a)
{
	const auto split = split_last(a); // (not a structured binding: the lambda below captures sql)
	const Args &targets = split.first;
	const std::string &sql = split.second;
	if (!a.clickhouse_url.empty()) {
		if (!targets.targets.empty() || !a.spans.empty() || a.symbols)
			throw CliError("query --clickhouse URL 'SQL' runs SQL on the server: give no TARGET, --span or "
			               "--symbols (load traces with export --format clickhouse)");
		clickhouse::Client client(clickhouse::parse_url(a.clickhouse_url), clickhouse_timeouts(a));
		analysis::sql::run_clickhouse_query(client, sql, query_format(a), stdout);
		return 0;
	}
	if (targets.targets.size() == 1 && analysis::sql::is_sqlite_file(targets.targets[0])) {
		if (a.symbols || !a.debug_info_dir.empty())
			throw CliError("--symbols names the addresses of traces as they are loaded: a database holds "
			               "the table symbols when exported with export --format sqlite --symbols");
		analysis::sql::Db db(targets.targets[0], SQLITE_OPEN_READONLY);
		analysis::sql::run_query(db, sql, query_format(a), stdout);
		return 0;
	}
	analysis::sql::Db db(""); // a temporary file SQLite removes, its pages cached in memory up to a bound
	return walking(trace_inputs(targets), "query", [&](analysis::EventWalk &walk) {
		analysis::sql::fresh_database_pragmas(db);
		analysis::sql::LoadOptions load;
		for (const std::string &s : a.spans)
			load.spans.push_back(analysis::sql::parse_span(s));
		load.symbols = symbol_options(a);
		analysis::sql::load_traces(walk, db, load);
		analysis::sql::run_query(db, sql, query_format(a), stdout);
		return 0;
	});
}

int verb_version()
{
	printf("%s\n", control::version_line("tracery", TRACERY_VERSION).c_str());
	return 0;
}

} // namespace tracery::cli
