// Starting a session daemon when none answers: see autostart.hpp.
#include "ctl/autostart.hpp"

#include "control/paths.hpp"
#include "control/wire.hpp"
#include "ctl/client.hpp"

#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char **environ;

namespace tracery::ctl {

namespace {

bool daemon_answers()
{
	for (const std::string &dir : control::client_dirs())
		if (control::connect_unix(control::socket_path(dir)))
			return true;
	return false;
}

// traceryd beside the file this code was loaded from: the tracery command
// or libtracery-ctl.so, in the build tree (src/cli/ or src/ctl/, beside
// src/daemon/) or installed (the command in the same directory, the library
// TRACERY_LIB_TO_BIN away from it); empty: look it up in PATH.
std::string daemon_program()
{
	Dl_info info{};
	if (dladdr(reinterpret_cast<void *>(&daemon_program), &info) == 0 || !info.dli_fname ||
	    !strchr(info.dli_fname, '/'))
		return "";
	std::string dir(info.dli_fname);
	dir.erase(dir.rfind('/'));
	for (const std::string &candidate :
	     {dir + "/../daemon/traceryd", dir + "/traceryd", dir + "/" TRACERY_LIB_TO_BIN "/traceryd"})
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate;
	return "";
}

// Runs `traceryd --daemonize` and returns its exit status (its own error
// line, when it fails, went to our stderr); -1 when it could not be run or
// waited for. posix_spawn, not fork: the caller may be any multithreaded
// program.
int run_daemonize(const std::string &program)
{
	char *const argv[] = {const_cast<char *>("traceryd"), const_cast<char *>("--daemonize"), nullptr};
	pid_t pid = 0;
	const int failed = program.empty() ? posix_spawnp(&pid, "traceryd", nullptr, nullptr, argv, environ)
	                                   : posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, environ);
	if (failed) {
		fprintf(stderr, "tracery: cannot run %s: %s\n", program.empty() ? "traceryd" : program.c_str(),
		        strerror(failed));
		return -1;
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1; // SIGCHLD ignored by the caller: whether it serves tells
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

bool autostart_enabled()
{
	const char *off = getenv("TRACERY_NO_AUTOSTART");
	return !off || !*off || std::string(off) == "0";
}

void ensure_daemon()
{
	if (!autostart_enabled() || daemon_answers())
		return;
	const std::string dir = control::default_daemon_dir();
	const int status = run_daemonize(daemon_program());
	// Another program may have started one at the same moment (the loser's
	// traceryd finds the lock taken): a daemon that answers is all we need.
	if (status == 0)
		fprintf(stderr,
		        "tracery: no session daemon answered: started one (traceryd, %s; its log: %s/traceryd.log)\n",
		        geteuid() == 0 ? "the system daemon" : "your own", dir.c_str());
	else if (!daemon_answers())
		throw Error(
			"no session daemon answered and `traceryd --daemonize` failed (" +
				(status < 0 ? std::string("it did not run") : "exit status " + std::to_string(status)) +
				"): start one yourself, or see its error above",
			ErrorKind::no_daemon);
}

} // namespace tracery::ctl
