// Run directory resolution: see paths.hpp.
#include "control/paths.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace tracery::control {

namespace {
std::string env(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "";
}
} // namespace

std::string rundir_override() { return env("TRACERY_RUNDIR"); }

std::string home_dir()
{
	std::string h = env("HOME");
	if (!h.empty())
		return h;
	if (passwd *pw = getpwuid(getuid()); pw && pw->pw_dir)
		return pw->pw_dir;
	return "/tmp";
}

std::string user_run_dir()
{
	std::string x = env("XDG_RUNTIME_DIR");
	if (!x.empty())
		return x + "/tracery";
	return home_dir() + "/.tracery";
}

std::string default_daemon_dir()
{
	if (std::string o = rundir_override(); !o.empty())
		return o;
	return getuid() == 0 ? kSystemRunDir : user_run_dir();
}

std::vector<std::string> client_dirs()
{
	if (std::string o = rundir_override(); !o.empty())
		return {o};
	if (getuid() == 0)
		return {kSystemRunDir};
	return {user_run_dir(), kSystemRunDir};
}

} // namespace tracery::control
