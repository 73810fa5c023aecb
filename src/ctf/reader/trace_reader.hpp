// ctf/reader/trace_reader.hpp — CTF traces read from disk: each trace's
// metadata and decode plans, its stream files memory-mapped and their packets
// indexed as each stream reaches them, and a merge of every stream of one or
// several traces in timestamp order (babeltrace2's order, ties included),
// with the discarded events (events_discarded deltas) and discarded packets
// (packet_seq_num gaps) where they occur.
//
//   TraceSet set;
//   set.add_trace("/t/ust/uid/0/64-bit", "ust/uid/0/64-bit");   // throws ReadError
//   set.add_trace("/t/kernel", "kernel");
//   set.start();
//   while (const Item *it = set.next()) ...                        // throws ReadError
//
// An Item is valid until the next call of next(). Every error names the
// stream file (or metadata) and the byte offset. add_trace() reads the first
// packet of each stream file (its stream class and instance, for the order of
// a stream's files); the others are checked when their stream reaches them,
// so that a damaged packet further on is an error of next(), after the items
// before it.
//
// Live reading (analysis/live_view.hpp): traces whose metadata comes as
// text, streams whose packets come one at a time from memory, and the
// caller merges (each stream's next item with next_of, ordered by before):
//
//   Trace &t = set.add_text_trace(tsdl, "relay:metadata", "host/ust/uid/0/64-bit");
//   Stream &s = set.add_memory_stream(t, "host/ust/uid/0/64-bit/channel0_0");
//   set.append_packet(s, bytes);                                    // throws ReadError
//   while (const Item *it = set.next_of(s)) ...                     // null: wants a packet
//
// Counting (tracery stats): the events of the classes a caller only counts
// give no item each; every stream tallies them per event class, and runs of
// them come as `counted` items, each before any item that follows its events
// in the order:
//
//   set.count_events_of(counted);                                   // before start()
//   set.start();
//   while (const Item *it = set.next()) ...                         // events, losses, runs
//   for (size_t i = 0; i < set.streams(); ++i) set.stream(i).tallies() ...
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctf/reader/decoder.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_class.hpp"

namespace tracery::ctf::reader {

// ns from the origin of cycles of clock c, as babeltrace2 computes it (the
// offset and the value converted separately, each through a double when the
// frequency is not 1 GHz).
class ClockConverter {
public:
	ClockConverter() = default;
	explicit ClockConverter(const Clock &c);
	// Wraps (defined, never trapped) where a corrupt trace's value is beyond
	// any real time.
	int64_t ns(uint64_t cycles) const
	{
		if (ghz_)
			return static_cast<int64_t>(static_cast<uint64_t>(base_ns_) + cycles);
		const double d = (1e9 * static_cast<double>(cycles)) / static_cast<double>(freq_);
		const uint64_t n = d < 0x1p64 ? static_cast<uint64_t>(d) : UINT64_MAX;
		return static_cast<int64_t>(static_cast<uint64_t>(base_ns_) + n);
	}

