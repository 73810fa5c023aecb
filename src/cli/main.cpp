// tracery: the command that controls tracing sessions through the session
// daemon (traceryd), with lttng's verbs. Argument parsing here, every verb's
// options: the one file of the command that includes CLI11, which costs
// 10 to 15 s of compiling in each file that does (under AddressSanitizer).
// What each verb does is in verbs.cpp.
#include "cli/analyze_preload.hpp"
#include "cli/client.hpp"
#include "cli/exec.hpp"
#include "cli/rotation.hpp"
#include "cli/save_load.hpp"
#include "cli/snapshot_verbs.hpp"
#include "cli/triggers.hpp"
#include "cli/verbs.hpp"

#include "base/parse_command_line.hpp"
#include "cli/export_formats.hpp"
#include "control/version.hpp"
#include "ctl/autostart.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <ctime>
#include <functional>
#include <map>

using namespace tracery::cli;

namespace {

// -s NAME: the session a verb acts on (default: the current one).
void session_option(CLI::App *c, Args &a)
{
	c->add_option("-s,--session", a.session, "Session (default: the current one)")->type_name("NAME");
}
// NAME or -s NAME, alike: the session a verb acts on (default: the current one).
void session_arguments(CLI::App *c, std::string &session, const char *help = "Session (default: the current one)")
{
	auto *named = c->add_option("-s,--session", session, help)->type_name("NAME");
	c->add_option("NAME", session, help)->excludes(named);
}
// The traces a reading verb reads: TARGETs (a name is a session unless it holds a '/' or begins
// with '.'), and -s/--path to say which a name is.
void trace_target_options(CLI::App *c, Args &a, const char *positional, const std::string &help)
{
	c->add_option(positional, a.targets, help);
	c->add_option("-s,--session", a.target_sessions, "A session whose trace to read (repeatable)")
		->type_name("NAME")
		->allow_extra_args(false);
	c->add_option("--path", a.target_paths, "A trace directory to read, whatever its name (repeatable)")
		->type_name("DIR")
		->allow_extra_args(false);
}
// create without a NAME: auto-YYYYMMDD-HHMMSS (local time), as lttng names it.
std::string auto_session_name()
{
	const time_t now = time(nullptr);
	tm local{};
	char name[32];
	strftime(name, sizeof name, "auto-%Y%m%d-%H%M%S", localtime_r(&now, &local));
	return name;
}
// tracery help VERB [SUBVERB]: the verb's --help, or an error for a verb there is not.
int print_verb_help(const CLI::App &app, const std::vector<std::string> &words)
{
	const CLI::App *verb = &app;
	std::string path = app.get_name();
	for (const std::string &w : words) {
		const auto found = verb->get_subcommands([&](const CLI::App *c) { return c->get_name() == w; });
		if (found.empty())
			throw CliError("no verb '" + w + "'" + (verb == &app ? "" : " in `" + path + "`") + "; see `" +
			               path + " --help`");
		path += " " + w;
		verb = found.front();
	}
	const std::string parents = path.substr(0, path.rfind(' ') == std::string::npos ? 0 : path.rfind(' '));
	// (app.help() would show the help of the verb parsed: help's own)
	fputs(verb == &app ? app.get_formatter()->make_help(&app, path, CLI::AppFormatMode::Normal).c_str()
	                   : verb->help(parents).c_str(),
	      stdout);
	return 0;
}
void domain_flags(CLI::App *c, Args &a)
{
	c->add_flag("-u,--userspace", a.userspace, "User space domain (the default)");
	c->add_flag("-k,--kernel", a.kernel, "Kernel domain (tracefs; needs root or the daemon's tracing group)");
}
// --symbols [--debug-info-dir DIR]: addresses named from the traces' state dumps (docs/symbols.md).
void symbols_options(CLI::App *c, Args &a)
{
	c->add_flag("--symbols", a.symbols,
	            "Name the addresses of events (ip context, function entry and exit) as binary+offset, "
	            "function+offset and file:line, from the state dump of loaded objects, their build-ids and "
	            "DWARF (as babeltrace2 --debug-info)");
	c->add_option("--debug-info-dir", a.debug_info_dir,
	              "With --symbols: separate debug files under DIR (DIR/.build-id/xx/rest.debug, and for "
	              "debug links DIR/PATH) instead of /usr/lib/debug");
}

// The options that narrow stats and analyses (lttng-analyses' names), order
// and cut their tables (--sort: `sort_default` the default) and print them;
// `times`: --begin/--end (analyze latency: --from/--to, its --begin/--end
// naming its events).
void report_options(CLI::App *c, Args &a, bool times, const std::string &sort_default)
{
	const std::string time_help = "Only what happens at or after this time (as `view --begin`: HH:MM:SS[.N], "
				      "'YYYY-MM-DD HH:MM:SS[.N]', SECONDS.N or NS from the epoch)";
	c->add_option(times ? "--begin" : "--from", a.narrow.begin,
	              times ? time_help : time_help + "; the spans that end then");
	c->add_option(times ? "--end" : "--to", a.narrow.end,
	              std::string("Only what happens at or before this time (as ") + (times ? "--begin)" : "--from)"));
	// each a list of one argument (PID,PID...), never the targets after it
	c->add_option("--pid", a.narrow.pids, "Only these processes (PID,...)")
		->delimiter(',')
		->allow_extra_args(false);
	c->add_option("--tid", a.narrow.tids, "Only these threads (TID,...)")->delimiter(',')->allow_extra_args(false);
	c->add_option("--procname", a.narrow.procnames, "Only the processes and threads of these names (NAME,...)")
		->delimiter(',')
		->allow_extra_args(false);
	c->add_option("--cpu", a.narrow.cpus, "Only what happens on these CPUs (CPU,...)")
		->delimiter(',')
		->allow_extra_args(false);
	c->add_option("--sort", a.sort,
	              "Order each table's rows by this column, largest first (text: A to Z): name, count, total, "
	              "min, mean, max, stdev, p50, p90, p99 or a column of --json (default: " +
	                      sort_default + ")");
	c->add_option("--top", a.top,
	              "Only the first N rows of each table (in --sort's order, else the largest by the table's main "
	              "column; a note names it)")
		->check(CLI::PositiveNumber);
	c->add_flag("--fixed-units", a.fixed_units,
	            "Text: every duration in µs with 3 decimals (default: each in ns, µs, ms or s as fits it; "
	            "--json: always ns)");
}

// The histograms' buckets (lttng-analyses' linear buckets).
void histogram_options(CLI::App *c, Args &a)
{
	c->add_option("--bucket-width", a.bucket_width,
	              "Histogram: linear buckets this wide (e.g. 50us, 2ms; bare: ns) from --min (default: log2 "
	              "buckets)");
	c->add_option("--buckets", a.buckets, "Histogram: N linear buckets from --min to --max")
		->check(CLI::Range(1, 10000));
	c->add_option("--min", a.hist_min,
	              "Histogram: linear buckets from this duration (default: the smallest value)");
	c->add_option("--max", a.hist_max, "Histogram: linear buckets to this duration (default: the largest value)");
}

// Adds the options of track (untrack: no --follow-children) to `verb`.
void add_tracking_options(CLI::App *verb, TrackingArgs &args, bool untrack)
{
	for (const Attribute &a : kAttributes) {
		const std::string help = std::string(a.kernel_only ? "With -k: " : "") + a.title +
		                         (a.kind == Attribute::process
		                                  ? ", comma-separated"
		                                  : (a.kind == Attribute::user ? ", or user names, comma-separated"
		                                                               : ", or group names, comma-separated")) +
		                         (a.name[0] == 'v' ? " (as the process's own namespaces see them)" : "") +
		                         "; bare, with --all";
		const char *name = a.name;
		verb->add_option_function<std::vector<std::string>>(
			    // -p as lttng's short option
			    std::string(a.kind == Attribute::process && a.kernel_only ? "-p,--" : "--") + a.name,
			    [&args, name](const std::vector<std::string> &values) {
				    args.given.emplace_back(name, values);
			    },
			    help)
			->expected(0, 1)
			->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
			->type_name(a.kind == Attribute::process ? "ID[,ID...]" : "ID|NAME[,...]");
	}
	verb->add_flag("-a,--all", args.all,
	               untrack ? "No value of the bare attributes given: no process is traced (until tracked again)"
	                       : "Every value of the bare attributes given: no longer narrowed by them");
	if (!untrack) {
		// Two flags rather than CLI11's "!--no-..." negation, whose help shows a stray "{false}".
		verb->add_flag_function(
			"--follow-children", [&args](int64_t) { args.follow_children = true; },
			"With -k --pid: their descendants too (the default)");
		verb->add_flag_function(
			"--no-follow-children", [&args](int64_t) { args.follow_children = false; },
			"With -k --pid: only them, not their descendants");
	}
}

// -s, --preload, -o and COMMAND ARGS (everything after the first argument that is not an option, or after --).
void add_exec_options(CLI::App *exec, ExecArgs &a)
{
	exec->add_option("-s,--session", a.session,
	                 "Trace in this existing session, as it is configured (default: a temporary session "
	                 "that records the helpers' events with the vpid, vtid, procname and ip contexts)");
	exec->add_option("--preload", a.preload,
	                 "The helpers to preload, comma-separated: libc, pthread, func, func-fast, dl (default: "
	                 "libc,pthread,func,dl), or none (then the temporary session records every user event)");
	exec->add_option("-o,--output", a.output,
	                 "The temporary session's trace directory (default: ~/tracery-traces/exec-PID-TIME)");
	exec->add_option("COMMAND", a.command, "The command and its arguments (after -- when they begin with -)")
		->required();
	// what follows the command is its own, options included
	exec->positionals_at_end();
}

// The options of `analyze locks` (kind "locks") or `analyze calls` ("calls") on their subcommand.
void add_preload_analysis_options(CLI::App *analysis, Args &a, const std::string &kind)
{
	if (kind == "locks") {
		analysis->add_option("--contended", a.contended_ns,
		                     "A wait at least this long (ns) makes an acquisition contended (default 1000); "
		                     "so does a lock held by another thread when requested")
			->check(CLI::NonNegativeNumber);
		analysis->add_option("--longest", a.longest, "How many of the longest waits to list (default 10)")
			->check(CLI::Range(0, 100000));
		return;
	}
	auto *tree = analysis->add_flag("--tree", a.tree,
	                                "The call tree per process (text: drawn as `uftrace graph` does; with --json: "
	                                "a table of its nodes with their depth)");
	auto *folded = analysis->add_flag("--folded", a.folded,
	                                  "Folded stacks for flame graphs (flamegraph.pl, speedscope): a line "
	                                  "'f;g;h VALUE' per stack, its self time in ns (--weight calls: its calls)");
	folded->excludes(tree);
	analysis->add_option("--weight", a.weight, "With --folded: time (default) or calls")
		->check(CLI::IsMember({"time", "calls"}));
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"tracery: control tracing sessions of instrumented programs through the session daemon "
	             "(one is started for you when none answers).",
	             "tracery"};
	app.set_version_flag("--version", tracery::control::version_line("tracery", TRACERY_VERSION),
	                     "Print the version and exit");
	app.require_subcommand(1);
	Args a;
	std::function<int()> run;
	auto verb = [&](const char *name, const char *help, std::function<int()> fn) {
		CLI::App *c = app.add_subcommand(name, help);
		c->callback([&run, fn] { run = fn; });
		return c;
	};

