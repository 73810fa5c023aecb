// The daemon's pid/lock file (RUNDIR/traceryd.pid): held with flock() for the
// daemon's life, so two daemons of one scope never serve the same directory.
// The kernel drops the lock when the daemon dies, even by SIGKILL.
#pragma once

#include "control/wire.hpp"

#include <string>

namespace tracery::daemon {

class LockFile {
public:
	// Takes the lock and writes our pid. Throws std::runtime_error with a
	// one-line message (naming the pid of the daemon holding it) if taken.
	explicit LockFile(const std::string &path);
	~LockFile();
	// Writes the pid again (after daemonizing the pid changes).
	void write_pid();

private:
	std::string path_;
	base::Fd fd_;
};

} // namespace tracery::daemon
