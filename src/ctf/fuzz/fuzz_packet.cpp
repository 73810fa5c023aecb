// ctf/fuzz/fuzz_packet.cpp — libFuzzer target: arbitrary bytes as a stream
// file of a trace whose metadata (seeds/fuzz_tsdl/forged, built in here)
// uses every construct the decoder runs: bit fields in both orders,
// variants, enums, nested arrays, sequences, strings, text arrays, floats,
// and a plain struct with a string (which counting steps over by itself).
// The whole trace is read through TraceSet (packets, events, merge):
// each outcome is the events or a ReadError naming the file and an offset
// inside it; never a crash, a hang or unbounded memory. It is read three
// times: decoding every payload, stepping over every payload, and over
// those of event "a" only; the three readings give the same items (times,
// sizes, contexts) and the same error. Then counted (TraceSet::
// count_events_of, every event class): the same events, bytes, first and
// last clock values per class, losses and error as the events read one by
// one (up to the error: a damaged packet is found when reached). Every
// decoded scope is also walked through the field API (fields.hpp) as the
// printer walks it: each field read is one of the scope's values, each
// member and element starts where the one before it ended, and the root
// ends with the scope's last value.
#include "base/fuzz_check.hpp"
#include "ctf/reader/fields.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

using namespace tracery::ctf::reader;

namespace {

std::string make_dir()
{
	char tmpl[] = "/tmp/fuzz-packet-XXXXXX";
	const char *d = mkdtemp(tmpl);
	tracery::base::fuzz_check(d != nullptr, "fuzz_packet", "mkdtemp");
	std::ofstream(std::string(d) + "/metadata") << R"(/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 5; align = 1; signed = false; } := uint5_t;
trace { major = 1; minor = 8; byte_order = le;
	packet.header := struct { uint32_t magic; uint32_t stream_id; uint64_t stream_instance_id; } align(8); };
env { hostname = "fuzz"; };
clock { name = "c"; freq = 1000000; offset_s = 10; offset = 5; };
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := clk64;
typealias integer { size = 27; align = 1; signed = false; map = clock.c.value; } := clk27;
stream { id = 0;
	packet.context := struct { clk64 timestamp_begin; clk64 timestamp_end; uint64_t content_size;
		uint64_t packet_size; uint64_t packet_seq_num; uint64_t events_discarded; uint32_t cpu_id; };
	event.header := struct { enum : uint5_t { compact = 0 ... 30, extended = 31 } id;
		variant <id> { struct { clk27 timestamp; } compact; struct { uint32_t id; clk64 timestamp; } extended; } v; } align(8);
};
event { name = "a"; id = 0; stream_id = 0; fields := struct {
	integer { size = 3; align = 1; signed = true; byte_order = be; } b3;
	integer { size = 61; align = 1; signed = false; } b61;
	enum : uint8_t { A = 0, B = 1 ... 5 } e;
	variant <e> { string A; floating_point { exp_dig = 8; mant_dig = 24; align = 32; } B; } v;
	uint16_t n;
	struct { uint8_t k; string s; } arr[n];
	integer { size = 8; align = 8; signed = false; encoding = UTF8; } txt[n];
	uint8_t m[2][3];
	floating_point { exp_dig = 11; mant_dig = 53; align = 64; byte_order = be; } d;
}; };
event { name = "b"; id = 1; stream_id = 0; fields := struct { }; };
event { name = "c"; id = 2; stream_id = 0; fields := struct { uint16_t x; string s; uint32_t y; }; };
)";
	return d;
}

// What one reading of the trace gave: each item's kind, time, size, count
// and context values, then the error (file, offset, message) if any.
struct Reading {
	std::vector<uint64_t> items;
	std::string error;
	bool operator==(const Reading &) const = default;
};

// Reads f and what it holds as a reader of fields does; returns the index
// after its values (f.end(), checked against the walk).
size_t walk(const Field &f, size_t size)
{
	tracery::base::fuzz_check(f.index() < size, "fuzz_packet", "a field is one of its scope's values");
	size_t end = f.index() + 1;
	switch (f.kind()) {
	case FieldKind::integer:
		f.for_each_label([](const std::string &) {});
		break;
	case FieldKind::string: { // (its bytes are in the mapped file)
		unsigned sum = 0;
		for (const char c : f.text())
			sum += static_cast<unsigned char>(c);
		tracery::base::fuzz_check(sum <= 255 * f.text().size(), "fuzz_packet", "text is read");
		break;
	}
	case FieldKind::structure:
		for (const Field m : f.members()) {
			tracery::base::fuzz_check(m.index() == end, "fuzz_packet", "a member follows the one before");
			end = walk(m, size);
		}
		break;
	case FieldKind::array:
		for (const Field e : f.elements()) {
			tracery::base::fuzz_check(e.index() == end, "fuzz_packet", "an element follows the one before");
			end = walk(e, size);
		}
		break;
	case FieldKind::variant:
		tracery::base::fuzz_check(f.option_index() < f.decl().option_count(), "fuzz_packet", "an option");
		end = walk(f.option(), size);
		break;
	default:
		break;
	}
	tracery::base::fuzz_check(f.end() == end, "fuzz_packet", "a field ends where its walk ends");
	return end;
}

