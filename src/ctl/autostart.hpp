// The session daemon started for the user when none answers, as lttng starts
// its session daemon: before the requests that make sessions or triggers (the
// command's create, load, exec and add-trigger; the C API's setup, session
// creation and add-trigger). Root gets the system daemon, other users their
// own (control/paths.hpp says where each lives).
#pragma once

namespace tracery::ctl {

// False when TRACERY_NO_AUTOSTART is set (other than to 0): no daemon is
// started, and the no-daemon message does not offer `tracery create`.
bool autostart_enabled();

// Returns at once when a daemon answers in one of control::client_dirs(), or
// when autostart is not enabled. Otherwise runs
// `traceryd --daemonize` (beside the program or library this code is in,
// else from PATH), says so in one line on stderr, and returns once it serves;
// Error (no_daemon) if it could not start.
void ensure_daemon();

} // namespace tracery::ctl
