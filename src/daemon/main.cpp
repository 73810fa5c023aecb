// traceryd: the session daemon. Owns the shared-memory buffers of every
// tracing session, registers instrumented programs, answers the tracery
// command and writes traces. See `traceryd --help`.
#include "daemon/daemon.hpp"
#include "daemon/lockfile.hpp"
#include "daemon/log.hpp"
#include "daemon/quota.hpp"
#include "daemon/server.hpp"
#include "daemon/systemd.hpp"
#include "daemon/trace_repair.hpp"

#include "base/parse_command_line.hpp"
#include "base/sizes.hpp"

#include "clock/trace_clock.hpp"
#include "control/paths.hpp"
#include "control/version.hpp"
#include "ctf/trace_dir.hpp"
#include "kernel/tracefs.hpp"
#include "kernel/uprobes.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

using namespace tracery;
using namespace tracery::daemon;

namespace {

struct Args {
	bool daemonize = false;
	std::string rundir;
	std::string log_file;
	std::string log_level = "info";
	std::string group = "tracing";
	int quiesce_ms = 3000;
	std::string buffer_quota; // empty: default_buffer_quota(machine_memory())
};

// --buffer-quota SIZE, or a quarter of the machine's memory (quota.cpp says why).
uint64_t buffer_quota(const std::string &arg)
{
	if (arg.empty()) {
		if (const uint64_t q = default_buffer_quota(machine_memory()))
			return q;
		return uint64_t{1} << 30; // the kernel did not say how much memory there is
	}
	const auto v = base::parse_size(arg);
	if (!v || *v == 0)
		throw std::runtime_error("bad --buffer-quota '" + arg +
		                         "': give a size in bytes, optionally with k, M or G (e.g. 512M or 8G)");
	return *v;
}

// The run directory: created if missing, ours, not writable by others.
void prepare_rundir(const std::string &dir, bool system)
{
	try {
		ctf::make_directories(dir, system ? 0755 : 0700);
	} catch (const std::system_error &e) {
		throw std::runtime_error("cannot create run directory " + dir + ": " + strerror(e.code().value()));
	}
	struct stat st;
	if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
		throw std::runtime_error(dir + " is not a directory");
	if (st.st_uid != geteuid())
		throw std::runtime_error("run directory " + dir + " belongs to uid " + std::to_string(st.st_uid) +
		                         ", not to you: give your own with --rundir");
	chmod(dir.c_str(), system ? 0755 : 0700);
}

// --daemonize: the parent exits once the child serves (0) or failed (1,
// with the child's one-line error), so `traceryd --daemonize && tracery ...` works.
int ready_fd = -1;
void daemonize()
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		throw std::runtime_error(std::string("pipe: ") + strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		throw std::runtime_error(std::string("fork: ") + strerror(errno));
	if (pid > 0) {
		close(p[1]);
		std::string msg;
		char buf[512];
		ssize_t n;
		while ((n = read(p[0], buf, sizeof buf)) > 0)
			msg.append(buf, static_cast<size_t>(n));
		if (msg == "ok")
			_exit(0);
		fprintf(stderr, "traceryd: %s\n", msg.empty() ? "the daemon died while starting" : msg.c_str());
		_exit(1);
	}
	close(p[0]);
	ready_fd = p[1];
	setsid();
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(null, 1);
	if (null > 2)
		close(null);
}

// Removes each of what `find` lists with `remove` (false: another daemon
// removed it meanwhile), logging each one removed (as WHAT PREFIXNAME) and
// each failure.
template <class Find, class Remove>
void sweep(const char *what, const std::string &prefix, Find &&find, Remove &&remove)
{
	std::vector<std::string> stale;
	try {
		stale = find();
	} catch (const kernel::TracefsError &e) {
		log(Level::error, "cannot look for stale %ss: %s", what, e.what());
		return;
	}
	for (const std::string &name : stale) {
		try {
			if (remove(name))
				log(Level::info, "removed %s %s%s, left by a session daemon that did not stop cleanly",
				    what, prefix.c_str(), name.c_str());
		} catch (const kernel::TracefsError &e) {
			log(Level::error, "cannot remove the stale %s %s: %s", what, name.c_str(), e.what());
		}
	}
}

// The tracefs instances of kernel sessions whose daemon was killed
// (tracery-PID-SESSION, PID gone: they hold kernel memory and may still
// trace), then its probes in uprobe_events (groups tracery_PID_*), removed
// before serving, each logged. Only root sees tracefs; a
// system without it has none (it is not mounted for this).
void remove_stale_kernel_state()
{
	if (geteuid() != 0)
		return;
	std::string root;
	try {
		root = kernel::open_tracefs(false).root;
	} catch (const kernel::TracefsError &) {
		return;
	}
	// The instances first: an event enabled in an instance cannot be removed.
	sweep(
		"tracefs instance", root + "/instances/", [&] { return kernel::stale_instances(root); },
		[&](const std::string &name) { return kernel::remove_instance(root, name); });
	sweep(
		"uprobe group", "", [&] { return kernel::stale_uprobe_groups(root); },
		[&](const std::string &group) {
			kernel::remove_uprobe_group(root, group);
			return true;
		});
}

void report(const std::string &msg)
{
	if (ready_fd >= 0) {
		if (write(ready_fd, msg.data(), msg.size()) < 0) {
		}
		close(ready_fd);
		ready_fd = -1;
	} else if (msg != "ok") {
		fprintf(stderr, "traceryd: %s\n", msg.c_str());
	}
}

int serve(const Args &args)
{
	DaemonOptions opt;
	opt.rundir = args.rundir.empty() ? control::default_daemon_dir() : args.rundir;
	opt.system = geteuid() == 0;
	opt.group_name = args.group;
	opt.quiesce_timeout_ms = args.quiesce_ms;
	opt.buffer_quota = buffer_quota(args.buffer_quota);
	if (group *g = getgrnam(args.group.c_str()))
		opt.group = g->gr_gid;
	else if (opt.system && args.group != "tracing")
		throw std::runtime_error("no group '" + args.group + "': create it (groupadd " + args.group +
		                         ") or use another --group");
	else
		opt.group = static_cast<gid_t>(-1);

	// The files a system daemon writes for a session's owner are checked
	// against the owner's uid and gid (base::FsCreds) and the process's
	// supplementary groups, which FsCreds does not change: root's (group
	// root under sudo) would let an owner write where only that group may.
	if (opt.system && ::setgroups(0, nullptr) != 0)
		throw std::runtime_error(std::string("cannot drop the supplementary groups: ") + strerror(errno));
	// Socket activation (traceryd.socket): the socket systemd listens on, taken first.
	base::Fd activated = socket_from_systemd();
	prepare_rundir(opt.rundir, opt.system);
	LockFile lock(control::lock_path(opt.rundir));
	Level level;
	parse_level(args.log_level, level);
	std::string log_file = args.log_file;
	if (log_file.empty() && args.daemonize)
		log_file = opt.rundir + "/traceryd.log";
	if (!log_file.empty()) {
		int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0)
			throw std::runtime_error("cannot open log file " + log_file + ": " + strerror(errno));
		dup2(fd, 2); // the consumers report write errors on stderr too
		close(fd);
	}
	if (log_file.empty() && stderr_is_journal())
		log_to_journal(level);
	else
		log_to(stderr, level);
	// Before serving: the traces a killed predecessor left (trace_repair.hpp).
	repair_journaled_traces(TraceJournal(opt.rundir));
	remove_stale_kernel_state();

	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, nullptr); // before any thread: they all inherit it
	signal(SIGPIPE, SIG_IGN);
	base::Fd sfd(signalfd(-1, &sigs, SFD_CLOEXEC));

	// Every connection is a descriptor: take all the kernel allows us (the
	// server gives connections half of them, and limits each user's share).
	rlimit files{};
	if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
		files.rlim_cur = files.rlim_max;
		setrlimit(RLIMIT_NOFILE, &files);
	}
	const std::string sock = control::socket_path(opt.rundir);
	Daemon daemon(opt);
	const bool socket_activated = static_cast<bool>(activated);
	Server server(daemon,
	              socket_activated ? std::move(activated) : control::listen_unix(sock, opt.system ? 0666 : 0600));
	lock.write_pid();
	// Before `--daemonize` returns: a program started right after finds them tracing.
	daemon.load_auto_sessions();
	log(Level::info, "serving %s (pid %d, %s daemon, buffer quota %s per user%s)", sock.c_str(), getpid(),
	    opt.system ? "system" : "user", base::format_size(opt.buffer_quota).c_str(),
	    socket_activated ? ", socket from systemd" : "");
	report("ok");
	if (!notify_systemd("READY=1\nMAINPID=" + std::to_string(getpid())))
		log(Level::warn, "cannot tell systemd that the daemon is ready (NOTIFY_SOCKET): %s", strerror(errno));
	server.run(sfd.get(), [&] {
		log(Level::info, "stopping: writing the traces of running sessions");
		notify_systemd("STOPPING=1");
		if (!socket_activated) // systemd's socket stays for the next start
			unlink(sock.c_str());
		daemon.shutdown();
	});
	unlink(control::lock_path(opt.rundir).c_str());
	log(Level::info, "stopped");
	_exit(0); // the command workers may still be in a command: no destructors
}

} // namespace