	// Many clock values compared with one time t (is ns(c) < t?) without
	// converting each: the values below `below` are before t, those from
	// `below` to `known` are not, the others are converted (ns() is known to
	// grow with the value, without overflow, only below `known`).
	struct Before {
		int64_t t = 0;
		uint64_t below = 0, known = 0;
		bool operator()(const ClockConverter &c, uint64_t cycles) const
		{
			return cycles < below || (cycles >= known && c.ns(cycles) < t);
		}
	};
	Before before(int64_t t) const;

private:
	int64_t base_ns_ = 0;
	uint64_t freq_ = 1000000000;
	bool ghz_ = true;
	uint64_t known_ = uint64_t{1} << 61; // Before::known
};

struct Trace {
	std::string dir;  // the directory
	std::string name; // babeltrace2's trace name: hostname[/relative path]
	std::string metadata_path;
	TraceClass cls;
	std::unique_ptr<TracePlans> plans;
	uint8_t uuid[16] = {};
	bool has_uuid = false;
	// Where each packet header's `uuid` is: its byte offset in the packet,
	// or found in the header's values, or none.
	static constexpr int64_t kUuidInValues = -1, kNoUuid = -2;
	int64_t uuid_at = kNoUuid;
	std::string hostname; // env.hostname, "" when absent
	bool has_hostname = false;
};

struct PacketEntry {
	uint64_t offset = 0; // bytes, in the file
	uint64_t content_bits = 0, packet_bits = 0;
	uint64_t data_bit = 0; // where the events start, in bits from the packet's start
	PacketFields f;
};

class Stream;

// An event of a noted class in a run of counted events (TraceSet::note_events_of).
struct NotedEvent {
	uint32_t cls = 0;    // its class's index in its stream (Stream::event_class)
	uint64_t seq = 0;    // its place (Item::seq)
	uint64_t bits = 0;   // its size, header included
	uint64_t cycles = 0; // its clock value
};

// counted: a run of events of one stream and packet that were counted
// (TraceSet::count_events_of), all after the items given before it and
// before those given after it.
enum class ItemKind : uint8_t { event, discarded_events, discarded_packets, counted };

struct Item {
	ItemKind kind = ItemKind::event;
	const Stream *stream = nullptr;
	int64_t ns = 0;      // event: its time; discarded: the beginning of the range
	uint64_t cycles = 0; // event: its clock value
	uint64_t bits = 0;   // event: its size in the stream, header included; counted: theirs
	// event: its place among all events given or counted (1, 2, ...);
	// counted: the place of the run's first event
	uint64_t seq = 0;
	// event
	const TracePlans::EventPlans *event = nullptr;
	std::span<const Value> packet_context, stream_context, context, fields; // counted: packet_context only
	// discarded events / packets, counted events: how many
	uint64_t count = 0;
	// counted: the run's events of noted classes, in order
	std::span<const NotedEvent> noted;
	int64_t end_ns = 0;
	uint64_t begin_cycles = 0, end_cycles = 0;
	bool has_range = false;
};

class StreamFile;

// One data stream: the packets of its file(s), and the decoding position.
class Stream {
public:
	const Trace &trace() const { return *trace_; }
	const TracePlans::StreamPlans &plans() const { return *plans_; }
	uint64_t class_id() const { return plans_->cls->id; }
	uint64_t id() const { return id_; }
	const std::string &name() const { return name_; } // the (first) file's path
	const ClockConverter &clock() const { return clock_; }
	bool has_clock() const { return plans_->clock != nullptr; }
	// Its place among the TraceSet's streams (0, 1, ...), for per-stream state of callers.
	size_t index() const { return order_; }
	// The packet of the item it gave last (null before its first); the same
	// entry, rewritten, for each of its packets.
	const PacketEntry *packet() const { return packet_; }
	// How many packets it has reached (1 for the first): tells a new packet.
	uint64_t packets_reached() const { return packets_reached_; }

	// The events of one class counted without items (TraceSet::count_events_of).
	struct Tally {
		uint64_t events = 0, bits = 0;
		uint64_t first_cycles = 0, last_cycles = 0; // the first's and the last's clock values
		uint64_t first_seq = 0, last_seq = 0;       // and their places in the order (Item::seq)
	};
	// By event class, as event_class(k) (empty unless counting).
	const std::vector<Tally> &tallies() const { return tallies_; }

