// Where a session daemon lives: its run directory holds the socket that
// programs and the tracery command connect to, and its pid/lock file.
//
//   TRACERY_RUNDIR set    that directory, for everyone (tests, private daemons)
//   root                  /run/tracery (the system daemon: root and group `tracing`)
//   other users           $XDG_RUNTIME_DIR/tracery, else $HOME/.tracery
#pragma once

#include <string>
#include <vector>

namespace tracery::control {

inline constexpr const char *kSystemRunDir = "/run/tracery";
inline constexpr const char *kSocketName = "traceryd.sock";
inline constexpr const char *kLockName = "traceryd.pid";

// TRACERY_RUNDIR, or empty.
std::string rundir_override();
// The per-user run directory of the calling user ($XDG_RUNTIME_DIR/tracery or $HOME/.tracery).
std::string user_run_dir();
// The directory a daemon started by the calling user serves by default.
std::string default_daemon_dir();
// Directories to look for a daemon in, in order of preference: the override
// alone, or the user's own then the system daemon's (root: the system one).
std::vector<std::string> client_dirs();

inline std::string socket_path(const std::string &dir) { return dir + "/" + kSocketName; }
inline std::string lock_path(const std::string &dir) { return dir + "/" + kLockName; }

// $HOME of the calling user (from the environment, else the password database).
std::string home_dir();

} // namespace tracery::control