	CLI::Option *live = nullptr;
	auto *create = verb("create", "Create a tracing session and make it the current one", [&] {
		a.live_given = live->count() > 0;
		if (a.session.empty())
			a.session = auto_session_name();
		return verb_create(a);
	});
	create->add_option("NAME", a.session, "Session name (default: auto-YYYYMMDD-HHMMSS)");
	create->add_option("-o,--output", a.output, "Trace directory (default: ~/tracery-traces/NAME-DATE)");
	create->add_flag("--snapshot", a.snapshot,
	                 "Snapshot mode: buffers are only written by `tracery snapshot record`");
	create->add_option("--set-url", a.url,
	                   "Send the traces to tracery-relayd at net://HOST[:PORT] (default port 5342), or over a "
	                   "serial line at serial:///dev/DEVICE?baud=N, instead of writing them here");
	create->add_flag("--local-copy", a.local_copy,
	                 "With --set-url: also write the traces here (to --output or the default directory)");
	create->add_option("--relay-key", a.relay_key,
	                   "With --set-url, or --snapshot (its snapshots sent to a relay, also by `snapshot "
	                   "add-output` and `snapshot record`): authenticate to the relay with the key of FILE (one "
	                   "line `NAME SECRET`, the secret in hex, as in the relay's --auth-keys; mode 600)");
	create->add_option("--relay-ca", a.relay_ca,
	                   "With --set-url, or --snapshot: TLS to the relay, its certificate signed by a CA of FILE "
	                   "(PEM) and naming the URL's host");
	live = create->add_option(
			     "--live", a.live,
			     "Live session: partial sub-buffers sent every PERIOD (default 1s; e.g. --live=500ms), "
			     "idle streams announced; implies --set-url net://localhost unless given")
	               ->expected(0, 1);
	create->add_flag("--public-live", a.public_live,
	                 "With --live: list and serve the session on the relay's plain lttng-live port too, where "
	                 "anyone who reaches that port reads it (babeltrace2 net://, no authentication); without, "
	                 "only viewers authenticated as the session's sender see it");

