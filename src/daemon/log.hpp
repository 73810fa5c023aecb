// traceryd's log: one line per message, with a time stamp and a level, to
// stderr (foreground), the journal (under systemd) or a file (--log-file, or
// RUNDIR/traceryd.log when daemonized). Messages above the chosen level are
// dropped.
#pragma once

#include <cstdio>
#include <string>

namespace tracery::daemon {

enum class Level { error = 0, warn = 1, info = 2, debug = 3 };

// Parses "error", "warn", "info", "debug"; false if none of them.
bool parse_level(const std::string &s, Level &out);
void log_to(FILE *f, Level max);
// To stderr, the journal's stream under systemd: each line begins with its
// priority as "<N>" (sd-daemon(3)), without a time stamp (the journal has it).
void log_to_journal(Level max);
void log(Level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace tracery::daemon
