// ctf/ctf_roundtrip_test.cpp — writes a whole trace with tracery_ctf, reads it
// back with babeltrace2 (CLI text output, and the bt2 Python bindings through
// ctf_roundtrip_dump.py) and checks it value by value.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ctf/event_header.hpp"
#include "ctf/metadata.hpp"
#include "ctf/trace_dir.hpp"
#include "event/context.hpp"
#include "event/payload.hpp"
#include "tracery/tracepoint.h"

// An event declared with the public macros: its descriptor is what the
// runtime would hand to the writer.
TRACERY_ENUM_LABELS(rt_color, {"red", 0, 0}, {"green", 1, 1}, {"blue \"b\"", 2, 2});
TRACERY_EVENT(rt, macro_event, TRACERY_U64(id), TRACERY_STRING(path), TRACERY_SEQUENCE(S32, values),
              TRACERY_ENUM(rt_color, U8, color), TRACERY_BLOB(data), TRACERY_ARRAY(U16, arr, 3), TRACERY_BOOL(flag),
              TRACERY_DOUBLE(ratio))

using namespace tracery::ctf;

namespace {

constexpr int64_t kClockOffsetNs = 1700000000123456789; // 2023-11-14T22:13:20.123456789Z
constexpr const char *kProcname = "rt-proc\xff";        // invalid UTF-8: recorded as "rt-proc?"
constexpr int32_t kVpid = 4242;

std::string hex(std::string_view s)
{
	static constexpr char kHex[] = "0123456789abcdef";
	std::string out;
	for (unsigned char c : s) {
		out += kHex[c >> 4];
		out += kHex[c & 15];
	}
	return out;
}

std::string str_value(std::string_view s) { return "s:" + hex(s); }

std::string real_value(double v)
{
	if (std::isnan(v))
		return "nan";
	uint64_t bits;
	std::memcpy(&bits, &v, 8);
	char buf[17];
	snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(bits));
	return buf;
}

// Expected "{name=value,...}" text of a structure, in the dump's format.
class Fields {
public:
	template <class T>
	Fields &num(const char *name, T v)
	{
		return add(name, std::to_string(v));
	}
	Fields &real(const char *name, double v) { return add(name, real_value(v)); }
	Fields &str(const char *name, std::string_view v) { return add(name, str_value(v)); }
	Fields &enm(const char *name, const std::string &v, const std::vector<std::string> &labels)
	{
		std::string s = v + "{";
		for (size_t i = 0; i < labels.size(); ++i)
			s += (i ? ",\"" : "\"") + labels[i] + "\"";
		return add(name, s + "}");
	}
	template <class T>
	Fields &arr(const char *name, const std::vector<T> &v)
	{
		std::string s = "[";
		for (size_t i = 0; i < v.size(); ++i)
			s.append(i ? "," : "").append(std::to_string(v[i]));
		return add(name, s + "]");
	}
	Fields &raw(const char *name, std::string v) { return add(name, std::move(v)); }
	std::string text() const { return "{" + body_ + "}"; }

private:
	Fields &add(const char *name, const std::string &v)
	{
		if (!body_.empty())
			body_ += ",";
		body_ += std::string(name) + "=" + v;
		return *this;
	}
	std::string body_;
};

template <class T>
tracery_arg val(const T &v)
{
	return tracery_arg{&v, 0};
}

tracery_arg cstr(const char *s) { return tracery_arg{s, s ? static_cast<uint32_t>(strlen(s)) : 0}; }

// Encodes the events of one stream into packets and records the lines the
// dump script must print for that stream.
class StreamBuilder {
public:
	StreamBuilder(uint32_t stream_class, uint64_t instance, tracery::event::ContextOptions ctx, uint32_t cpu)
		: sc_(stream_class), instance_(instance), ctx_(ctx), cpu_(cpu)
	{
		expected_.push_back("B " + sid());
	}

	void begin_packet(uint64_t ts_begin)
	{
		bytes_.clear();
		info_ = PacketInfo{};
		info_.timestamp_begin = ts_begin;
		info_.cpu_id = cpu_;
		info_.seq = seq_;
		prev_ts_ = ts_begin;
		packet_lines_.clear();
		packet_lines_.push_back("P " + sid() + " " + std::to_string(ts_begin) +
		                        " {cpu_id=" + std::to_string(cpu_) + "}");
	}