	auto *destroy = verb("destroy", "Stop and destroy a session (its trace stays on disk)",
	                     [&] { return verb_destroy(a); });
	session_arguments(destroy, a.session);
	destroy->add_flag("-a,--all", a.all, "Destroy all your sessions");
	destroy->add_flag("--no-wait", a.no_wait,
	                  "Return at once, while the daemon stops the session and completes its trace");

	auto *chan = verb("enable-channel", "Add a channel to a session (before it starts)",
	                  [&] { return verb_enable_channel(a); });
	chan->add_option("NAME", a.channel, "Channel name")->required();
	domain_flags(chan, a);
	session_option(chan, a);
	chan->add_option("--subbuf-size", a.subbuf_size,
	                 "Sub-buffer size, a power of two >= 4096 (k/M suffixes; default 512k); with -k, the kernel "
	                 "buffer of each CPU is --subbuf-size x --num-subbuf (default: the kernel's)");
	chan->add_option("--num-subbuf", a.num_subbuf, "Sub-buffers per CPU, a power of two >= 2 (default 4)");
	chan->add_flag("--overwrite", a.overwrite,
	               "Overwrite the oldest data when full (flight recorder) instead of discarding new events");
	chan->add_flag("--buffers-pid", a.buffers_pid, "One buffer per program instead of one per user");
	chan->add_flag("--buffers-uid", a.buffers_uid, "One buffer per user, shared by its programs (the default)");
	chan->add_option("--blocking-timeout", a.blocking_timeout,
	                 "User space, discard mode: an event that finds the buffer full waits for space up to this "
	                 "long instead of being dropped: 0 (never, the default), inf, or a duration (500us, 20ms, "
	                 "2s; no unit: us). Never in a signal handler or libtracery's own threads");
	chan->add_option("--tracefile-size", a.tracefile_size,
	                 "Write each stream in files of at most SIZE (k/M/G), CHANNEL_CPU_0, CHANNEL_CPU_1, ...; at "
	                 "least the sub-buffer size; local traces only");
	chan->add_option("--tracefile-count", a.tracefile_count,
	                 "With --tracefile-size: keep only the newest N files of each stream (the oldest is deleted), "
	                 "so that a stream takes at most N x SIZE on disk");
	chan->add_option("--switch-timer", a.switch_timer,
	                 "User space: every PERIOD, close each sub-buffer that holds events, so that a slow stream's "
	                 "events reach the trace, the relay and live viewers within PERIOD (10ms to 24h; no unit: "
	                 "us). The kernel's readers write what they read whenever a CPU's buffer is empty");
	chan->add_option("--monitor-timer", a.monitor_timer,
	                 "User space: sample the buffers' usage every PERIOD for the triggers on it and on the "
	                 "session's consumed size (default 1s; 0: never)");

