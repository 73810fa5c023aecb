// analysis/export/export_model.hpp — what `tracery export` shares between the
// formats of other tools (Perfetto's protobuf, Chrome's JSON): the walk over
// the traces' events, turned into timelines those tools draw.
//
// - tracks: a process, a thread (its pid and name from the user events'
//   vpid/vtid/procname contexts, or the kernel's state dump, fork, exec and
//   sched_switch), a thread's system calls, a CPU's other kernel events, a
//   counter, a trace without thread contexts; announced to the sink before
//   their first use, and again when their name or process changes;
// - events: user events are instants, or the begin and end of a slice when
//   named as a span's (paired per thread, innermost first); system calls are
//   slices of their thread (syscall_entry_* to syscall_exit_*); a field
//   marked as a counter gives its event a counter value; every other event
//   is an instant on its thread's track (the running thread of its CPU for
//   kernel events), else its CPU's;
// - the scheduler's sched_switch and sched_waking/sched_wakeup(_new), handed
//   over with their fields for the CPU tracks.
// Each event of the traces reaches the sink exactly once. Timestamps are on
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

#include "analysis/analyze/analyses.hpp"
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

enum class TrackKind : uint8_t { process = 1, thread, syscalls, cpu, counter, trace };

struct TrackInfo {
	uint64_t uuid = 0; // never 0
	TrackKind kind = TrackKind::process;
	uint64_t parent = 0; // uuid of the track it belongs to, 0 for none
	int64_t pid = 0, tid = 0, cpu = 0;
	std::string_view name;
};

// A field shown with its event: its name (an id of the name table) and how
// to read it.
struct ShownField {
	enum Type : uint8_t { i64, u64, f64, text, enumeration, compound };
	uint32_t name = 0;
	Type type = i64;
	FieldRef ref;
};

// A field's value in one event (text: valid until the next value()).
struct FieldValue {
	ShownField::Type type = ShownField::i64;
	int64_t i = 0;
	uint64_t u = 0;
	double f = 0;
	std::string_view s; // text, an enumeration's label(s), a compound value as JSON
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

// The value of a shown field of an event (reads the event's decoded values).
FieldValue field_value_of(const ctf::reader::Item &event, const ShownField &field, std::string &scratch);

// Writes all n bytes to fd; throws std::runtime_error naming what (the
// output file) on an error.
void write_all(int fd, const void *p, size_t n, const std::string &what);

} // namespace tracery::analysis
