// cli/exec.cpp — `tracery exec`: runs a command with the preload helpers
// (LD_PRELOAD, after any value it had) traced in a session: the one named
// with -s, used as it is, or a temporary one this verb creates, configures
// (the helpers' events, the vpid, vtid, procname and ip contexts), starts,
// stops and destroys around the command, printing on stderr where its trace
// is. The signals sent to tracery (INT, TERM, HUP, QUIT, USR1, USR2) go on
// to the command, but a terminal's (^C, ^\, a hangup), which reach the
// command by themselves; its exit status is the verb's.
//
// The helpers are libtracery-preload-NAME.so: in the build tree's
// src/preload/ when this tracery runs from the build tree (src/cli/), else
// in the installed library directory.
#include "cli/exec.hpp"

#include "cli/client.hpp"
#include "cli/verbs.hpp"

#include "ctl/request_inputs.hpp"

#include "control/messages.hpp"
#include "control/paths.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>

#ifndef TRACERY_INSTALL_LIBDIR
#define TRACERY_INSTALL_LIBDIR "/usr/local/lib"
#endif

namespace tracery::cli {

namespace {

// A helper's name on the command line, its library, the events it writes.
struct Helper {
	std::string_view name, library, events;
};
constexpr Helper kHelpers[] = {
	{"libc", "libtracery-preload-libc.so", "lttng_ust_libc:*"},
	{"pthread", "libtracery-preload-pthread.so", "lttng_ust_pthread:*"},
	{"func", "libtracery-preload-func.so", "lttng_ust_cyg_profile:*"},
	{"func-fast", "libtracery-preload-func-fast.so", "lttng_ust_cyg_profile_fast:*"},
	{"dl", "libtracery-preload-dl.so", "lttng_ust_dl:*"},
};

bool is_file(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where the helpers are: the build tree's src/preload/ beside this
// program's src/cli/, else the installed library directory.
std::vector<std::string> helper_dirs()
{
	std::vector<std::string> dirs;
	char self[PATH_MAX];
	const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		std::string dir(self, static_cast<size_t>(n));
		dir.erase(dir.rfind('/'));
		if (dir.size() >= 8 && dir.compare(dir.size() - 8, 8, "/src/cli") == 0)
			dirs.push_back(dir.substr(0, dir.size() - 4) + "/preload");
	}
	dirs.emplace_back(TRACERY_INSTALL_LIBDIR);
	return dirs;
}

std::string find_helper(const Helper &h, const std::vector<std::string> &dirs)
{
	std::string looked;
	for (const std::string &d : dirs) {
		const std::string path = d + "/" + std::string(h.library);
		if (is_file(path))
			return path;
		looked += (looked.empty() ? "" : ", ") + d;
	}
	throw CliError("the " + std::string(h.name) + " helper (" + std::string(h.library) + ") is in none of " +
	               looked + ": build it, or install Tracery");
}

const Helper &helper_named(const std::string &name)
{
	for (const Helper &h : kHelpers)
		if (h.name == name)
			return h;
	throw CliError("--preload: unknown helper '" + name + "': give some of libc, pthread, func, func-fast, dl " +
	               "(comma-separated), or none");
}

// The command's pid while it runs (-1 before and after), for the handler that forwards signals.
volatile sig_atomic_t child_pid = -1;

// Sends the signal on to the command, unless the terminal sent it (its foreground group, the command
// with it, got it already: ^C, ^\, a hangup).
void forward(int sig, siginfo_t *info, void *)
{
	if (child_pid > 0 && info->si_code != SI_KERNEL)
		kill(child_pid, sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// Runs the command with LD_PRELOAD extended by libs; its exit status as a shell gives it.
int run(const std::vector<std::string> &command, const std::string &libs)
{
	std::vector<char *> argv;
	for (const std::string &s : command)
		argv.push_back(const_cast<char *>(s.c_str()));
	argv.push_back(nullptr);
	std::string preload;
	if (const char *old = getenv("LD_PRELOAD"); old && *old)
		preload = old;
	if (!libs.empty())
		preload += (preload.empty() ? "" : ":") + libs;

	// the signals to forward are blocked from before the fork until the command's pid is known: one that
	// comes in between waits, then goes to the command
	sigset_t forwarded, old_mask;
	sigemptyset(&forwarded);
	for (const int sig : kForwarded)
		sigaddset(&forwarded, sig);
	sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
	struct sigaction sa = {};
	sa.sa_sigaction = forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	struct sigaction old_actions[std::size(kForwarded)];
	for (size_t i = 0; i < std::size(kForwarded); ++i)
		sigaction(kForwarded[i], &sa, &old_actions[i]);
	fflush(nullptr);
	const pid_t pid = fork();
	if (pid < 0) {
		const int e = errno;
		for (size_t i = 0; i < std::size(kForwarded); ++i)
			sigaction(kForwarded[i], &old_actions[i], nullptr);
		sigprocmask(SIG_SETMASK, &old_mask, nullptr);
		throw CliError(std::string("fork: ") + strerror(e));
	}
	if (pid == 0) {
		for (size_t i = 0; i < std::size(kForwarded); ++i)
			sigaction(kForwarded[i], &old_actions[i], nullptr);
		sigprocmask(SIG_SETMASK, &old_mask, nullptr);
		if (!preload.empty())
			setenv("LD_PRELOAD", preload.c_str(), 1);
		execvp(argv[0], argv.data());
		const int e = errno;
		fprintf(stderr, "tracery: cannot run '%s': %s\n", argv[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old_mask, nullptr);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			child_pid = -1;
			throw CliError(std::string("waitpid: ") + strerror(errno));
		}
	}
	child_pid = -1;
	for (size_t i = 0; i < std::size(kForwarded); ++i)
		sigaction(kForwarded[i], &old_actions[i], nullptr);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

// The temporary session: created, configured and started; stopped and destroyed by its destructor.
class TemporarySession {
public:
	TemporarySession(const std::string &output, const std::vector<const Helper *> &helpers)
	{
		char name[64];
		snprintf(name, sizeof name, "exec-%d-%lld", static_cast<int>(getpid()),
		         static_cast<long long>(time(nullptr)));
		name_ = name;
		control::Create create;
		create.session = name_;
		create.output =
			output.empty() ? control::home_dir() + "/tracery-traces/" + name_ : ctl::absolute_path(output);
		output_ = request(create).output;
		try {
			control::EnableEvent events;
			events.session = name_;
			for (const Helper *h : helpers)
				events.patterns.emplace_back(h->events);
			// the state dump of the loaded objects, for symbols; without helpers, the command's own events
			if (helpers.empty())
				events.all = true;
			else
				events.patterns.emplace_back("lttng_ust_statedump:*");
			request(events);
			request(control::AddContext{name_, "", {"vpid", "vtid", "procname", "ip"}});
			request(control::Start{{name_}});
		} catch (...) {
			destroy();
			throw;
		}
	}
	~TemporarySession()
	{
		try {
			stop();
		} catch (const std::exception &e) {
			fprintf(stderr, "tracery: stopping session '%s': %s\n", name_.c_str(), e.what());
		}
		destroy();
	}
	const std::string &output() const { return output_; }

private:
	void stop()
	{
		const control::StopReply r = request(control::Stop{{name_}});
		uint64_t lost = 0;
		for (const control::LostCount &c : r.lost)
			lost += c.lost;
		if (lost)
			fprintf(stderr, "tracery: warning: the trace lost %llu event(s) (buffers full)\n",
			        static_cast<unsigned long long>(lost));
	}
	void destroy()
	{
		try {
			control::Destroy d;
			d.session = name_;
			request(d);
		} catch (const std::exception &e) {
			fprintf(stderr, "tracery: destroying session '%s': %s\n", name_.c_str(), e.what());
		}
	}

	std::string name_, output_;
};

} // namespace

int verb_exec(const ExecArgs &a)
{
	if (a.command.empty())
		throw CliError("exec needs a command: tracery exec [OPTIONS] -- COMMAND [ARGS]");
	std::vector<const Helper *> helpers;
	if (a.preload != "none")
		for (const std::string &name : split_commas({a.preload}))
			helpers.push_back(&helper_named(name));
	std::string libs;
	const std::vector<std::string> dirs = helper_dirs();
	for (const Helper *h : helpers) {
		if (!libs.empty())
			libs += ':'; // (appended apart: GCC 12 -O3 warns falsely, -Wrestrict, on ":" + std::string)
		libs += find_helper(*h, dirs);
	}

	if (!a.session.empty()) {
		if (!a.output.empty())
			throw CliError(
				"-o names a temporary session's trace; -s names an existing session, whose output "
				"is its own: give one of them");
		// (a session that does not exist: the daemon's error, before the command runs)
		const control::StatusReply session = request(control::Status{{a.session}});
		if (session.state != "started")
			fprintf(stderr, "tracery: warning: session '%s' is %s: the command's events are not recorded\n",
			        a.session.c_str(), session.state.c_str());
		const int status = run(a.command, libs);
		fprintf(stderr, "tracery: traced in session '%s' (%s)\n", a.session.c_str(), session.output.c_str());
		return status;
	}
	int status = 0;
	std::string output;
	{
		TemporarySession session(a.output, helpers);
		output = session.output();
		status = run(a.command, libs);
	}
	fprintf(stderr, "tracery: trace written to %s\n", output.c_str());
	return status;
}

} // namespace tracery::cli