	auto *dchan = verb("disable-channel", "Stop recording a channel's events (enable-channel NAME again resumes)",
	                   [&] { return verb_disable_channel(a); });
	dchan->add_option("NAME", a.channel, "Channel name")->required();
	domain_flags(dchan, a);
	session_option(dchan, a);

	for (bool disable : {false, true}) {
		auto *ev = verb(disable ? "disable-event" : "enable-event",
		                disable ? "Disable events in a channel"
		                        : "Enable events (PROVIDER:NAME, * wildcards) in a channel",
		                [&a, disable] { return verb_enable_event(a, disable); });
		ev->add_option("PATTERN", a.patterns,
		               "Event patterns, comma-separated (e.g. 'app:*,hello:greeting'); with -k, tracepoints "
		               "(sched_switch, 'sched_*', 'irq:*') or, with --syscall, system calls");
		ev->add_flag(
			"-a,--all", a.all,
			"All events (with -k: every tracepoint and system call; with -k --syscall: every system call)");
		ev->add_flag("--syscall", a.syscall, "With -k: the names are system calls (entry and exit)");
		if (!disable) {
			ev->add_option(
				"--userspace-probe", a.userspace_probe,
				"With -k: a dynamic probe named by the one NAME given: elf:PATH:SYMBOL[+OFFSET], "
				"elf:PATH:SYMBOL%return (its return value) or sdt:PATH:PROVIDER:NAME (a <sys/sdt.h> "
				"probe point); arguments by name from DWARF, or --args");
			ev->add_option("--args", a.probe_args,
			               "With --userspace-probe: what to record, 'name=FETCH:TYPE,...' (e.g. "
			               "'fd=%di:s32,path=+0(%si):string'; registers %di %si %dx %cx %r8 %r9 ..., types "
			               "s8..s64 u8..u64 x8..x64 string)");
			ev->add_flag(
				"--capture-buffers{256}", a.capture_buffers,
				"With -k --syscall: also record the first BYTES (default 256, at most 4096) of the "
				"buffers of write, pwrite64, sendto, writev (its first iovec) at the entry and of "
				"read, pread64, recvfrom at the exit, as 'buf_data' (a Tracery extension; set for "
				"the session before its first start)");
		}
		ev->add_option("-c,--channel", a.channel, "Channel (default: channel0)");
		domain_flags(ev, a);
		session_option(ev, a);
		if (!disable)
			ev->add_option("-x,--exclude", a.exclude,
			               "With a wildcard pattern (user space): events it does not enable, "
			               "comma-separated PROVIDER:NAME (* wildcards), e.g. -x 'app:debug_*'")
				->allow_extra_args(false);
		if (!disable)
			ev->add_option(
				"--filter", a.filter,
				"Record only the events for which EXPR is true, e.g. 'size > 4096 && $ctx.procname == \"db*\"' (see docs/filters.md); with -k the kernel evaluates it: a field compared with a constant, &&, ||, !");
	}

	auto *ctx = verb("add-context", "Record context fields with every event of a channel",
	                 [&] { return verb_add_context(a); });
	ctx->add_option("-t,--type", a.contexts,
	                "A context of `--list`, e.g. vpid, vtid, procname, perf:thread:page-fault; with -k: "
	                "tid, pid, ppid, prio, procname or a namespace's (repeatable)");
	ctx->add_flag("--list", a.list_contexts, "List every context and the domains that have it");
	ctx->add_option("-c,--channel", a.channel, "Channel (default: every channel)");
	domain_flags(ctx, a);
	session_option(ctx, a);

