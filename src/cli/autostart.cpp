// Starting a session daemon when none answers: see autostart.hpp.
#include "cli/autostart.hpp"

#include "cli/client.hpp"
#include "control/paths.hpp"
#include "control/wire.hpp"

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tracery::cli {

namespace {

bool daemon_answers()
{
	for (const std::string &dir : control::client_dirs())
		if (control::connect_unix(control::socket_path(dir)))
			return true;
	return false;
}

// traceryd beside this command: the build tree's src/daemon/ next to src/cli/,
// or the same directory once installed; empty: look it up in PATH.
std::string daemon_program()
{
	char self[PATH_MAX];
	const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return "";
	std::string dir(self, static_cast<size_t>(n));
	dir.erase(dir.rfind('/'));
	for (const std::string &candidate : {dir + "/../daemon/traceryd", dir + "/traceryd"})
		if (access(candidate.c_str(), X_OK) == 0)
			return candidate;
	return "";
}

// Runs `traceryd --daemonize` and returns its exit status (its own error
// line, when it fails, went to our stderr); -1 when it could not be run.
int run_daemonize(const std::string &program)
{
	const pid_t pid = fork();
	if (pid < 0)
		throw CliError(std::string("cannot start a session daemon: fork: ") + strerror(errno));
	if (pid == 0) {
		const char *path = program.empty() ? "traceryd" : program.c_str();
		char *const argv[] = {const_cast<char *>("traceryd"), const_cast<char *>("--daemonize"), nullptr};
		if (program.empty())
			execvp(path, argv);
		else
			execv(path, argv);
		fprintf(stderr, "tracery: cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

void ensure_daemon()
{
	if (const char *off = getenv("TRACERY_NO_AUTOSTART"); off && *off && std::string(off) != "0")
		return;
	if (daemon_answers())
		return;
	const std::string dir = control::default_daemon_dir();
	const int status = run_daemonize(daemon_program());
	// Another command may have started one at the same moment (the loser's
	// traceryd finds the lock taken): a daemon that answers is all we need.
	if (status == 0)
		fprintf(stderr,
		        "tracery: no session daemon answered: started one (traceryd, %s; its log: %s/traceryd.log)\n",
		        geteuid() == 0 ? "the system daemon" : "your own", dir.c_str());
	else if (!daemon_answers())
		throw CliError("no session daemon answered and `traceryd --daemonize` failed (" +
		               (status < 0 ? std::string("it did not run") : "exit status " + std::to_string(status)) +
		               "): start one yourself, or see its error above");
}

} // namespace tracery::cli
