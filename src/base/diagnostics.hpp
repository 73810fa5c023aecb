// base/diagnostics.hpp — where the diagnostics of code that runs both in
// Tracery's own programs and in traced programs go (the clock, the consumer,
// the filter engine, libtracery itself).
//
// In Tracery's programs (traceryd, tracery, the tools): on stderr, which the
// daemon's log takes. In a traced program, whose stderr is its own, libtracery
// calls diagnostics_only_when_asked() first: from then on nothing is written
// unless the program's environment asks with TRACERY_LOG:
//   TRACERY_LOG=stderr   on the program's stderr
//   TRACERY_LOG=FILE     appended to FILE (created with mode 0600 if needed;
//                        nothing is written if it cannot be opened)
// Any other way would put the library's words among the program's output.
#pragma once

namespace tracery::base {

// One line: "tracery: " and the formatted message (at most 4 KiB; a newline
// is added). One write(): lines of several threads or processes do not mix.
// Safe from any thread; not async-signal-safe (formatting).
void diagnostic(const char *format, ...) __attribute__((format(printf, 1, 2)));

// Reads TRACERY_LOG once, now: diagnostics go where it says, or nowhere.
// Called by libtracery's constructor, before anything it starts reports.
void diagnostics_only_when_asked();

} // namespace tracery::base