	for (auto [name, help, fn] :
	     {std::tuple{"start", "Start tracing", &verb_start},
	      std::tuple{"stop", "Stop tracing; the trace is complete on disk", &verb_stop},
	      std::tuple{"status", "Show a session: channels, events, lost events", &verb_status}}) {
		session_arguments(verb(name, help, [&a, f = fn] { return f(a); }), a.session);
	}

	auto *list = verb(
		"list",
		"List sessions, a session's details, (-u) the events of running programs, or (-k) the kernel's tracepoints and system calls",
		[&] { return verb_list(a); });
	session_arguments(list, a.session, "Show this session");
	list->add_flag("-u,--userspace", a.userspace, "Events of the running instrumented programs, with their pids");
	list->add_flag("-k,--kernel", a.kernel, "The kernel's tracepoints and system calls");
	list->add_flag("--syscall", a.syscall, "With -k: only the system calls");

	for (bool untrack : {false, true}) {
		auto *t = verb(untrack ? "untrack" : "track",
		               untrack ? "Remove processes from those a session traces (--all: none), by process "
		                         "attribute; while tracing too"
		                       : "Narrow a session's events to processes by attribute (every process until "
		                         "then; --all: every one again; several attributes: all must match); while "
		                         "tracing too, processes that change their ids joining or leaving (-k: within "
		                         "milliseconds)",
		               [&a, untrack] { return verb_track(a, untrack); });
		domain_flags(t, a);
		session_option(t, a);
		add_tracking_options(t, a.tracking, untrack);
	}

	RotationArgs rot;
	auto *rotate = verb("rotate",
	                    "Archive the current trace chunk of a session as OUTPUT/archives/BEGIN-END-ID, a trace of "
	                    "its own, and go on in a new one",
	                    [&] { return verb_rotate(rot); });
	session_arguments(rotate, rot.session);
	rotate->add_flag("-n,--no-wait", rot.no_wait, "Return at once, without waiting for the archive");
	auto *rotation =
		verb("enable-rotation", "Rotate a session by itself, on a timer and/or once its chunk holds a size",
	             [&] { return verb_enable_rotation(rot); });
	session_arguments(rotation, rot.session);
	rotation->add_option("--timer", rot.timer, "Rotate at least every PERIOD (us, ms, s, m, h; a bare number: us)");
	rotation->add_option("--size", rot.size, "Rotate once the current chunk holds SIZE bytes (k, M, G suffixes)");
	rotation = verb("disable-rotation", "Stop rotating a session by itself (without options: timer and size)",
	                [&] { return verb_disable_rotation(rot); });
	session_arguments(rotation, rot.session);
	rotation->add_flag("--timer", rot.timer_only, "Stop the timer only");
	rotation->add_flag("--size", rot.size_only, "Stop the size schedule only");
	session_arguments(verb("clear",
	                       "Drop what a session recorded so far, on disk (its current chunk) and in its buffers",
	                       [&] { return verb_clear(rot); }),
	                  rot.session);
	SaveLoadArgs sl;
	auto *save = verb("save", "Save sessions to files (NAME.json) that `tracery load` makes them again from",
	                  [&] { return verb_save(sl); });
	session_arguments(save, sl.session);
	save->add_flag("-a,--all", sl.all, "Every session of yours");
	save->add_option("-o,--output-path", sl.path,
	                 "Directory of the files (default: ~/.tracery/sessions; root: /etc/tracery/sessions; "
	                 "$TRACERY_SESSIONS_DIR when set)");
	save->add_flag("-f,--force", sl.force, "Save over an existing file");
	auto *load = verb("load",
	                  "Make sessions again from their files (docs/session-files.md); a session saved while "
	                  "tracing is started",
	                  [&] { return verb_load(sl); });
	session_arguments(load, sl.session, "Session to load (default: every session of the files)");
	load->add_flag("-a,--all", sl.all, "Every session of the files (the default)");
	load->add_option("-i,--input-path", sl.path,
	                 "A session file, or a directory of them (default: ~/.tracery/sessions then "
	                 "/etc/tracery/sessions; $TRACERY_SESSIONS_DIR when set)");
	load->add_option("--override-url", sl.override_url,
	                 "Trace to this directory (DIR or file://DIR) or relay (net://HOST[:PORT]) instead");
	load->add_option("--override-name", sl.override_name, "Name the loaded session so instead");
	load->add_flag("-f,--force", sl.force, "Replace an existing session of the same name");
	auto *set_session = verb("set-session", "Make a session the current one (used by verbs given no session)", [&] {
		if (sl.session.empty())
			throw CliError("set-session needs the session: NAME or -s NAME");
		return verb_set_session(sl.session);
	});
	session_arguments(set_session, sl.session, "Session");

