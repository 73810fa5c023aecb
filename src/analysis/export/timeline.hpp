// analysis/export/timeline.hpp — the timeline model the export formats
// (Perfetto's protobuf, Chrome's JSON, the HTML page) are written from: the
// walk over the traces' events turned into the tracks, slices, instants and
// counters those tools draw, given to a sink (one per format). What the
// kernel's events mean (tasks, the running task of each CPU, system calls
// paired) comes from the kernel model, model/.
//
// - tracks: a process, a thread (its pid and name from the user events'
//   vpid/vtid/procname contexts, or the kernel's state dump, fork, exec and
//   sched_switch), a thread's system calls, a CPU's other kernel events, a
//   counter, a trace without thread contexts; announced to the sink before
//   their first use, and again when their name or process changes;
// - events: user events are instants, or the begin and end of a slice when
//   named as a span's (paired per thread, innermost first); system calls are
//   slices of their thread (syscall_entry_* to syscall_exit_*, paired by
//   model/syscalls.hpp: a call the thread never returned from ends at its
//   next entry, an exit without its entry is an instant); a field
//   marked as a counter gives its event a counter value; every other event
//   is an instant on its thread's track (the running thread of its CPU for
//   kernel events), else its CPU's;
// - the preload helpers' events (model/preload_events.hpp): a function's
//   entry and exit are the begin and end of its slice on its thread's track
//   (nested as the calls are; an exit with another slice innermost is an
//   instant); a lock's request and acquisition, of a wait slice there; its
//   acquisition (or successful trylock) and release, of a hold slice on a
//   track of that lock and thread (a child of the thread's, so that holds
//   released in any order stay nested); a condition wait, of a wait slice,
//   ending and beginning its mutex's hold. An acquisition, which ends a
//   wait and begins a hold, and a condition wait's begin and end reach the
//   sink twice;
// - the scheduler's sched_switch and sched_waking/sched_wakeup(_new), handed
//   over with their fields for the CPU tracks.
// Each other event of the traces reaches the sink exactly once. Timestamps are on
// one clock for all traces (ExportClock): CLOCK_MONOTONIC when the traces'
// clocks are (LTTng's and Tracery's), else ns from the Epoch.
//
// Memory: per thread, process, CPU and name, never per event.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/export/event_fields.hpp"
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

struct ExportOptions {
	struct Span {
		std::string begin, end; // event names
	};
	std::vector<Span> spans;
	struct Counter {
		std::string event, field;
	};
	std::vector<Counter> counters;
	// The events' addresses resolved, as fields (event_fields.hpp), and the
	// function slices of the preload helpers named by their functions (else hex).
	std::optional<SymbolOptions> symbols;
	// html: the processes shown first after those with user events, each a
	// pid or a name (--focus).
	std::vector<std::string> focus;

	// "app:req_begin,app:req_end" → a span; "app:tick:depth" → a counter
	// (the field after the last ':'). Throws std::invalid_argument.
	void add_span(const std::string &spec);
	void add_counter(const std::string &spec);
};

struct ExportClock {
	enum Id : uint32_t { realtime = 1, monotonic = 3, boottime = 6 }; // Perfetto's builtin clock ids
	Id id = realtime;
	int64_t realtime_offset_ns = 0; // monotonic: CLOCK_REALTIME - CLOCK_MONOTONIC (the first trace's)
};

enum class TrackKind : uint8_t { process = 1, thread, syscalls, cpu, counter, trace, lock };

struct TrackInfo {
	uint64_t uuid = 0; // never 0
	TrackKind kind = TrackKind::process;
	uint64_t parent = 0; // uuid of the track it belongs to, 0 for none
	int64_t pid = 0, tid = 0, cpu = 0;
	std::string_view name;
};

enum class Phase : uint8_t { instant, begin, end };

struct ExportEvent {
	const ctf::reader::Item *item = nullptr;
	int64_t ts = 0; // on the ExportClock
	uint64_t track = 0;
	Phase phase = Phase::instant;
	uint32_t name = 0;     // name id
	uint32_t category = 0; // name id: the trace's domain ("ust", "kernel", "syscall")
	const std::vector<ShownField> *fields = nullptr;
	// a counter field's value, on its track
	uint64_t counter_track = 0;
	bool counter_double = false;
	int64_t counter_int = 0;
	double counter_value = 0;
};

struct SchedSwitchEvent {
	const ctf::reader::Item *item = nullptr;
	int64_t ts = 0, cpu = 0;
	int64_t prev_tid = 0, prev_prio = 0, prev_state = 0, next_tid = 0,
		next_prio = 0; // prio as the kernel's (120: nice 0)
	std::string_view prev_comm, next_comm;
};

struct SchedWakeEvent {
	enum Kind : uint8_t { waking, wakeup, wakeup_new };
	const ctf::reader::Item *item = nullptr;
	Kind kind = waking;
	int64_t ts = 0, cpu = 0;
	int64_t current_tid = 0; // the thread running on cpu, 0 when unknown
	int64_t tid = 0, prio = 0, target_cpu = 0;
	std::string_view comm;
};

// Names (event, slice, field, category names) by number, each once.
class NameTable {
public:
	uint32_t id(std::string_view name);
	const std::string &operator[](uint32_t id) const { return names_[id]; }
	size_t size() const { return names_.size(); }

private:
	std::deque<std::string> names_;
	std::unordered_map<std::string_view, uint32_t> ids_;
};

class ExportSink {
public:
	virtual ~ExportSink() = default;
	virtual void start(const ExportClock &clock, const NameTable &names) = 0;
	virtual void track(const TrackInfo &track) = 0;
	virtual void event(const ExportEvent &event) = 0;
	virtual void sched_switch(const SchedSwitchEvent &event) = 0;
	virtual void sched_wake(const SchedWakeEvent &event) = 0;
	virtual void finish() = 0;
};

struct ExportCounts {
	uint64_t events = 0;          // events of the traces, each given to the sink once
	uint64_t discarded = 0;       // events the traces say they lost
	uint64_t syscalls_closed = 0; // slice ends added: a call entered again before its exit
};

// Walks every event of walk into sink. Throws ctf::reader::ReadError for a
// damaged trace, std::invalid_argument for options naming no event or field.
ExportCounts export_events(EventWalk &walk, const ExportOptions &options, ExportSink &sink);

} // namespace tracery::analysis
