// analysis/export/html_export.hpp — `tracery export --format html`: the events of
// traces as one self-contained HTML file, a timeline that opens from disk in
// a browser (no network): CPU tracks (the running threads from sched_switch,
// the wake-ups), process and thread tracks (thread states from the model's
// ThreadStates, user events, spans, system calls), counters; the user's
// processes first; zoom and pan, a click shows an event's fields (a thread
// state's wake-up), a search box finds events by name or field value.
//
// The page is src/analysis/html/timeline.js and timeline.css (embedded into
// the binary at build time), then the data: <script type="application/json">
// chunks written as the walk goes (memory does not grow with the trace),
// each a JSON object of
//   "head":   {"clock": id, "origin": "ns", "realtime": "ns", "focus": [..],
//             "tracked": [..]} in the first chunk with events (times are ns
//             after origin, on the export clock; realtime, when that clock is
//             CLOCK_MONOTONIC: CLOCK_REALTIME minus it; focus: --focus's pids
//             and names; tracked: the pids the traces' sessions tracked, from
//             their env: model/trace_env.hpp);
//   "strs":   strings interned from here on (field values; up to a bound);
//   "kinds":  [name, category, phase (0 instant, 1 begin, 2 end),
//              [field names], "types" (a letter per field: i u f s e j)],
//             numbered from 0 across chunks;
//   "tracks": [id, kind (TrackKind; cpu for a CPU's scheduler events too; 8
//              for a thread's states, its thread's track the parent),
//              parent id or -1, pid, tid, cpu, name], new or renamed;
//   "ev":     [track id, [time deltas], [kinds], [values]] per track: a
//             column each, times as the difference with the track's previous
//             event (its first with origin), values flat in event order (an
//             interned string's number, or the string itself; integers
//             beyond 2^53 and non-finite floats as strings); a thread
//             state is an event of kind "thread_state": [state (0 running,
//             1 runnable, 2 sleeping, 3 uninterruptible, 4 stopped, 5 idle),
//             duration, CPU or -1, waker tid or -1];
//   "end", "events", "discarded": in the last chunk, the counts the export
//             reports (events of the traces, events they lost).
// Every '<' inside JSON strings is written \u003c: no trace string can end
// the script element; bytes that are not UTF-8 become '?'.
#pragma once

#include <string>

#include "analysis/export/timeline.hpp"

namespace tracery::analysis {

// Writes the HTML timeline of walk's events to fd (what: its name, for
// errors). Throws as export_events(), and std::runtime_error when writing
// fails.
ExportCounts export_html(EventWalk &walk, const ExportOptions &options, int fd, const std::string &what);

// s as a JSON string safe inside an HTML script element: append_json_string,
// with '<' as \u003c.
void append_html_json_string(std::string &out, std::string_view s);

} // namespace tracery::analysis