	auto *snap = app.add_subcommand("snapshot", "Snapshot sessions");
	snap->require_subcommand(1);
	SnapshotArgs sa;
	auto snapshot_verb = [&](const char *name, const char *help, int (*fn)(const SnapshotArgs &)) {
		CLI::App *c = snap->add_subcommand(name, help);
		c->callback([&run, &sa, fn] { run = [&sa, fn] { return fn(sa); }; });
		c->add_option("-s,--session", sa.session, "Session (default: the current one)");
		return c;
	};
	auto *rec = snapshot_verb(
		"record",
		"Write the newest data of a snapshot session's buffers to its output (NAME-N-DATE in its snapshot "
		"output's directory, else snapshot-N-DATE in its output directory)",
		&verb_snapshot_record);
	auto *add_output =
		snapshot_verb("add-output", "Set where a snapshot session's snapshots go (one output per session)",
	                      &verb_snapshot_add_output);
	for (CLI::App *c : {rec, add_output}) {
		c->add_option(
			"-n,--name", sa.name,
			"Name of the snapshots (their directories: NAME-N-DATE; default: the output's, snapshot)");
		c->add_option(
			"-m,--max-size", sa.max_size,
			"At most this many bytes of the user space buffers, the newest (k, M, G; shared equally by "
			"the buffers' streams, at least one sub-buffer each)");
	}
	rec->add_option(
		"URL", sa.url,
		"Write this snapshot to DIR (or file://DIR), or send it to a relay (net://HOST[:PORT]), instead");
	add_output
		->add_option("URL", sa.url, "The snapshots' directory (DIR or file://DIR) or relay (net://HOST[:PORT])")
		->required();
	snapshot_verb("list-output", "Show a snapshot session's output", &verb_snapshot_list_output);
	snapshot_verb("del-output", "Remove a snapshot session's output (its snapshots go to its output directory)",
	              &verb_snapshot_del_output)
		->add_option("ID", sa.url, "The output's id (list-output) or name")
		->required();

	auto *view = verb("view",
	                  "Print the events of sessions' traces or trace directories, merged in time order, as "
	                  "babeltrace2 prints them",
	                  [&] { return verb_view(a); });
	const char *targets_help =
		"Session names or trace directories (default: the current session): a name with a '/', or "
		"beginning with '.', is a directory; a directory may hold several traces (ust/, kernel/, snapshots)";
	trace_target_options(view, a, "TARGET", targets_help);
	view->add_option("--begin", a.begin,
	                 "Only events at or after this time: HH:MM:SS[.N] (local time, on the day of the first "
	                 "event), 'YYYY-MM-DD HH:MM:SS[.N]', SECONDS.N or NS from the epoch");
	view->add_option("--end", a.end, "Only events at or before this time (as --begin)");
	// each a list of one argument (GLOB,GLOB...), never the targets after it
	view->add_option("--names", a.names, "Only events whose name matches one of these globs ('sched_*,app:*')")
		->delimiter(',')
		->allow_extra_args(false);
	view->add_option("--fields", a.fields,
	                 "Only these fields of each scope (packet context, contexts, payload), e.g. 'cpu_id,msg'")
		->delimiter(',')
		->allow_extra_args(false);
	view->add_option("--filter", a.filter,
	                 "Only events for which EXPR is true, over payload fields and $ctx.vpid, $ctx.vtid, "
	                 "$ctx.procname, $ctx.cpu_id, e.g. 'size > 4096 && $ctx.procname == \"db*\"' (see "
	                 "docs/filters.md)");
	view->add_option("--live", a.live_url,
	                 "Print the events of a live session as they come from a relay: "
	                 "net://HOST[:PORT]/host/HOSTNAME/SESSION (port 5344 by default), until it ends");
	symbols_options(view, a);
	view->add_flag("--from-now", a.from_now, "With --live: only what the session sends from now on");
	view->add_option("--relay-key", a.view_key,
	                 "With --live: authenticate with the key of FILE (the key a sender gives, `NAME SECRET`, "
	                 "mode 600) on the relay's authenticated viewer port (5345 by default), which shows the "
	                 "live sessions sent with that key's name; without it, the plain port shows the public ones");
	view->add_option("--relay-ca", a.view_ca,
	                 "With --live --relay-key: TLS, the relay's certificate checked with the CAs of FILE (PEM) "
	                 "and the URL's host");

	auto *stats = verb("stats",
	                   "Count the events of traces: per event name (count, rate, first and last time, bytes), per "
	                   "process, per CPU, and the events each stream lost",
	                   [&] { return verb_stats(a); });
	trace_target_options(stats, a, "TARGET", targets_help);
	stats->add_flag("--json", a.json, "One JSON object on stdout, for scripts");
	symbols_options(stats, a);
	report_options(stats, a, true, "each table's: count");