	// Appends one event; the header is compact when a reader can decode it.
	void event(uint32_t id, uint64_t ts, const tracery_event_desc &desc, const tracery_arg *args,
	           const std::string &expected_payload)
	{
		const tracery::event::EventLayout layout(desc);
		ASSERT_TRUE(layout.valid());
		const bool compact = can_use_compact_header(id, prev_ts_, ts);
		(compact ? compact_events : extended_events)++;
		const size_t size =
			event_header_size(compact) + tracery::event::context_size(ctx_) + layout.payload_size(args);
		const size_t off = bytes_.size();
		bytes_.resize(off + size);
		uint8_t *p = bytes_.data() + off;
		write_event_header(p, id, ts, compact);
		p += event_header_size(compact);
		char procname[tracery::event::kProcnameSize] = {};
		strncpy(procname, kProcname, sizeof procname - 1);
		tracery::event::write_context(p, ctx_, kVpid, static_cast<int32_t>(1000 + sc_), procname);
		p += tracery::event::context_size(ctx_);
		p = layout.write_payload(p, args);
		ASSERT_EQ(p, bytes_.data() + bytes_.size());
		prev_ts_ = ts;

		std::string ctx = "-";
		if (ctx_.vpid || ctx_.vtid || ctx_.procname) {
			Fields f;
			if (ctx_.vpid)
				f.num("vpid", kVpid);
			if (ctx_.vtid)
				f.num("vtid", 1000 + sc_);
			if (ctx_.procname)
				f.str("procname", "rt-proc?");
			ctx = f.text();
		}
		packet_lines_.push_back("E " + sid() + " " + std::to_string(ts) + " " +
		                        std::to_string(kClockOffsetNs + static_cast<int64_t>(ts)) + " " +
		                        desc.provider + ":" + desc.name + " " + ctx + " " + expected_payload);
	}

	// Writes the packet; `discarded` is the stream's running total.
	void end_packet(StreamWriter &w, uint64_t ts_end, uint64_t discarded)
	{
		info_.timestamp_end = ts_end;
		info_.events_discarded = discarded;
		if (discarded != discarded_) {
			expected_.push_back("D " + sid() + " " + std::to_string(discarded - discarded_) + " " +
			                    std::to_string(prev_end_) + " " + std::to_string(ts_end));
			discarded_ = discarded;
		}
		expected_.insert(expected_.end(), packet_lines_.begin(), packet_lines_.end());
		expected_.push_back("Q " + sid() + " " + std::to_string(ts_end));
		prev_end_ = ts_end;
		// Two pieces, as a ring buffer that wraps around would hand them over.
		const size_t half = bytes_.size() / 2;
		const iovec pieces[2] = {{bytes_.data(), half}, {bytes_.data() + half, bytes_.size() - half}};
		w.write_packet(info_, std::span<const iovec>(pieces, 2));
		++seq_;
	}

	std::vector<std::string> finish()
	{
		expected_.push_back("X " + sid());
		return expected_;
	}

	std::string sid() const { return std::to_string(sc_) + " " + std::to_string(instance_); }

	int compact_events = 0;
	int extended_events = 0;

private:
	uint32_t sc_;
	uint64_t instance_;
	tracery::event::ContextOptions ctx_;
	uint32_t cpu_;
	std::vector<uint8_t> bytes_;
	PacketInfo info_;
	uint64_t prev_ts_ = 0;
	uint64_t seq_ = 0;
	uint64_t discarded_ = 0;
	uint64_t prev_end_ = 0;
	std::vector<std::string> packet_lines_;
	std::vector<std::string> expected_;
};

// tracery_fire() as the runtime would call it from TRACERY_EMIT: the test
// encodes the event straight into the current packet.
StreamBuilder *g_fire_stream;
uint32_t g_fire_id;
uint64_t g_fire_ts;
std::string g_fire_expected;

} // namespace

extern "C" void tracery_fire(struct tracery_event_desc *desc, const struct tracery_arg *args)
{
	g_fire_stream->event(g_fire_id, g_fire_ts, *desc, args, g_fire_expected);
}

