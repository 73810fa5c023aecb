// analysis/export/chrome_json_export.hpp — `tracery export --format chrome-json`:
// the events of traces as Chrome's trace event JSON (the legacy format of
// chrome://tracing, which Perfetto's UI also opens), for the tools that read
// only that. One object {"displayTimeUnit":"ns","traceEvents":[...]}, one
// entry per event: instants "i", slice begins and ends "B"/"E" (system calls,
// spans), a sched_switch as an "X" slice of the task it switched out on its
// CPU's row (its duration since the CPU's previous switch; "i" for a CPU's
// first); a counter field gives one "C" entry more; "M" entries name
// processes and threads. `ts` in µs (ns as decimals), on the export clock
// (export_model.hpp). Written as it goes.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/export/export_model.hpp"

namespace tracery::analysis {

// The pid of the rows of CPUs and other tracks without a process, and the
// tid of CPU n's row (kCpuTid + n), beyond Linux's pids.
inline constexpr int64_t kChromeCpuPid = 0, kChromeCpuTid = int64_t{1} << 30;

// Writes the JSON of walk's events to fd (what: its name, for errors).
// Throws as export_events(), and std::runtime_error when writing fails.
ExportCounts export_chrome_json(EventWalk &walk, const ExportOptions &options, int fd, const std::string &what);

} // namespace tracery::analysis
