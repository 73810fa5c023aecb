// analysis/stats/trace_stats.hpp — `tracery stats`: what traces hold, counted
// without formatting a single event: per event name its count, rate, first
// and last time and bytes (as stored, headers included); per CPU (the
// packet's cpu_id) and per process (the vpid/pid context, else a per-process
// buffer's env, else in a kernel trace the task sched_switch put on the
// event's CPU, by its process when the state dump or a fork told it); and the
// events and packets each stream lost (events_discarded, packet_seq_num
// gaps). A kernel trace's system calls are one row each, `syscall NAME`,
// their entry and exit paired per thread (the tid context, else the task
// running on the event's CPU, else before any sched_switch of that CPU the
// CPU: a trace of system calls alone) and counted as one call (its bytes both
// events', from the entry's time to the exit's), and rows `syscall NAME
// (entry without exit)` and `syscall NAME (exit without entry)` for the
// others; the totals, CPUs and processes still count events.
#pragma once

#include <optional>

#include "analysis/model/symbols.hpp"
#include "analysis/output/report.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/read/narrowing.hpp"

namespace tracery::analysis {

// Reads every item of the walk (events, losses and, when the walk counts
// with stats_counts, the runs of counted events), then the tallies of the
// walk's streams. With symbols (`--symbols`), also the events per function
// their addresses name (the ip context; function entry and exit: addr), a
// table "per_function". Narrowed (narrowing.narrows()), only the events of
// its time, CPUs, threads and processes are counted, and the walk must count
// no runs (every event an item, its contexts decoded). Throws
// ctf::reader::ReadError, std::invalid_argument (--begin/--end unreadable).
Report trace_stats(EventWalk &walk, const std::optional<SymbolOptions> &symbols = std::nullopt,
                   Narrowing narrowing = {});

// The event classes whose payloads trace_stats reads (a kernel trace's
// sched_switch, sched_process_fork and state dump): the walk need decode no
// other's (EventWalk walk(inputs, "stats", stats_reads_fields)).
bool stats_reads_fields(const ctf::reader::Trace &trace, const ctf::reader::EventClass &cls);
// The same with symbols: also the events that list the loaded objects and the
// function entry and exit events (symbol_events_fields, model/symbol_events.hpp).
bool stats_reads_fields_with_symbols(const ctf::reader::Trace &trace, const ctf::reader::EventClass &cls);

// The event classes trace_stats only counts (TraceSet::count_events_of):
// those whose CPU and process are not in their own or their stream's event
// context (at most in the packet context or the env), but a kernel trace's
// task events, and its system calls when they have a tid context or the
// trace several stream classes (two streams of one CPU: see stats_notes).
// EventWalk walk(inputs, "stats", stats_reads_fields, stats_counts, stats_notes).
bool stats_counts(const ctf::reader::Trace &trace, const ctf::reader::TracePlans::StreamPlans &stream,
                  const ctf::reader::TracePlans::EventPlans &event);
// The same with symbols: no class with an ip context or address fields is only counted.
bool stats_counts_with_symbols(const ctf::reader::Trace &trace, const ctf::reader::TracePlans::StreamPlans &stream,
                               const ctf::reader::TracePlans::EventPlans &event);
// The counted classes whose events trace_stats pairs from their runs' items
// (TraceSet::note_events_of): a kernel trace's system call entries and
// exits. Each of a run's is of its CPU's thread, so a run pairs in its own
// order: the walk must note them all when it counts them.
bool stats_notes(const ctf::reader::Trace &trace, const ctf::reader::TracePlans::StreamPlans &stream,
                 const ctf::reader::TracePlans::EventPlans &event);

} // namespace tracery::analysis