	auto *analyze = app.add_subcommand("analyze", "Analyses of traces: CPU time, system calls, wake-up latency, "
	                                              "interrupts (kernel traces), spans between user events");
	analyze->require_subcommand(1);
	for (auto [kind, help] :
	     {std::pair{"cputop", "CPU time per thread, process and CPU (kernel trace with sched_switch)"},
	      std::pair{"syscalls", "Count and latency of system calls per call, process and thread "
	                            "(kernel trace with syscalls and sched_switch)"},
	      std::pair{"schedlat", "Wake-up latency: from sched_waking/sched_wakeup to "
	                            "sched_switch in (kernel trace)"},
	      std::pair{"irq", "Duration of IRQ handlers and soft IRQs (kernel trace with "
	                       "irq_handler_*, softirq_*)"},
	      std::pair{"latency", "Time from a begin event to an end event of the same thread "
	                           "(vtid context) or with the same value of a field (--match)"},
	      std::pair{"locks", "Mutex and rwlock waits and holds, per lock and call site (the pthread "
	                         "preload helper's lttng_ust_pthread:* events)"},
	      std::pair{"calls", "Calls, inclusive and self time per function, the call tree, folded stacks "
	                         "(-finstrument-functions code under the func preload helper)"}}) {
		auto *k = analyze->add_subcommand(kind, help);
		k->callback(
			[&run, &a, kind = std::string(kind)] { run = [&a, kind] { return verb_analyze(a, kind); }; });
		trace_target_options(k, a, "TARGET", targets_help);
		k->add_flag("--json", a.json, "One JSON object on stdout, for scripts");
		static const std::map<std::string, std::string> sort_defaults = {
			{"cputop", "cpu_ns (CPU time)"},
			{"syscalls", "count"},
			{"schedlat", "max"},
			{"irq", "the IRQ line, the vector"},
			{"latency", "the process"},
			{"locks", "wait_total, then acquisitions"},
			{"calls", "inclusive_total"}};
		report_options(k, a, std::string(kind) != "latency", sort_defaults.at(kind));
		if (std::string(kind) == "syscalls" || std::string(kind) == "schedlat" || std::string(kind) == "irq" ||
		    std::string(kind) == "latency")
			histogram_options(k, a);
		if (std::string(kind) == "latency") {
			k->add_option("--begin", a.span_begin, "The event that opens a span, e.g. 'app:request_begin'")
				->required();
			k->add_option("--end", a.span_end, "The event that closes it, e.g. 'app:request_end'")
				->required();
			k->add_option(
				"--match", a.match,
				"Pair a begin and an end by an equal value of this field of both (e.g. 'id') instead "
				"of by thread");
		}
		if (std::string(kind) == "locks" || std::string(kind) == "calls") {
			add_preload_analysis_options(k, a, kind);
			symbols_options(k, a);
		}
	}

	std::string formats_help = "The format:";
	for (const auto &f : tracery::cli::export_formats()) {
		formats_help += "\n  ";
		formats_help += f.name;
		formats_help += ": ";
		formats_help += f.help;
	}
	formats_help +=
		"\n  clickhouse: ClickHouse tables over its HTTP interface (--url; TARGET... only, no OUT): the "
		"sqlite format's rows with host, session and load columns, one events table (docs/sql.md)";
	auto *exp = verb("export",
	                 "Write traces to another format: an SQLite database, a Perfetto trace (ui.perfetto.dev), "
	                 "Chrome's trace event JSON, a timeline in HTML",
	                 [&] { return verb_export(a); });
	exp->add_option("--format", a.format, formats_help)->required();
	trace_target_options(exp, a, "ARGS",
	                     std::string("TARGET... OUT: the traces, then the file to write; TARGET: ") + targets_help);
	exp->get_option("ARGS")->required();
	symbols_options(exp, a);
	exp->add_option("--span", a.spans,
	                "User spans: BEGIN,END[,FIELD], the events that open and close one, paired per thread "
	                "(vtid) or, in the sqlite format, by an equal FIELD of both (repeatable)")
		->allow_extra_args(false);
	exp->add_option(
		   "--counter", a.counters,
		   "perfetto, chrome-json, html: a field drawn as a counter track, EVENT:FIELD, e.g. 'app:tick:depth' "
		   "(repeatable)")
		->allow_extra_args(false);
	exp->add_option("--focus", a.focus,
	                "html: a process shown first (after those with user events) and in the view that fits, by "
	                "pid or name (repeatable)")
		->allow_extra_args(false);
	exp->add_flag("--force", a.force, "Replace OUT if it exists");
	exp->add_option("--url", a.clickhouse_url, "clickhouse: the server and database, http://HOST:8123/DATABASE");
	exp->add_option("--table-prefix", a.table_prefix, "clickhouse: put before each table's name");
	exp->add_option("--cluster", a.cluster,
	                "clickhouse: a cluster of the server's remote_servers: MergeTree tables NAME_local loaded "
	                "here, Distributed tables over the cluster's (docs/sql.md)");
	exp->add_option(
		"--timeout", a.clickhouse_timeout_s,
		"clickhouse: give up when the server takes or sends nothing for this many seconds (default 60)");