int main(int argc, char **argv)
{
	CLI::App app{"traceryd: the Tracery session daemon. It owns the buffers of every tracing session, registers "
	             "instrumented programs and writes their traces; control it with the `tracery` command.",
	             "traceryd"};
	app.set_version_flag("--version", control::version_line("traceryd", TRACERY_VERSION),
	                     "Print the version and exit");
	Args args;
	app.add_flag("-d,--daemonize", args.daemonize, "Run in the background (returns once the daemon serves)");
	bool foreground = false;
	app.add_flag("-F,--foreground", foreground, "Run in the foreground (the default)");
	app.add_option("--rundir", args.rundir,
	               "Directory of the socket and pid file (default: TRACERY_RUNDIR, /run/tracery for root, "
	               "$XDG_RUNTIME_DIR/tracery or ~/.tracery for other users)");
	app.add_option("--log-file", args.log_file, "Log here (default: stderr; RUNDIR/traceryd.log when daemonized)");
	app.add_option("--log-level", args.log_level, "error, warn, info or debug")
		->check(CLI::IsMember({"error", "warn", "info", "debug"}));
	app.add_option("--group", args.group, "System daemon: members of this group may control it (default: tracing)");
	app.add_option("--quiesce-timeout-ms", args.quiesce_ms,
	               "How long `tracery stop` waits for programs to detach from the buffers")
		->check(CLI::Range(0, 600000));
	app.add_option("--buffer-quota", args.buffer_quota,
	               "Buffer memory each user's sessions and programs may take (k, M, G suffixes; default: a "
	               "quarter of the machine's memory). Root is subject to it too");
	if (const auto status = base::parse_command_line(app, argc, argv))
		return *status;
	try {
		// One malloc arena for all threads: they allocate little, and each
		// further arena would reserve 64 MiB of address space and keep
		// memory that malloc_trim gives back from the one arena.
		mallopt(M_ARENA_MAX, 1);
		clock::init();
		if (args.daemonize)
			daemonize();
		return serve(args);
	} catch (const std::exception &e) {
		report(e.what());
		return 1;
	}
}