	// Its event classes, by index: the index of tallies() and class_index().
	size_t event_classes() const { return plans_->events.size(); }
	const EventClass &event_class(size_t k) const { return *plans_->events[k].cls; }
	// The index among them of an event item's class (it.event of this stream).
	size_t class_index(const Item &it) const { return static_cast<size_t>(it.event - plans_->events.data()); }
	// Whether its event headers have LTTng's compact layout (read without running the header's plan).
	bool compact_header() const { return plans_->event_header.compact_header; }

private:
	friend class TraceSet;
	const Trace *trace_ = nullptr;
	const TracePlans::StreamPlans *plans_ = nullptr;
	uint64_t id_ = 0;
	std::string name_;
	ClockConverter clock_;
	std::vector<const StreamFile *> files_; // in the order read
	// iteration: file_ is files_[next_file_ - 1], its next packet at next_offset_
	size_t next_file_ = 0;
	const StreamFile *file_ = nullptr;
	uint64_t next_offset_ = 0;
	PacketEntry entry_, prev_entry_;           // the current packet's, the one before's
	const PacketEntry *packet_ = nullptr;      // &entry_ once a packet is reached
	const PacketEntry *prev_packet_ = nullptr; // &prev_entry_ from the second
	uint64_t packets_reached_ = 0;
	uint64_t pos_ = 0, end_ = 0; // bits, from the current packet's start
	DecodeState st_;
	bool pending_events_msg_ = false, pending_packets_msg_ = false;
	size_t order_ = 0; // creation order: the last tie-break
	std::vector<Value> packet_values_, stream_values_, context_values_, field_values_;
	// What an event class's scopes after its header take, by index in
	// plans_->events, made by start(): whether its payload is decoded, and
	// whether all of them are one step (no event context, of its own or its
	// stream's, and a payload that is empty or stepped over by its size).
	// counted: its events are counted, not given (no values decoded); plain:
	// counted, and all after its header is a plain payload struct
	// (Op::plain: detail::run_plain steps over it); one_string: that struct
	// is fixed-size members (`bits` from its alignment, each aligned on a
	// divisor of it), one string, then byte-aligned fixed-size members
	// (`tail` bits), stepped over as run_plain would, without its loop;
	// repeat: counted, simple or one_string, its id one of the compact
	// header's: a run of its events is counted in a loop of its own.
	struct ClassStep {
		bool fields = true;
		bool counted = false;
		bool noted = false; // counted, and listed in its run's item (Item::noted)
		bool simple = false;
		bool plain = false;
		bool one_string = false;
		bool repeat = false;
		uint64_t align = 1, bits = 0; // simple: the step; plain: the struct's alignment
		uint64_t tail = 0;
	};
	std::vector<ClassStep> steps_;
	// By a compact event header's 5-bit id (31: extended): the index in
	// plans_->events of its class + 1; 0 for none, and for all when the
	// header is not compact (count_run reads the compact ones).
	std::array<uint32_t, 32> compact_{};
	Item item_;
	// counting
	std::vector<Tally> tallies_;
	uint64_t run_events_ = 0, run_bits_ = 0, run_first_seq_ = 0; // counted since its last `counted` item
	std::vector<NotedEvent> noted_;                              // of the run counted since
};

class TraceSet {
public:
	TraceSet();
	~TraceSet();
	TraceSet(const TraceSet &) = delete;
	TraceSet &operator=(const TraceSet &) = delete;

	// Opens the trace in dir (its metadata, its stream files and their first
	// packets). name_suffix: the trace's path relative to what was asked for
	// ("" for the directory itself). Throws ReadError.
	void add_trace(const std::string &dir, const std::string &name_suffix);
	const std::vector<std::unique_ptr<Trace>> &traces() const { return traces_; }
	size_t streams() const { return streams_.size(); }
	// Files skipped because empty.
	const std::vector<std::string> &empty_files() const { return empty_files_; }
	// Bytes of all stream files, and of the packets reached so far (for progress).
	uint64_t bytes_total() const { return bytes_total_; }
	uint64_t bytes_done() const { return bytes_done_; }

	// Which event classes' payloads (`fields`) next() decodes: by default
	// all; after this, only those of the classes `want` accepts (asked once
	// per class and stream). The others' payloads are stepped over (checked
	// as strictly: run_plan) and their items have no field values; their
	// size, time and contexts are the same. Before start().
	using FieldsWanted = std::function<bool(const Trace &, const EventClass &)>;
	void decode_fields_of(FieldsWanted want) { fields_wanted_ = std::move(want); }