// This object registers its events (tracepoint.h does so in every C++ file
// that includes it) with no runtime to register them with.
extern "C" void tracery_register_events(struct tracery_event_desc *const *, struct tracery_event_desc *const *) {}
extern "C" void tracery_unregister_events(struct tracery_event_desc *const *, struct tracery_event_desc *const *) {}

// No gate is ever installed here, so TRACERY_EMIT never calls this.
extern "C" void tracery_fire_gate_passed(struct tracery_event_desc *, const struct tracery_arg *, tracery_gate_fn)
{
	ADD_FAILURE() << "tracery_fire_gate_passed without a gate";
}

namespace {

// Field descriptors of the hand-made events.
const tracery_field_desc kIntsFields[] = {
	{"u8", TRACERY_TYPE_U8, 0, 0, nullptr},   {"u16", TRACERY_TYPE_U16, 0, 0, nullptr},
	{"u32", TRACERY_TYPE_U32, 0, 0, nullptr}, {"u64", TRACERY_TYPE_U64, 0, 0, nullptr},
	{"s8", TRACERY_TYPE_S8, 0, 0, nullptr},   {"s16", TRACERY_TYPE_S16, 0, 0, nullptr},
	{"s32", TRACERY_TYPE_S32, 0, 0, nullptr}, {"s64", TRACERY_TYPE_S64, 0, 0, nullptr},
};
const tracery_event_desc kInts{"rt", "ints", kIntsFields, 8, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

const tracery_field_desc kRealsFields[] = {
	{"f", TRACERY_TYPE_FLOAT, 0, 0, nullptr},
	{"d", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},
	{"b", TRACERY_TYPE_BOOL, 0, 0, nullptr},
};
const tracery_event_desc kReals{"rt", "reals", kRealsFields, 3, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

const tracery_field_desc kStringsFields[] = {
	{"s1", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"s2", TRACERY_TYPE_STRING, 0, 0, nullptr},
};
const tracery_event_desc kStrings{"rt", "strings", kStringsFields, 2, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

const tracery_enum_entry kSignedEntries[] = {
	{"minus", INT32_MIN, -1}, {"zero", 0, 0}, {"small", 1, 9}, {"odd \"q\" \\ é", 7, 7}, {"", 100, 100},
};
const tracery_enum_desc kSignedEnum{"signed_enum", kSignedEntries, 5};
const tracery_enum_entry kU64Entries[] = {{"max", -1, -1}, {"low", 0, 10}};
const tracery_enum_desc kU64Enum{"u64_enum", kU64Entries, 2};
// For a U8 enum: an entry below 0 is dropped, one past 255 is clipped.
const tracery_enum_entry kClipEntries[] = {{"neg", -5, -1}, {"big", 250, 300}, {"ok", 3, 3}};
const tracery_enum_desc kClipEnum{"clip_enum", kClipEntries, 3};

const tracery_field_desc kContainersFields[] = {
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S32, 3, nullptr},
	{"seq16", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U16, 0, nullptr},
	{"seq64", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_S64, 0, nullptr},
	{"blob", TRACERY_TYPE_BLOB, 0, 0, nullptr},
	{"es", TRACERY_TYPE_ENUM, TRACERY_TYPE_S32, 0, &kSignedEnum},
	{"eu", TRACERY_TYPE_ENUM, TRACERY_TYPE_U64, 0, &kU64Enum},
	{"dseq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_DOUBLE, 0, nullptr},
	{"clip", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &kClipEnum},
};
const tracery_event_desc kContainers{"rt",    "containers", kContainersFields, 8, 0, nullptr,
                                     nullptr, nullptr,      TRACERY_GATE_ARGS};

// Names that are TSDL keywords, not identifiers, duplicated, or colliding
// with the generated count field of a sequence.
const tracery_field_desc kWeirdFields[] = {
	{"struct", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"Bool", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"my-field", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"1st", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"x", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"x", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"gr\xc3\xb6\xc3\x9f"
         "e",
         TRACERY_TYPE_U8, 0, 0, nullptr},
	{"s", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U8, 0, nullptr},
	{"_s_length", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"uint32_t", TRACERY_TYPE_U8, 0, 0, nullptr},
};
const tracery_event_desc kWeird{"rt",    "weird \"names\"", kWeirdFields,     11, 0, nullptr,
                                nullptr, nullptr,           TRACERY_GATE_ARGS};

const tracery_field_desc kExtendedFields[] = {{"v", TRACERY_TYPE_U32, 0, 0, nullptr}};
const tracery_event_desc kExtendedOnly{"rt",    "extended_only", kExtendedFields,  1, 0, nullptr,
                                       nullptr, nullptr,         TRACERY_GATE_ARGS};

const tracery_event_desc kNoFields{"rt", "no_fields", nullptr, 0, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

// Stream class 1, appended to the metadata later (as on dlopen).
const tracery_field_desc kLateFields[] = {{"a", TRACERY_TYPE_U64, 0, 0, nullptr},
                                          {"b", TRACERY_TYPE_U32, 0, 0, nullptr}};
const tracery_event_desc kLate{"rt", "late", kLateFields, 2, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
const tracery_field_desc kLateStrFields[] = {{"msg", TRACERY_TYPE_STRING, 0, 0, nullptr}};
const tracery_event_desc kLateStr{"rt", "late_str", kLateStrFields, 1, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

struct Trace {
	std::string dir;
	std::map<std::string, std::vector<std::string>> expected; // per "stream_class instance"
	int total_events = 0;
	int compact_events = 0;
	int extended_events = 0;
};

// Event ids in stream class 0 (0..30 can use compact headers).
constexpr uint32_t kIdInts = 0, kIdReals = 1, kIdStrings = 2, kIdContainers = 3, kIdMacro = 4, kIdWeird = 30,
		   kIdExtendedOnly = 31, kIdNoFields = 1000;
// Event ids in stream class 1.
constexpr uint32_t kIdLate = 0, kIdLateStr = 1;

constexpr uint64_t kT0 = 5'000'000'000; // first timestamp of stream 0 (ns on the clock)

void ints_event(StreamBuilder &s, uint64_t ts, uint8_t u8, uint16_t u16, uint32_t u32, uint64_t u64, int8_t s8,
                int16_t s16, int32_t s32, int64_t s64)
{
	const tracery_arg a[] = {val(u8), val(u16), val(u32), val(u64), val(s8), val(s16), val(s32), val(s64)};
	s.event(kIdInts, ts, kInts, a,
	        Fields().num("u8", u8)
	                .num("u16", u16)
	                .num("u32", u32)
	                .num("u64", u64)
	                .num("s8", s8)
	                .num("s16", s16)
	                .num("s32", s32)
	                .num("s64", s64)
	                .text());
}

void reals_event(StreamBuilder &s, uint64_t ts, float f, double d, bool b)
{
	const tracery_arg a[] = {val(f), val(d), val(b)};
	s.event(kIdReals, ts, kReals, a,
	        Fields().real("f", static_cast<double>(f)).real("d", d).num("b", b ? 1 : 0).text());
}

void strings_event(StreamBuilder &s, uint64_t ts, tracery_arg a1, tracery_arg a2, std::string_view e1,
                   std::string_view e2)
{
	const tracery_arg a[] = {a1, a2};
	s.event(kIdStrings, ts, kStrings, a, Fields().str("s1", e1).str("s2", e2).text());
}

// Stream class 0 (context vpid, vtid, procname), instance 0, cpu 0.
void emit_stream0(StreamBuilder &s, StreamWriter &w)
{
	const double inf = std::numeric_limits<double>::infinity();
	const float finf = std::numeric_limits<float>::infinity();
	const uint64_t T = kT0;

	// Packet 0: every field type, compact and extended headers.
	s.begin_packet(T);
	ints_event(s, T, 255, 65535, UINT32_MAX, UINT64_MAX, -128, -32768, INT32_MIN, INT64_MIN);
	ints_event(s, T + 10, 0, 1, 0x12345678, 0, 127, -1, INT32_MAX, INT64_MAX);
	reals_event(s, T + 20, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(), true);
	reals_event(s, T + 30, finf, -inf, false);
	reals_event(s, T + 40, -finf, inf, true);
	reals_event(s, T + 50, -0.0f, std::numeric_limits<double>::denorm_min(), false);
	reals_event(s, T + 60, std::numeric_limits<float>::max(), std::numeric_limits<double>::lowest(), true);
	reals_event(s, T + 70, 1.5f, -2.25, false);
	strings_event(s, T + 80, cstr(""), cstr(nullptr), "", "");
	strings_event(s, T + 90, cstr("h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80"),
	              cstr("\xff\xfe"
	                   "ab\xc3"),
	              "h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80", "??ab?");
	// A NUL inside the bytes an argument says it has (a string changed after the call site measured it) is
	// written as '?': the record keeps the size it was reserved with.
	strings_event(s, T + 100, cstr("quote \" backslash \\ tab\tnewline\n"), tracery_arg{"abc\0def", 7},
	              "quote \" backslash \\ tab\tnewline\n", "abc?def");
	strings_event(s, T + 110, tracery_arg{"truncated", 5}, cstr("\x01\x1f\x7f"), "trunc", "\x01\x1f\x7f");

	// More than 2^27 ns later: needs an extended header.
	const uint64_t T2 = T + (uint64_t{1} << 27) + 12345;
	{
		const int32_t arr[3] = {-1, 0, INT32_MAX};
		const uint16_t seq16[4] = {0, 1, 65535, 7};
		const int64_t seq64[2] = {INT64_MIN, -5};
		const uint8_t blob[5] = {0x00, 0xFF, 0x10, 0xAB, 0x7F};
		const int32_t es = 7;
		const uint64_t eu = UINT64_MAX;
		const double dseq[2] = {0.5, -inf};
		const uint8_t clip = 255;
		const tracery_arg a[] = {{arr, 3}, {seq16, 4}, {seq64, 2}, {blob, 5},
		                         val(es),  val(eu),    {dseq, 2},  val(clip)};
		s.event(kIdContainers, T2, kContainers, a,
		        Fields().arr("arr", std::vector<int64_t>{-1, 0, INT32_MAX})
		                .num("_seq16_length", 4)
		                .arr("seq16", std::vector<int>{0, 1, 65535, 7})
		                .num("_seq64_length", 2)
		                .arr("seq64", std::vector<int64_t>{INT64_MIN, -5})
		                .num("_blob_length", 5)
		                .arr("blob", std::vector<int>{0, 255, 16, 171, 127})
		                .enm("es", "7", {"odd \"q\" \\ \xc3\xa9", "small"})
		                .enm("eu", std::to_string(UINT64_MAX), {"max"})
		                .num("_dseq_length", 2)
		                .raw("dseq", "[" + real_value(0.5) + "," + real_value(-inf) + "]")
		                .enm("clip", "255", {"big"})
		                .text());
	}
	{
		// Empty sequences, NULL blob and array, enum values with no or an empty label.
		const int32_t es = 100;
		const uint64_t eu = 11;
		const uint16_t none = 0;
		const uint8_t clip = 3;
		const tracery_arg a[] = {{nullptr, 3}, {&none, 0}, {nullptr, 5}, {nullptr, 0},
		                         val(es),      val(eu),    {nullptr, 0}, val(clip)};
		s.event(kIdContainers, T2 + 1, kContainers, a,
		        Fields().arr("arr", std::vector<int>{0, 0, 0})
		                .num("_seq16_length", 0)
		                .raw("seq16", "[]")
		                .num("_seq64_length", 0)
		                .raw("seq64", "[]")
		                .num("_blob_length", 0)
		                .raw("blob", "[]")
		                .enm("es", "100", {""})
		                .enm("eu", "11", {})
		                .num("_dseq_length", 0)
		                .raw("dseq", "[]")
		                .enm("clip", "3", {"ok"})
		                .text());
	}
	{
		// Through the public macros and tracery_fire().
		tracery_event__rt__macro_event.enabled = 1;
		const int32_t values[3] = {-3, 0, 3};
		const char data[2] = {'\x01', '\xfe'};
		const uint16_t arr[3] = {1, 2, 65535};
		g_fire_stream = &s;
		g_fire_id = kIdMacro;
		g_fire_ts = T2 + 2;
		g_fire_expected = Fields().num("id", 77)
		                          .str("path", "/index.html")
		                          .num("_values_length", 3)
		                          .arr("values", std::vector<int>{-3, 0, 3})
		                          .enm("color", "2", {"blue \"b\""})
		                          .num("_data_length", 2)
		                          .arr("data", std::vector<int>{1, 254})
		                          .arr("arr", std::vector<int>{1, 2, 65535})
		                          .num("flag", 1)
		                          .real("ratio", 0.25)
		                          .text();
		TRACERY_EMIT(rt, macro_event, 77, "/index.html", values, 3, 2, data, 2, arr, true, 0.25);
		g_fire_stream = nullptr;
	}
	{
		uint8_t v[11];
		for (int i = 0; i < 11; ++i)
			v[i] = static_cast<uint8_t>(i + 1);
		const uint8_t seq[2] = {42, 43};
		tracery_arg a[11];
		for (int i = 0; i < 11; ++i)
			a[i] = val(v[i]);
		a[8] = {seq, 2};
		s.event(kIdWeird, T2 + 3, kWeird, a,
		        Fields().num("struct", 1)
		                .num("Bool_", 2)
		                .num("my_field", 3)
		                .num("1st", 4)
		                .num("field", 5)
		                .num("x", 6)
		                .num("x_2", 7)
		                .num("gr____e", 8)
		                .num("_s_length_2", 2)
		                .arr("s", std::vector<int>{42, 43})
		                .num("_s_length", 10)
		                .num("uint32_t", 11)
		                .text());
	}
	{
		const uint32_t v = 31;
		const tracery_arg a[] = {val(v)};
		s.event(kIdExtendedOnly, T2 + 4, kExtendedOnly, a, Fields().num("v", 31).text());
		s.event(kIdNoFields, T2 + 5, kNoFields, nullptr, "{}");
	}
	// Compact timestamps whose low 27 bits wrap around between two events.
	const uint64_t boundary = ((T2 >> 27) + 1) << 27;
	ints_event(s, boundary - 3, 1, 2, 3, 4, -1, -2, -3, -4);
	ints_event(s, boundary + 2, 5, 6, 7, 8, -5, -6, -7, -8);
	const uint64_t end0 = boundary + 1000;
	s.end_packet(w, end0, 0);

	// Packet 1: 7 events were discarded before it.
	s.begin_packet(end0 + 100);
	for (int i = 0; i < 5; ++i)
		ints_event(s, end0 + 200 + i, static_cast<uint8_t>(i), 0, 0, 0, static_cast<int8_t>(-i), 0, 0, -i);
	const uint64_t end1 = end0 + 10'000;
	s.end_packet(w, end1, 7);

	// Packet 2: no events, nothing new discarded.
	s.begin_packet(end1 + 1);
	const uint64_t end2 = end1 + 2;
	s.end_packet(w, end2, 7);

	// Packet 3: 3 more discarded.
	s.begin_packet(end2 + 1);
	reals_event(s, end2 + 5, 3.0f, 4.0, true);
	s.end_packet(w, end2 + 10, 10);
}

// Stream class 1 (no context), instance 1, cpu 1: events whose metadata
// blocks were appended after the stream began.
void emit_stream1(StreamBuilder &s, StreamWriter &w)
{
	const uint64_t T = kT0 + 1000;
	s.begin_packet(T);
	uint64_t ts = T;
	for (uint32_t i = 0; i < 50; ++i) {
		ts += 1'000'000; // 1 ms: compact
		const uint64_t a = UINT64_MAX - i;
		const uint32_t b = i;
		const tracery_arg args[] = {val(a), val(b)};
		s.event(kIdLate, ts, kLate, args, Fields().num("a", a).num("b", b).text());
	}
	ts += 3'000'000'000; // 3 s: extended
	const tracery_arg m[] = {cstr("late \xe2\x82\xac")};
	s.event(kIdLateStr, ts, kLateStr, m, Fields().str("msg", "late \xe2\x82\xac").text());
	s.end_packet(w, ts + 1, 0);

	s.begin_packet(ts + 2);
	const tracery_arg m2[] = {cstr("")};
	s.event(kIdLateStr, ts + 3, kLateStr, m2, Fields().str("msg", "").text());
	s.end_packet(w, ts + 4, 0);
}

} // namespace

// The trace is built once for all the tests below.
class CtfRoundtrip : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		char tmpl[] = "/tmp/tracery-ctf-roundtrip-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		root_ = tmpl;
		trace_.dir = root_ + "/trace/ust"; // created by TraceDir::create (mkdir -p)

		TraceInfo info;
		info.uuid = TraceDir::generate_uuid();
		info.hostname = "rt-host";
		info.clock_scale = tracery::base::ns_tick_scale(kClockOffsetNs);
		info.env = {{"procname", std::string("roundtrip")},
		            {"vpid", int64_t{kVpid}},
		            {"note", std::string("quote \" backslash \\ \xc3\xa9 bad \xff")}};
		MetadataWriter mw(info);
		const TraceDir dir = TraceDir::create(trace_.dir);

		std::string text = mw.preamble() + MetadataWriter::stream_class(0, {true, true, true});
		for (auto [id, desc] : std::initializer_list<std::pair<uint32_t, const tracery_event_desc *>>{
			     {kIdInts, &kInts},
			     {kIdReals, &kReals},
			     {kIdStrings, &kStrings},
			     {kIdContainers, &kContainers},
			     {kIdMacro, &tracery_event__rt__macro_event},
			     {kIdWeird, &kWeird},
			     {kIdExtendedOnly, &kExtendedOnly},
			     {kIdNoFields, &kNoFields}})
			text += MetadataWriter::event_class(0, id, *desc);
		text += MetadataWriter::stream_class(1, {});
		dir.write_metadata(text);

		StreamBuilder s0(0, 0, {true, true, true}, 0);
		StreamWriter w0 = dir.create_stream("chan0_0", info.uuid, 0, 0);
		emit_stream0(s0, w0);
		w0.close();

		// Events of stream class 1 appear later (two separate appends).
		dir.append_metadata(MetadataWriter::event_class(1, kIdLate, kLate));
		dir.append_metadata(MetadataWriter::event_class(1, kIdLateStr, kLateStr));
		StreamBuilder s1(1, 1, {}, 1);
		StreamWriter w1 = dir.create_stream("chan1_1", info.uuid, 1, 1);
		emit_stream1(s1, w1);
		w1.sync();
		w1.close();

		for (StreamBuilder *s : {&s0, &s1}) {
			trace_.expected[s->sid()] = s->finish();
			trace_.compact_events += s->compact_events;
			trace_.extended_events += s->extended_events;
		}
		trace_.total_events = trace_.compact_events + trace_.extended_events;
	}

	static void TearDownTestSuite()
	{
		if (!root_.empty() && !getenv("TRACERY_KEEP_TRACE"))
			std::filesystem::remove_all(root_);
	}

	// Runs a shell command; returns its exit status, stdout and stderr.
	static int run(const std::string &cmd, std::string *out, std::string *err)
	{
		const std::string o = root_ + "/out.txt", e = root_ + "/err.txt";
		const int status = system((cmd + " >'" + o + "' 2>'" + e + "'").c_str());
		*out = slurp(o);
		*err = slurp(e);
		return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}

	static std::string slurp(const std::string &path)
	{
		std::ifstream f(path, std::ios::binary);
		std::stringstream ss;
		ss << f.rdbuf();
		return ss.str();
	}

	static std::vector<std::string> lines(const std::string &text)
	{
		std::vector<std::string> v;
		std::istringstream in(text);
		for (std::string l; std::getline(in, l);)
			if (!l.empty())
				v.push_back(l);
		return v;
	}

	static bool have_babeltrace2() { return system("command -v babeltrace2 >/dev/null 2>&1") == 0; }

	static std::string root_;
	static Trace trace_;
};

std::string CtfRoundtrip::root_;
Trace CtfRoundtrip::trace_;

TEST_F(CtfRoundtrip, UsesBothHeaderForms)
{
	EXPECT_GT(trace_.compact_events, 50);
	EXPECT_GE(trace_.extended_events, 4);
}

TEST_F(CtfRoundtrip, BabeltraceTextOutput)
{
	if (!have_babeltrace2())
		GTEST_SKIP() << "babeltrace2 is not installed: cannot check the trace with a reader";
	std::string out, err;
	const int rc = run("babeltrace2 --log-level=W --clock-gmt --clock-date '" + trace_.dir + "'", &out, &err);
	ASSERT_EQ(rc, 0) << err;

	// stderr: the discarded-event reports, nothing else.
	const auto err_lines = lines(err);
	ASSERT_EQ(err_lines.size(), 2u) << err;
	EXPECT_EQ(err_lines[0].rfind("WARNING: Tracer discarded 7 events between [", 0), 0u) << err;
	EXPECT_EQ(err_lines[1].rfind("WARNING: Tracer discarded 3 events between [", 0), 0u) << err;
	EXPECT_NE(err.find("chan0_0"), std::string::npos) << err;

	const auto out_lines = lines(out);
	EXPECT_EQ(out_lines.size(), static_cast<size_t>(trace_.total_events)) << out;
	// Wall-clock time: offset + 5 s.
	EXPECT_EQ(out_lines.at(0).rfind("[2023-11-14 22:13:25.123456789]", 0), 0u) << out_lines.at(0);
	for (const char *needle : {
		     "rt-host:roundtrip:(4242) rt:ints: { cpu_id = 0 }, { vpid = 4242, vtid = 1000, procname = \"rt-proc",
		     "u64 = 18446744073709551615, s8 = -128, s16 = -32768, s32 = -2147483648, s64 = -9223372036854775808 }",
		     "{ f = nan, d = nan, b = 1 }",
		     "{ f = inf, d = -inf, b = 0 }",
		     "s1 = \"h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80\", s2 = \"\\?\\?ab\\?\"",
		     "blob = [ [0] = 0x0, [1] = 0xFF, [2] = 0x10, [3] = 0xAB, [4] = 0x7F ]",
		     "es = ( \"small\", \"odd \\\"q\\\" \\\\ \xc3\xa9\" : container = 7 )",
		     "eu = ( \"max\" : container = 18446744073709551615 )",
		     "rt:weird \"names\":",
		     "{ struct = 1, Bool_ = 2, my_field = 3, 1st = 4, field = 5, x = 6, x_2 = 7, gr____e = 8,",
		     "rt:macro_event:",
		     "color = ( \"blue \\\"b\\\"\" : container = 2 )",
		     "rt:late: { cpu_id = 1 }, { a = 18446744073709551615, b = 0 }",
		     "rt:no_fields: { cpu_id = 0 }, { vpid = 4242, vtid = 1000, procname = \"rt-proc",
	     }) {
		EXPECT_NE(out.find(needle), std::string::npos) << "missing: " << needle << "\n" << out;
	}
}

TEST_F(CtfRoundtrip, Bt2ExactValues)
{
	if (!have_babeltrace2())
		GTEST_SKIP() << "babeltrace2 is not installed: cannot check the trace with a reader";
	if (system("/usr/bin/python3 -c 'import bt2' >/dev/null 2>&1") != 0)
		GTEST_SKIP() << "/usr/bin/python3 has no bt2 module (python3-bt2): cannot check exact values";
	std::string out, err;
	const int rc =
		run(std::string("/usr/bin/python3 '") + TRACERY_CTF_DUMP_SCRIPT + "' '" + trace_.dir + "'", &out, &err);
	ASSERT_EQ(rc, 0) << err;
	EXPECT_EQ(err, "");

	// Per stream, the exact message sequence; globally, time never goes back.
	std::map<std::string, std::vector<std::string>> got;
	int64_t last_ns = INT64_MIN;
	for (const std::string &l : lines(out)) {
		std::istringstream in(l);
		std::string kind, sc, inst;
		in >> kind >> sc >> inst;
		got[sc + " " + inst].push_back(l);
		if (kind == "E") {
			uint64_t cycles;
			int64_t ns;
			in >> cycles >> ns;
			EXPECT_GE(ns, last_ns) << l;
			last_ns = ns;
		}
	}
	ASSERT_EQ(got.size(), trace_.expected.size()) << out;
	for (const auto &[stream, want] : trace_.expected) {
		const auto &have = got[stream];
		EXPECT_EQ(have.size(), want.size()) << "stream " << stream;
		for (size_t i = 0; i < std::min(have.size(), want.size()); ++i)
			EXPECT_EQ(have[i], want[i]) << "stream " << stream << ", message " << i;
	}
}

TEST_F(CtfRoundtrip, MetadataIsOnlyRenamedIn)
{
	// No temporary file is left behind; the files have the default modes.
	for (const auto &e : std::filesystem::directory_iterator(trace_.dir)) {
		const std::string name = e.path().filename();
		EXPECT_TRUE(name == "metadata" || name == "chan0_0" || name == "chan1_1") << name;
		EXPECT_EQ(e.status().permissions() & std::filesystem::perms::all,
		          std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
			<< name;
	}
	EXPECT_EQ(std::filesystem::status(trace_.dir).permissions() & std::filesystem::perms::all,
	          std::filesystem::perms::owner_all);
}
