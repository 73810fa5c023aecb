// The daemon's pid/lock file: see lockfile.hpp.
#include "daemon/lockfile.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tracery::daemon {

LockFile::LockFile(const std::string &path) : path_(path)
{
	fd_.reset(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	if (!fd_)
		throw std::runtime_error("cannot open " + path + ": " + strerror(errno));
	if (flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
		char buf[32] = {};
		ssize_t n = pread(fd_.get(), buf, sizeof buf - 1, 0);
		std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
		while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' '))
			pid.pop_back();
		throw std::runtime_error("another traceryd (pid " + pid + ") already serves this directory (" + path +
		                         " is locked); stop it first, or give another --rundir");
	}
	write_pid();
}

LockFile::~LockFile()
{
	if (fd_)
		unlink(path_.c_str());
}

void LockFile::write_pid()
{
	std::string s = std::to_string(getpid()) + "\n";
	if (ftruncate(fd_.get(), 0) != 0 || pwrite(fd_.get(), s.data(), s.size(), 0) < 0)
		throw std::runtime_error("cannot write " + path_ + ": " + strerror(errno));
}

} // namespace tracery::daemon
