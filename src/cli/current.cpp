// The current session file: see current.hpp.
#include "cli/current.hpp"

#include "cli/client.hpp"
#include "control/paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace tracery::cli {

namespace {
std::string current_path() { return control::home_dir() + "/.tracery/current"; }

std::string read_current()
{
	std::ifstream in(current_path());
	std::string name;
	std::getline(in, name);
	return name;
}
} // namespace

void set_current_session(const std::string &name)
{
	mkdir((control::home_dir() + "/.tracery").c_str(), 0700);
	std::ofstream out(current_path(), std::ios::trunc);
	out << name << "\n";
	if (!out.flush())
		fprintf(stderr, "tracery: warning: cannot remember the current session in %s; name it with -s %s\n",
		        current_path().c_str(), name.c_str());
}

void forget_current_session(const std::string &name)
{
	if (read_current() == name)
		unlink(current_path().c_str());
}

std::string session_or_current(const std::string &given)
{
	if (!given.empty())
		return given;
	std::string name = read_current();
	if (name.empty())
		throw CliError("no current session: create one with `tracery create NAME`, or name one with -s NAME");
	return name;
}

} // namespace tracery::cli
