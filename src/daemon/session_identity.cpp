// What a tracing session is: see session_identity.hpp.
#include "daemon/session_identity.hpp"

#include "base/fs_creds.hpp"

#include "ctf/trace_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace tracery::daemon {

namespace {

bool is_empty_dir(const std::string &path)
{
	DIR *d = opendir(path.c_str());
	if (!d)
		return false;
	bool empty = true;
	while (dirent *e = readdir(d))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

} // namespace

void prepare_output_directory(const SessionIdentity &session)
{
	const std::string &output = session.output;
	base::FsCreds as_owner(session.owner, session.owner_gid);
	struct stat st;
	if (stat(output.c_str(), &st) == 0 && (!S_ISDIR(st.st_mode) || !is_empty_dir(output)))
		throw std::runtime_error("output directory '" + output +
		                         "' is not empty: give a new or empty directory with --output DIR");
	try {
		ctf::make_directories(output, 0700);
	} catch (const std::system_error &e) {
		throw std::runtime_error("cannot create output directory '" + output +
		                         "': " + strerror(e.code().value()) +
		                         "; choose a writable directory with --output DIR");
	}
	const std::string probe = output + "/.tracery-write-check";
	int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		throw std::runtime_error("output directory '" + output + "' is not writable: " + strerror(errno) +
		                         "; choose a writable directory with --output DIR");
	close(fd);
	unlink(probe.c_str());
	chmod(output.c_str(), 0700);
}

} // namespace tracery::daemon