	// Which event classes are only counted: after this, next() gives no
	// item for the events of the classes `counted` accepts (asked once per
	// class and stream; their payloads and contexts are stepped over as
	// decode_fields_of's, with the same errors). Each stream tallies them
	// (Stream::tallies()), and next() gives their runs as `counted` items:
	// one at the end of each packet that has such events not yet given, and
	// one for each stream that has some before any other item. A damaged
	// packet's ReadError comes after the items of the runs counted before it
	// (as the events before it come first without counting), then again at
	// every next(). Before start(), for traces read from files.
	using Counted =
		std::function<bool(const Trace &, const TracePlans::StreamPlans &, const TracePlans::EventPlans &)>;
	void count_events_of(Counted counted) { counted_ = std::move(counted); }
	// Of the counted classes, those whose events a run's item also lists
	// (Item::noted: class, place, size and clock value, no values decoded;
	// at most a packet's events). Before start().
	void note_events_of(Counted noted) { noted_ = std::move(noted); }
	const Stream &stream(size_t i) const { return *streams_[i]; }

	// Then: the items of all streams in order. next() returns null at the
	// end. Throws ReadError.
	void start();
	const Item *next();

	// Live reading (see the top). A trace from its metadata text (label: what
	// errors name). Throws ReadError.
	Trace &add_text_trace(const std::string &metadata, const std::string &label, const std::string &name);
	// The trace's metadata grown (the whole text): the trace made again, with
	// its classes and plans, in its place, and its streams moved to it (the
	// old one is kept: items given stay valid). Throws ReadError.
	Trace &update_text_trace(Trace &t, const std::string &metadata);
	// After update_text_trace: the event next_of(s) gave last, which the
	// caller still holds (next_of(s) not called since), decoded again with
	// the new plans (the same values, its event class now the new plans').
	void redecode(Stream &s);
	// A stream of the trace, empty; its first packet gives its class and id.
	Stream &add_memory_stream(Trace &t, const std::string &name);
	// Copies one whole packet to the end of the stream, checked as a stream
	// file's are (and of the stream's class). Only the packets the stream is
	// still reading are kept. Throws ReadError.
	void append_packet(Stream &s, std::span<const uint8_t> packet);
	// The stream's next item (valid until next_of(s) again), or null when it
	// has none until another packet comes. Throws ReadError.
	const Item *next_of(Stream &s);
	// babeltrace2's order of the current items of two streams.
	bool before(const Stream &a, const Stream &b) const;

private:
	// How each event class of s's stream class is read (steps_): stepped over
	// or decoded. Whenever s gets plans: at start(), a memory stream's first
	// packet, metadata that grew.
	void plan_steps(Stream &s) const;
	bool advance(Stream &s);
	bool load_packet(Stream &s);
	void decode_event(Stream &s);
	const Item *next_counting();
	const Item *next_counting_merge();
	bool count_run(Stream &s);
	const Item *run_item(Stream &s);
	bool less(const Stream *a, const Stream *b) const;
	bool tie_less(const Stream *a, const Stream *b) const;
	void sift_down(size_t i);
	void sift_up(size_t i);
	// The stream at the top of the heap moved on: back into its place if it has a next event (more), else out.
	void settle_top(bool more);

	std::vector<std::unique_ptr<Trace>> traces_;
	std::vector<std::unique_ptr<StreamFile>> files_;
	std::vector<std::unique_ptr<Stream>> streams_;
	std::vector<std::string> empty_files_;
	std::vector<Stream *> heap_;
	Stream *last_ = nullptr; // the stream of the item returned last (to advance)
	FieldsWanted fields_wanted_;
	Counted counted_, noted_;
	uint64_t seq_ = 0;           // the events given or counted
	std::vector<Stream *> runs_; // counting: the streams with events counted and not yet given as an item
	std::vector<Stream *> owed_; // counting: their items, owed before held_
	const Item *held_ = nullptr;
	std::optional<ReadError> failed_; // counting: thrown once owed_ is given
	Item run_item_;
	std::vector<Value> scratch_; // index_packet's
	uint64_t bytes_total_ = 0, bytes_done_ = 0;
	std::vector<std::unique_ptr<Trace>> retired_traces_;                    // replaced by update_text_trace
	std::map<std::pair<const Trace *, uint64_t>, uint64_t> next_memory_id_; // ids of streams without one
};

} // namespace tracery::ctf::reader
