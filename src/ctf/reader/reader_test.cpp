// ctf/reader/reader_test.cpp — the TSDL parser (constructs, errors with line
// and offset), decode plans on handcrafted bytes (bit fields in both byte
// orders, variants, sequences, text arrays, the flat-struct and compact
// header shortcuts against the generic ops), the bounds that make a
// damaged packet an error at its offset, and the skipping mode (payloads
// stepped over without values) against decoding, cut at every bit.
#include "ctf/reader/decoder.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/test_bytes.hpp"
#include "ctf/reader/trace_reader.hpp"
#include "ctf/reader/tsdl_parser.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace tracery::ctf::reader {
namespace {

const char *kPreamble = R"(
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := unsigned long;
trace { major = 1; minor = 8; byte_order = ORDER; uuid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"; };
env { hostname = "h\"x"; n = -3; };
clock { name = c; freq = 1000; offset_s = 5; offset = 2; };
)";

std::string with_order(const char *order, const std::string &rest)
{
	std::string s = kPreamble;
	s.replace(s.find("ORDER"), 5, order);
	return s + rest;
}

TEST(Tsdl, ParsesEveryConstruct)
{
	const TraceClass tc = parse_tsdl(with_order("be", R"(
struct ctx { uint32_t a; } align(64);
event { name = "e1"; id = 7; stream_id = 3; loglevel = 13;
	fields := struct {
		enum : uint8_t { A, B = 5 ... 7, "C D" } e;
		variant <e> { uint8_t A; string B; struct ctx _C_D; } v;
		unsigned long len;
		floating_point { exp_dig = 11; mant_dig = 53; align = 64; byte_order = le; } d[len];
		integer { size = 8; align = 8; signed = false; encoding = UTF8; } t[4][2];
		string { encoding = ASCII; } s;
		integer { size = 13; align = 1; signed = true; base = hex; map = clock.c.value; } x;
	};
};
stream { id = 3; event.context := struct ctx; };
)"));
	EXPECT_TRUE(tc.big_endian);
	EXPECT_EQ(tc.uuid, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
	ASSERT_EQ(tc.env.size(), 2u);
	EXPECT_EQ(std::get<std::string>(tc.env[0].second), "h\"x");
	EXPECT_EQ(std::get<int64_t>(tc.env[1].second), -3);
	ASSERT_NE(tc.clock("c"), nullptr);
	EXPECT_EQ(tc.clock("c")->offset, 2u);
	const StreamClass &sc = tc.streams.at(3); // the events came before their stream block
	EXPECT_EQ(sc.event_context->align, 64u);
	const EventClass &e = sc.events.at(7);
	EXPECT_EQ(e.name, "e1");
	EXPECT_EQ(*e.loglevel, 13);
	const auto &m = e.fields->members;
	ASSERT_EQ(m.size(), 7u);
	ASSERT_EQ(m[0].type->mappings.size(), 3u);
	EXPECT_EQ(m[0].type->mappings[1].ranges[0].lo, 5);
	EXPECT_EQ(m[0].type->mappings[2].label, "C D");
	EXPECT_EQ(m[0].type->mappings[2].ranges[0].lo, 8); // after 7
	EXPECT_EQ(m[1].type->kind, TypeKind::variant);
	EXPECT_EQ(m[1].type->tag, "e");
	EXPECT_EQ(m[2].type->size, 64u); // "unsigned long": a two-word name
	EXPECT_EQ(m[3].type->kind, TypeKind::sequence);
	EXPECT_EQ(m[3].type->length_ref, "len");
	EXPECT_EQ(m[3].type->element->byte_order, ByteOrder::le);
	EXPECT_EQ(m[4].type->length, 4u);
	EXPECT_EQ(m[4].type->element->length, 2u);
	EXPECT_EQ(m[5].type->encoding, Encoding::ascii);
	EXPECT_EQ(m[6].type->align, 1u);
	EXPECT_EQ(m[6].type->base, Base::hex);
	EXPECT_EQ(m[6].type->mapped_clock, "c");
	EXPECT_EQ(m[6].type->byte_order, ByteOrder::native);
}

TEST(Tsdl, ErrorsNameLineAndOffset)
{
	struct Case {
		const char *text;
		size_t line;
		const char *what;
	};
	const Case cases[] = {
		{"trace { major = 1; minor = 8; byte_order = le; };\nevent { name = x; fields := struct { nosuch a; }; };",
	         2, "unknown type 'nosuch'"},
		{"typealias integer { size = 65; } := x;", 1, "integer size must be 1 to 64 bits"},
		{"trace { major = 1; minor = 8; byte_order = le; };\n\n/* never closed", 3, "comment not closed"},
		{"trace { major = 1; };", 1, "trace block without byte_order"},
		{"trace { byte_order = le; };", 1, "trace block without major and minor"},
		{"trace {\n major = 1; minor = 9; byte_order = le; };", 2, "minor = 9: this reader reads CTF 1.8"},
		{"typealias integer { size = 8; } := x;\ntypealias integer { size = 16; } := x;", 2,
	         "'x' is declared twice in the same scope"},
		{"typealias integer { size = 8; } := x;\nstruct s { x struct; };", 2, "'struct' is a TSDL keyword"},
		{"typealias integer { size = 4; signed = true; } := x;\nenum e : x { A = -9 };", 2,
	         "value -9 of 'A' is out of its 4-bit signed integer's range (-8 to 7)"},
		{"trace { major = 1; minor = 8; byte_order = le; };\nevent { name = \"a\"; id = 1; stream_id = 4; };",
	         2, "which no stream block declares"},
		{"typealias floating_point { exp_dig = 5; mant_dig = 11; } := h;", 1, "only 32-bit"},
		{"typealias integer { size = 8; align = 3; } := x;", 1, "align must be a power of two"},
		{"env { a = \"unterminated; };", 1, "string literal not closed"},
	};
	for (const Case &c : cases) {
		try {
			parse_tsdl(c.text);
			ADD_FAILURE() << "no error for: " << c.text;
		} catch (const TsdlError &e) {
			EXPECT_EQ(e.line(), c.line) << c.text;
			EXPECT_LE(e.offset(), strlen(c.text)) << c.text;
			EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << e.what();
		}
	}
}

TEST(Tsdl, UnknownAttributesAreWarningsWithLineAndOffset)
{
	const std::string text = "trace { major = 1; minor = 8; byte_order = le; odd = 3; };\n"
				 "typealias integer { size = 8; color = red; } := u8;\n"
				 "event { name = e; id = 0; extra := struct { u8 a; }; fields := struct { u8 b; }; };";
	const TraceClass tc = parse_tsdl(text);
	ASSERT_EQ(tc.warnings.size(), 3u);
	EXPECT_EQ(tc.warnings[0].line, 1u);
	EXPECT_EQ(text.substr(tc.warnings[0].offset, 3), "odd");
	EXPECT_EQ(tc.warnings[0].what, "unknown attribute 'odd' in the trace block, ignored");
	EXPECT_EQ(tc.warnings[1].line, 2u);
	EXPECT_EQ(text.substr(tc.warnings[1].offset, 5), "color");
	EXPECT_EQ(tc.warnings[2].line, 3u);
	EXPECT_EQ(text.substr(tc.warnings[2].offset, 5), "extra");
	EXPECT_EQ(tc.warnings[2].what, "unknown type 'extra' in an event, ignored");
	// what was read is whole: the integer's size, the event's fields
	EXPECT_EQ(tc.streams.at(0).events.at(0).fields->members.at(0).type->size, 8u);
}

TEST(Tsdl, NestingIsBounded)
{
	std::string deep = "trace { byte_order = le; }; typealias ";
	for (int i = 0; i < 100; ++i)
		deep += "struct { ";
	EXPECT_THROW(parse_tsdl(deep), TsdlError);
}

TEST(MetadataPackets, UnpacksAndNamesDamage)
{
	std::string text = "/* CTF 1.8 */ trace { byte_order = le; };";
	auto packet = [](const std::string &part, uint32_t magic) {
		std::string p(37, '\0');
		const uint32_t content = static_cast<uint32_t>((37 + part.size()) * 8), size = content;
		memcpy(&p[0], &magic, 4);
		memcpy(&p[24], &content, 4);
		memcpy(&p[28], &size, 4);
		return p + part;
	};
	const std::string two = packet(text.substr(0, 10), 0x75D11D57) + packet(text.substr(10), 0x75D11D57);
	EXPECT_EQ(metadata_text(two, "m"), text);
	const std::string bad = packet(text.substr(0, 10), 0x75D11D57) + packet(text.substr(10), 0x12345678);
	try {
		metadata_text(bad, "m");
		ADD_FAILURE();
	} catch (const ReadError &e) {
		EXPECT_EQ(e.offset(), 47u);
		EXPECT_EQ(std::string(e.what()), "m: at offset 47: bad metadata packet magic (not 0x75D11D57)");
	}
	EXPECT_THROW(metadata_text(two.substr(0, two.size() - 1), "m"), ReadError);
	// CTF 2's JSON fragments, in packets or not: refused by name, not as a TSDL syntax error
	const std::string ctf2 = "\x1e{\"type\": \"preamble\", \"version\": 2}\n";
	for (const std::string &bytes : {ctf2, packet(ctf2, 0x75D11D57)}) {
		try {
			parse_metadata(bytes, "m");
			ADD_FAILURE();
		} catch (const ReadError &e) {
			EXPECT_NE(std::string(e.what()).find("m: CTF 2 metadata (JSON fragments"), std::string::npos)
				<< e.what();
		}
	}
}

// Event fields of one event class, decoded from bytes.
struct Decoded {
	TraceClass tc;
	std::unique_ptr<TracePlans> plans;
	std::vector<uint8_t> bytes; // strings point into them
	std::vector<Value> values;
	uint64_t end = 0;
};

Decoded decode(const char *order, const std::string &fields, const std::vector<uint8_t> &bytes)
{
	Decoded d;
	d.bytes = bytes;
	d.tc = parse_tsdl(with_order(order, "stream { id = 0; };\nevent { name = \"e\"; id = 0; fields := struct { " +
	                                            fields + " }; };"));
	d.plans = std::make_unique<TracePlans>(d.tc);
	const auto *ep = d.plans->stream(0)->event(0);
	DecodeState st;
	st.regs.assign(d.plans->registers(), 0);
	d.end = run_plan(ep->fields, d.bytes.data(), 0, d.bytes.size() * 8, st, &d.values);
	return d;
}

// A corrupt packet's clock value beyond any real time converts without
// undefined behaviour (UBSan halts the sanitizer run on it), in both ways of
// converting; real values keep their exact nanoseconds.
TEST(Clock, ValuesBeyondAnyTimeConvertWithoutOverflow)
{
	Clock ghz;
	ghz.offset_s = 1700000000;
	const ClockConverter direct(ghz);
	EXPECT_EQ(direct.ns(5), 1700000000000000005);
	volatile uint64_t huge = INT64_MAX;      // not folded at compile time
	volatile int64_t sink = direct.ns(huge); // the offset plus that: past INT64_MAX
	Clock tsc;
	tsc.freq = 1500000000;
	tsc.offset_s = 1700000000;
	const ClockConverter scaled(tsc);
	EXPECT_EQ(scaled.ns(1500000000), 1700000001000000000);
	huge = 13800000000000000000u;
	sink = scaled.ns(huge); // 9.2e18 ns, plus the offset: past INT64_MAX
	Clock slow;
	slow.freq = 1;
	huge = UINT64_MAX;
	sink = ClockConverter(slow).ns(huge); // 1e9 * 2^64 ns: beyond what a uint64_t holds
	(void)sink;
}

TEST(Decoder, BitFieldsInBothByteOrders)
{
	const std::string f = "integer { size = 3; align = 1; signed = false; } a; "
			      "integer { size = 13; align = 1; signed = true; } b; uint32_t c;";
	// little-endian: a in bits 0-2 of byte 0, b in the next 13 bits
	const Decoded le = decode("le", f, {0x05 | (0x1F << 3), 0xFF, 0x78, 0x56, 0x34, 0x12});
	ASSERT_EQ(le.values.size(), 4u);
	EXPECT_EQ(le.values[1].u, 5u);
	EXPECT_EQ(le.values[2].i, -1); // all ones
	EXPECT_EQ(le.values[3].u, 0x12345678u);
	// big-endian: a in the top 3 bits
	const Decoded be = decode("be", f, {0xA0 | 0x1F, 0xFE, 0x12, 0x34, 0x56, 0x78});
	EXPECT_EQ(be.values[1].u, 5u);
	EXPECT_EQ(be.values[2].i, -2);
	EXPECT_EQ(be.values[3].u, 0x12345678u);
	EXPECT_EQ(be.end, 48u);
}

TEST(Decoder, VariantsSequencesAndText)
{
	const std::string f = "enum : uint8_t { X = 1, Y = 2 } tag; variant <tag> { uint8_t X; string Y; } v; "
			      "uint8_t n; uint8_t seq[n]; integer { size = 8; align = 8; signed = false; "
			      "encoding = UTF8; } t[4];";
	const Decoded d = decode("le", f, {2, 'h', 'i', 0, 3, 7, 8, 9, 'a', 'b', 0, 'z'});
	// struct, tag, variant, string, n, sequence + 3, text
	ASSERT_EQ(d.values.size(), 10u);
	EXPECT_EQ(d.values[2].n, 1u); // option Y
	EXPECT_EQ(std::string(d.values[3].s, d.values[3].n), "hi");
	EXPECT_EQ(d.values[5].n, 3u);
	EXPECT_EQ(d.values[8].u, 9u);
	EXPECT_EQ(std::string(d.values[9].s, d.values[9].n), "ab"); // up to the NUL
	EXPECT_EQ(d.end, 12u * 8);
}

TEST(Decoder, DamageIsAnErrorAtItsOffset)
{
	const std::string f = "enum : uint8_t { X = 1 } tag; variant <tag> { uint8_t X; } v; uint8_t n; uint32_t s[n]; "
			      "string str;";
	try {
		decode("le", f, {9});
		ADD_FAILURE();
	} catch (const DecodeError &e) {
		EXPECT_EQ(e.bit_offset(), 8u);
		EXPECT_NE(std::string(e.what()).find("value 9 selects no option"), std::string::npos);
	}
	try {
		decode("le", f, {1, 0, 200, 1, 2, 3});
		ADD_FAILURE();
	} catch (const DecodeError &e) {
		EXPECT_EQ(e.bit_offset(), 24u);
		EXPECT_NE(std::string(e.what()).find("200 elements runs past the end"), std::string::npos);
	}
	try {
		decode("le", f, {1, 0, 0, 'a', 'b'});
		ADD_FAILURE();
	} catch (const DecodeError &e) {
		EXPECT_EQ(e.bit_offset(), 24u);
		EXPECT_NE(std::string(e.what()).find("no terminating NUL"), std::string::npos);
	}
}

TEST(Decoder, FlatStructsAsTheGenericOps)
{
	// all byte-aligned unsigned integers: decoded in one loop, same values
	const Decoded d =
		decode("le", "uint8_t a; uint32_t b; unsigned long c;", {7, 1, 2, 3, 4, 8, 0, 0, 0, 0, 0, 0, 0x80});
	const auto *ep = d.plans->stream(0)->event(0);
	EXPECT_TRUE(ep->fields.ops[0].flat);
	ASSERT_EQ(d.values.size(), 4u);
	EXPECT_EQ(d.values[1].u, 7u);
	EXPECT_EQ(d.values[2].u, 0x04030201u);
	EXPECT_EQ(d.values[3].u, 0x8000000000000008u);
	EXPECT_EQ(d.end, 13u * 8);
	EXPECT_TRUE(ep->fields.ops[0].plain); // and without roles or registers: no ops run at all
	// byte-aligned little-endian signed integers (a kernel syscall's return value) too, sign-extended
	const Decoded sig =
		decode("le",
	               "integer { size = 64; align = 8; signed = true; } r; integer { size = 16; align = 8; signed = "
	               "true; } s; integer { size = 8; align = 8; signed = true; } t;",
	               {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x80, 0x7f});
	EXPECT_TRUE(sig.plans->stream(0)->event(0)->fields.ops[0].flat);
	EXPECT_FALSE(sig.plans->stream(0)->event(0)->fields.ops[0].plain); // (run_plain reads unsigned kinds only)
	ASSERT_EQ(sig.values.size(), 4u);
	EXPECT_EQ(sig.values[1].i, -2);
	EXPECT_EQ(sig.values[2].i, -32768);
	EXPECT_EQ(sig.values[3].i, 127);
	EXPECT_EQ(sig.end, 11u * 8);
	// a big-endian or unaligned one is not
	EXPECT_FALSE(decode("le", "integer { size = 16; align = 8; signed = true; byte_order = be; } r;", {0, 1})
	                     .plans->stream(0)
	                     ->event(0)
	                     ->fields.ops[0]
	                     .flat);
	try {
		decode("le", "uint8_t a; uint32_t b;", {7, 1, 2});
		ADD_FAILURE();
	} catch (const DecodeError &e) {
		EXPECT_EQ(e.bit_offset(), 8u); // where b starts, as the ops say
	}
	// strings too are decoded without running ops (not in a flat struct's loop)
	const Decoded str = decode("le", "uint8_t a; string s; uint32_t b;", {7, 'h', 'i', 0, 1, 0, 0, 0});
	EXPECT_FALSE(str.plans->stream(0)->event(0)->fields.ops[0].flat);
	EXPECT_TRUE(str.plans->stream(0)->event(0)->fields.ops[0].plain);
	ASSERT_EQ(str.values.size(), 4u);
	EXPECT_EQ(std::string(str.values[2].s, str.values[2].n), "hi");
	EXPECT_EQ(str.values[3].u, 1u);
	try {
		decode("le", "uint8_t a; string s;", {7, 'h', 'i'});
		ADD_FAILURE();
	} catch (const DecodeError &e) {
		EXPECT_EQ(e.bit_offset(), 8u);
		EXPECT_NE(std::string(e.what()).find("no terminating NUL"), std::string::npos);
	}
	// a member that a sequence's length names writes a register: its struct is not plain
	const Decoded seq = decode("le", "struct { uint8_t n; } h; uint8_t s[h.n];", {2, 5, 6});
	const Plan &p = seq.plans->stream(0)->event(0)->fields;
	EXPECT_TRUE(p.ops[1].flat);
	EXPECT_FALSE(p.ops[1].plain);
	ASSERT_EQ(seq.values.size(), 6u);
	EXPECT_EQ(seq.values[3].n, 2u);
	EXPECT_EQ(seq.values[5].u, 6u);
}

// LTTng's compact event header, decoded by hand without values and by the
// ops with them: the same id, clock, registers and end, or the same error.
TEST(Decoder, CompactHeaderAsTheGenericOps)
{
	const TraceClass tc = parse_tsdl(with_order("le", R"(
typealias integer { size = 5; align = 1; signed = false; } := uint5_t;
typealias integer { size = 27; align = 1; signed = false; map = clock.c.value; } := clk27;
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := clk64;
stream { id = 0; event.header := struct { enum : uint5_t { compact = 0 ... 30, extended = 31 } id;
	variant <id> { struct { clk27 timestamp; } compact; struct { uint32_t id; clk64 timestamp; } extended; } v;
} align(8); };
event { name = "e"; id = 0; stream_id = 0; fields := struct { uint8_t x; }; };
)"));
	const TracePlans plans(tc);
	const Plan &header = plans.stream(0)->event_header;
	ASSERT_TRUE(header.compact_header);
	const auto both = [&](const std::vector<uint8_t> &bytes, uint64_t pos, uint64_t clock) {
		DecodeState fast, slow;
		fast.regs.assign(plans.registers(), 0);
		slow.regs = fast.regs;
		fast.clock = slow.clock = clock;
		std::vector<Value> values;
		const uint64_t end = bytes.size() * 8;
		std::string fast_error, slow_error;
		uint64_t fast_end = 0, slow_end = 0;
		try {
			fast_end = run_plan(header, bytes.data(), pos, end, fast, nullptr);
		} catch (const DecodeError &e) {
			fast_error = std::to_string(e.bit_offset()) + e.what();
		}
		try {
			slow_end = run_plan(header, bytes.data(), pos, end, slow, &values);
		} catch (const DecodeError &e) {
			slow_error = std::to_string(e.bit_offset()) + e.what();
		}
		EXPECT_EQ(fast_error, slow_error);
		EXPECT_EQ(fast_end, slow_end);
		EXPECT_EQ(fast.event_id, slow.event_id);
		EXPECT_EQ(fast.has_event_id, slow.has_event_id);
		EXPECT_EQ(fast.clock, slow.clock);
		EXPECT_EQ(fast.regs, slow.regs);
		return fast;
	};
	// compact: id 3, timestamp 0x123456 (27 bits after the 5)
	const uint32_t w = 3 | (0x123456u << 5);
	const std::vector<uint8_t> compact = {0xEE, uint8_t(w), uint8_t(w >> 8), uint8_t(w >> 16), uint8_t(w >> 24)};
	EXPECT_EQ(both(compact, 8, 0x50000000).event_id, 3u);
	EXPECT_EQ(both(compact, 8, 0x50000000).clock, 0x50123456u);
	EXPECT_EQ(both(compact, 8, 0x57FFFFFF).clock, 0x58123456u); // the 27 bits wrapped
	both(compact, 1, 0);                                        // aligned to the next byte
	// extended: id 31, then a 32-bit id and a 64-bit timestamp
	std::vector<uint8_t> ext = {31, 0x34, 0x12, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
	EXPECT_EQ(both(ext, 0, 0).event_id, 0x1234u);
	EXPECT_EQ(both(ext, 0, 0).clock, 0x0807060504030201u);
	// cut short: the same errors
	both({31, 0x34, 0x12, 0, 0, 1, 2}, 0, 0);
	both({1, 2}, 0, 0);
}

// The event fields of one class run over bytes cut at every bit, with values
// and without (the skipping mode): the same end, clock and registers, or the
// same error at the same offset. Returns what the whole bytes give.
std::string expect_skipping_as_decoding(const std::string &fields, const std::vector<uint8_t> &bytes)
{
	const TraceClass tc = parse_tsdl(with_order(
		"le", "stream { id = 0; };\nevent { name = \"e\"; id = 0; fields := struct { " + fields + " }; };"));
	const TracePlans plans(tc);
	const Plan &plan = plans.stream(0)->event(0)->fields;
	const auto run = [&](uint64_t end, bool values) {
		DecodeState st;
		st.regs.assign(plans.registers(), 0);
		st.clock = 0x5000;
		std::vector<Value> v;
		std::string r;
		try {
			const uint64_t pos = run_plan(plan, bytes.data(), 0, end, st, values ? &v : nullptr);
			r = "end " + std::to_string(pos) + ", clock " + std::to_string(st.clock);
			for (uint64_t x : st.regs)
				r += ", " + std::to_string(x);
		} catch (const DecodeError &e) {
			r = "error at " + std::to_string(e.bit_offset()) + ": " + e.what();
		}
		return r;
	};
	const uint64_t bits = bytes.size() * 8;
	for (uint64_t end = 0; end < bits; ++end) {
		const std::string decoded = run(end, true);
		EXPECT_EQ(run(end, false), decoded) << "cut at bit " << end;
		EXPECT_EQ(decoded.rfind("error at ", 0), 0u) << "cut at bit " << end;
	}
	const std::string whole = run(bits, true);
	EXPECT_EQ(run(bits, false), whole);
	return whole;
}

TEST(Decoder, SkippingStepsAsDecoding)
{
	const std::string every =
		"integer { size = 3; align = 1; signed = true; byte_order = be; } b3; "
		"integer { size = 13; align = 1; signed = false; } b13; "
		"integer { size = 32; align = 8; signed = false; map = clock.c.value; } t; "
		"enum : uint8_t { A = 0, B = 1 } e; "
		"variant <e> { string A; integer { size = 16; align = 8; signed = false; } B; } v; "
		"uint8_t n; "
		"struct { integer { size = 16; align = 8; signed = false; } k; uint8_t j; } align(32) "
		"fixed[n]; "
		"integer { size = 8; align = 8; signed = false; encoding = UTF8; } txt[n]; "
		"string words[2]; struct { } none[3]; "
		"floating_point { exp_dig = 11; mant_dig = 53; align = 64; } d; uint8_t m[2][3]; "
		"integer { size = 8; align = 8; signed = false; encoding = UTF8; } name[4]; string last;";
	const auto bytes = [](uint8_t option) {
		TestBytes b;
		b.put<uint8_t>(0xA5).put<uint8_t>(0x3C).put<uint32_t>(0x10).put<uint8_t>(option);
		if (option == 0)
			b.str("hi");
		else
			b.put<uint16_t>(0x0102);
		b.put<uint8_t>(2);
		b.put<uint16_t>(7, 4).put<uint8_t>(8).put<uint16_t>(9, 4).put<uint8_t>(10);
		b.raw("ok").str("a").str("bc").put<double>(1.5, 8).raw("123456").raw("abcd");
		b.str("z");
		return b.b;
	};
	// to the end; t moved the clock (0x5000 → 0x10 after a wrap of its 32 bits); registers: e, n
	ASSERT_EQ(bytes(0).size(), 52u);
	EXPECT_EQ(expect_skipping_as_decoding(every, bytes(0)), "end 416, clock 4294967312, 0, 2");
	ASSERT_EQ(bytes(1).size(), 52u);
	EXPECT_EQ(expect_skipping_as_decoding(every, bytes(1)), "end 416, clock 4294967312, 1, 2");

	// what is stepped over by its size, and what is not
	const TraceClass tc = parse_tsdl(with_order(
		"le", "stream { id = 0; };\nevent { name = \"e\"; id = 0; fields := struct { " + every + " }; };"));
	const TracePlans plans(tc);
	const Plan &p = plans.stream(0)->event(0)->fields;
	const auto op = [&](const char *name) -> const Op & {
		for (const Op &o : p.ops)
			if (o.name && *o.name == name)
				return o;
		throw std::runtime_error(name);
	};
	EXPECT_FALSE(p.ops[0].skip); // strings, a sequence, a variant
	EXPECT_EQ(p.ops[0].values, 0u);
	EXPECT_TRUE(op("b3").skip);
	EXPECT_FALSE(op("t").skip); // mapped to the clock: it moves the clock
	EXPECT_FALSE(op("e").skip); // the variant's tag: a register
	EXPECT_FALSE(op("n").skip); // the sequences' length
	EXPECT_TRUE(op("m").skip);
	EXPECT_EQ(op("m").bits, 48u);
	EXPECT_EQ(op("m").values, 9u); // the array, 2 arrays, 6 integers
	EXPECT_TRUE(op("none").skip);
	EXPECT_EQ(op("none").bits, 0u);
	EXPECT_TRUE(op("name").skip);
	EXPECT_EQ(op("name").bits, 32u);
	const Op &element = p.ops[op("fixed").next - 3]; // the struct of k and j
	EXPECT_TRUE(element.skip);
	EXPECT_EQ(element.bits, 24u); // stepped by 32 (its alignment) in the sequence
	EXPECT_EQ(element.values, 3u);
}

TEST(Decoder, SkippingAFixedSizeScopeInOneStep)
{
	const std::string fixed = "uint8_t a; integer { size = 3; align = 1; signed = false; } b; unsigned long c; "
				  "uint8_t m[2][3]; floating_point { exp_dig = 8; mant_dig = 24; align = 32; } f;";
	const TraceClass tc = parse_tsdl(with_order(
		"le", "stream { id = 0; };\nevent { name = \"e\"; id = 0; fields := struct { " + fixed + " }; };"));
	const TracePlans plans(tc);
	const Op &root = plans.stream(0)->event(0)->fields.ops[0];
	EXPECT_TRUE(root.skip);
	EXPECT_EQ(root.align, 32u);
	EXPECT_EQ(root.bits, 160u);  // a, b, padding to c at 16, c, m to 128, f
	EXPECT_EQ(root.values, 14u); // the struct, a, b, c, m (9), f
	TestBytes b;
	b.put<uint8_t>(1).put<uint8_t>(5).put<uint64_t>(3, 1).raw("abcdef").put<float>(2.5f, 4);
	ASSERT_EQ(b.b.size(), 20u);
	EXPECT_EQ(expect_skipping_as_decoding(fixed, b.b), "end 160, clock 20480");
}

TEST(Decoder, SkippingCountsValuesAsDecoding)
{
	// 5 M empty structs take no bits but more values than a scope may have:
	// the same error whether they are stored or stepped over
	TestBytes b;
	b.put<uint32_t>(5000000);
	EXPECT_EQ(expect_skipping_as_decoding("uint32_t n; struct { } none[n];", b.b),
	          "error at 32: more than 4194304 fields in one scope");
}

TEST(Plans, PathsThatDoNotResolveAreErrors)
{
	const TraceClass tc =
		parse_tsdl(with_order("le", "stream { id = 0; };\nevent { name = \"e\"; id = 0; fields := struct { "
	                                    "uint8_t a[nosuch]; }; };"));
	try {
		TracePlans p(tc);
		ADD_FAILURE();
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find("no field 'nosuch' before this one"), std::string::npos);
	}
}

} // namespace
} // namespace tracery::ctf::reader