// skip: the event classes (one letter each) whose payloads are stepped over, not decoded.
Reading read(const std::string &dir, const std::string &stream, size_t size, std::string_view skip)
{
	const auto decoded = [&](const EventClass &cls) { return skip.find(cls.name) == std::string_view::npos; };
	Reading r;
	try {
		TraceSet set;
		set.add_trace(dir, "");
		if (!skip.empty())
			set.decode_fields_of([&](const Trace &, const EventClass &cls) { return decoded(cls); });
		set.start();
		while (const Item *it = set.next()) {
			if (it->kind == ItemKind::event) {
				tracery::base::fuzz_check(
					decoded(*it->event->cls) ? it->fields.size() >= 1 : it->fields.empty(),
					"fuzz_packet", "an event has its fields' struct, unless stepped over");
				for (const Scope sc : {Scope::packet_context, Scope::stream_event_context,
				                       Scope::event_context, Scope::payload})
					if (const Field root = scope_field(*it, sc))
						tracery::base::fuzz_check(walk(root, scope_values(*it, sc).size()) ==
						                                  scope_values(*it, sc).size(),
						                          "fuzz_packet",
						                          "a scope's walk reads all its values");
			}
			r.items.insert(r.items.end(),
			               {static_cast<uint64_t>(it->kind), static_cast<uint64_t>(it->ns), it->bits,
			                it->count, it->packet_context.size(), it->stream_context.size()});
			for (const Value &v : it->packet_context)
				r.items.push_back(v.u);
		}
	} catch (const ReadError &e) {
		tracery::base::fuzz_check(e.file() == stream || e.file() == dir + "/metadata", "fuzz_packet",
		                          "the error names the file");
		tracery::base::fuzz_check(e.offset() <= size, "fuzz_packet", "the error's offset is inside the file");
		r.error = e.file() + ":" + std::to_string(e.offset()) + ": " + e.what();
	}
	return r;
}

// Per event class its events, bits, first and last clock values (in the
// order read), the losses' items, the error: read event by event, or counted.
struct Counts {
	std::map<std::string, std::array<uint64_t, 4>> classes;
	std::vector<uint64_t> losses;
	std::string error;
	bool operator==(const Counts &) const = default;
};

Counts count(const std::string &dir, bool counting)
{
	Counts c;
	TraceSet set;
	uint64_t runs = 0;
	try {
		set.add_trace(dir, "");
		if (counting)
			set.count_events_of([](const Trace &, const TracePlans::StreamPlans &,
			                       const TracePlans::EventPlans &) { return true; });
		set.start();
		while (const Item *it = set.next()) {
			if (it->kind == ItemKind::counted) {
				runs += it->count;
			} else if (it->kind == ItemKind::event) {
				tracery::base::fuzz_check(!counting, "fuzz_packet", "a counted event given as an item");
				std::array<uint64_t, 4> &k = c.classes[it->event->cls->name];
				k[2] = k[0] ? k[2] : it->cycles;
				++k[0];
				k[1] += it->bits;
				k[3] = it->cycles;
			} else {
				c.losses.insert(c.losses.end(), {static_cast<uint64_t>(it->kind), it->count});
			}
		}
	} catch (const ReadError &e) {
		c.error = e.file() + ":" + std::to_string(e.offset()) + ": " + e.what();
	}
	// The events counted, up to the end or to the error (a packet found
	// damaged when reached: the events before it were counted, as they were
	// given one by one).
	uint64_t tallied = 0;
	for (size_t i = 0; counting && i < set.streams(); ++i) {
		const Stream &s = set.stream(i);
		for (size_t k = 0; k < s.tallies().size(); ++k) {
			const Stream::Tally &t = s.tallies()[k];
			if (!t.events)
				continue;
			tallied += t.events;
			std::array<uint64_t, 4> &n = c.classes[s.event_class(k).name];
			n = {n[0] + t.events, n[1] + t.bits, n[0] ? n[2] : t.first_cycles, t.last_cycles};
		}
	}
	// (after an error, the run it ended has not come as an item)
	tracery::base::fuzz_check(c.error.empty() ? runs == tallied : runs <= tallied, "fuzz_packet",
	                          "the runs' events are the tallies'");
	return c;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const std::string dir = make_dir();
	const std::string stream = dir + "/stream";
	{
		const int fd = ::open(stream.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		tracery::base::fuzz_check(fd >= 0, "fuzz_packet", "open");
		tracery::base::fuzz_check(::write(fd, data, size) == static_cast<ssize_t>(size), "fuzz_packet",
		                          "write");
		::close(fd);
	}
	// Decoded, and with payloads stepped over (the skipping mode of
	// `tracery stats`): the same items and the same error.
	const Reading full = read(dir, stream, size, "");
	tracery::base::fuzz_check(read(dir, stream, size, "abc") == full, "fuzz_packet",
	                          "stepping over every payload reads as decoding them");
	tracery::base::fuzz_check(read(dir, stream, size, "a") == full, "fuzz_packet",
	                          "stepping over a's payloads reads as decoding them");
	tracery::base::fuzz_check(count(dir, true) == count(dir, false), "fuzz_packet",
	                          "counting reads as giving every event");
	return 0;
}
