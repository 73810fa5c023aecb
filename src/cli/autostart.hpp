// The session daemon started for the user when none answers, as lttng
// starts its session daemon: before the verbs that make sessions or triggers
// (create, load, exec, add-trigger). Root gets the system daemon, other users
// their own (control/paths.hpp says where each lives).
#pragma once

namespace tracery::cli {

// Returns at once when a daemon answers in one of control::client_dirs(), or
// when TRACERY_NO_AUTOSTART is set (other than to 0). Otherwise runs
// `traceryd --daemonize` (beside this command, else from PATH), says so on
// stderr, and returns once it serves; CliError if it could not start.
void ensure_daemon();

} // namespace tracery::cli