	auto *query = verb("query",
	                   "Run SQL on traces (loaded into a temporary database) or on a database `tracery export "
	                   "--format sqlite` wrote; the schema is in docs/sql.md",
	                   [&] { return verb_query(a); });
	trace_target_options(query, a, "ARGS",
	                     std::string("TARGET... SQL: the traces or one database file, then the SQL statements, "
	                                 "e.g. 'SELECT name, count(*) FROM events GROUP BY name'; TARGET: ") +
	                             targets_help);
	query->get_option("ARGS")->required();
	query->add_option("--span", a.spans, "User spans for the slices table, as with export (repeatable)")
		->allow_extra_args(false);
	query->add_option("--clickhouse", a.clickhouse_url,
	                  "Run the SQL on a ClickHouse server, http://HOST:8123/DATABASE (no TARGET)");
	query->add_option("--timeout", a.clickhouse_timeout_s,
	                  "--clickhouse: give up when the server sends nothing for this many seconds (default 60)");
	auto *csv = query->add_flag("--csv", a.csv, "CSV output (a header line, RFC 4180)");
	query->add_flag("--json", a.json, "JSON output: per statement an array of objects")->excludes(csv);
	symbols_options(query, a);

	ExecArgs exec_args;
	auto *exec = verb("exec",
	                  "Run a command with the preload helpers, traced: in a temporary session (created, "
	                  "started, stopped, destroyed around it) or in an existing one (-s); exits with its status",
	                  [&] { return verb_exec(exec_args); });
	add_exec_options(exec, exec_args);

	std::vector<std::string> trigger_args;
	// Its arguments are read in order, as lttng reads them (cli/triggers.cpp): CLI11 hands them over as extras.
	auto *add_trigger = app.add_subcommand(
		"add-trigger",
		"Add a trigger, as lttng's: --condition=event-rule-matches --type=user --name=PATTERN "
		"[--filter=EXPR] [--capture=FIELD]... --action=ACTION [SESSION] [--rate-policy=every:N|once-after:N] "
		"[--action=...]... [--id=NAME]; ACTION: notify, start-session, stop-session, snapshot-session, "
		"rotate-session (SESSION after each but notify); a --name before --condition names the trigger; "
		"conditions on samples: channel-buffer-usage-ge|le --session=S --channel=C --domain=user "
		"--threshold-ratio=R|--threshold-size=SIZE, session-consumed-size-ge --session=S "
		"--threshold-size=SIZE (docs/triggers.md)");
	add_trigger->allow_extras();
	add_trigger->callback([&] {
		trigger_args = add_trigger->remaining();
		run = [&] { return verb_add_trigger(trigger_args); };
	});
	verb("list-triggers", "List your triggers (root: every user's), their actions and counts",
	     [] { return verb_list_triggers(); });
	std::string trigger_name;
	verb("remove-trigger", "Remove a trigger", [&] { return verb_remove_trigger(trigger_name); })
		->add_option("NAME", trigger_name, "The trigger's name (list-triggers)")
		->required();
	std::vector<std::string> watched;
	verb("watch",
	     "Print the notifications of triggers as they come, one JSON object a line (trigger, time, event, pid, "
	     "captures, dropped), until interrupted",
	     [&] {
		     return verb_watch(watched);
	     })->add_option("TRIGGER", watched, "Triggers to watch (default: all yours, those added later too)");

	verb("version", "Print the version (as --version)", [] { return verb_version(); });
	std::vector<std::string> help_words;
	verb("help", "Show the help of a verb: tracery help VERB (e.g. `tracery help snapshot record`)", [&] {
		return print_verb_help(app, help_words);
	})->add_option("VERB", help_words, "The verb (and its sub-verb)");

	const auto status = tracery::base::parse_command_line(app, argc, argv, [&](const CLI::ParseError &e) {
		bool known = false;
		for (const CLI::App *c : app.get_subcommands([](const CLI::App *) { return true; }))
			known |= argc > 1 && c->get_name() == argv[1];
		const bool analysis_named = argc > 2 && std::string(argv[1]) == "analyze" && argv[2][0] != '-';
		const std::string analysis = analysis_named ? argv[2] : "";
		if (argc > 1 && argv[1][0] != '-' && !known)
			fprintf(stderr, "tracery: unknown verb '%s'; see `tracery --help` for the verbs\n", argv[1]);
		else if (analysis_named &&
		         analyze->get_subcommands([&](const CLI::App *c) { return c->get_name() == analysis; }).empty())
			fprintf(stderr,
			        "tracery: unknown analysis '%s': give cputop, syscalls, schedlat, irq, latency, locks or calls (see "
			        "`tracery analyze --help`)\n",
			        argv[2]);
		else if (analysis_named)
			fprintf(stderr, "tracery: %s; see `tracery analyze %s --help`\n", e.what(), argv[2]);
		else
			fprintf(stderr, "tracery: %s; see `tracery%s%s --help`\n", e.what(),
			        argc > 1 && argv[1][0] != '-' ? " " : "", argc > 1 && argv[1][0] != '-' ? argv[1] : "");
	});
	if (status)
		return *status;
	try {
		if (!run)
			return 2;
		// The verbs that make sessions or triggers: they start a daemon when none answers.
		for (const CLI::App *starter : {create, load, exec, add_trigger})
			if (starter->parsed())
				tracery::ctl::ensure_daemon();
		return run();
	} catch (const CliError &e) {
		fprintf(stderr, "tracery: %s\n", e.what());
		return 1;
	} catch (const std::exception &e) {
		fprintf(stderr, "tracery: %s\n", e.what());
		return 1;
	}
}
