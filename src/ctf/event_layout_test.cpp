// ctf/event_layout_test.cpp — exact bytes of event headers, contexts and payloads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/utf8.hpp"
#include "ctf/event_header.hpp"
#include "ctf/packet.hpp"
#include "event/context.hpp"
#include "event/payload.hpp"

using namespace tracery::ctf;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes header(uint32_t id, uint64_t ts, bool compact)
{
	Bytes b(event_header_size(compact) + 8, 0xAA);
	write_event_header(b.data(), id, ts, compact);
	EXPECT_EQ(b[event_header_size(compact)], 0xAA) << "wrote past the header";
	b.resize(event_header_size(compact));
	return b;
}

tracery_field_desc field(const char *name, uint8_t type, uint8_t elem = 0, uint32_t length = 0,
                         const tracery_enum_desc *e = nullptr)
{
	return tracery_field_desc{name, type, elem, length, e};
}

tracery_event_desc event(const std::vector<tracery_field_desc> &fields)
{
	return tracery_event_desc{"prov",  "ev",    fields.data(),    static_cast<uint32_t>(fields.size()), 0, nullptr,
	                          nullptr, nullptr, TRACERY_GATE_ARGS};
}

// Encodes with the free functions and with tracery::event::EventLayout; checks they agree.
Bytes encode(const tracery_event_desc &d, const tracery_arg *args)
{
	const size_t n = tracery::event::payload_size(d, args);
	Bytes a(n + 4, 0xAA);
	tracery::event::write_payload(a.data(), d, args);
	EXPECT_EQ(a[n], 0xAA) << "write_payload wrote past payload_size";

	tracery::event::EventLayout layout(d);
	EXPECT_TRUE(layout.valid());
	EXPECT_EQ(layout.payload_size(args), n);
	Bytes b(n + 4, 0xAA);
	EXPECT_EQ(layout.write_payload(b.data(), args), b.data() + n);
	EXPECT_EQ(a, b) << "tracery::event::EventLayout and write_payload disagree";
	a.resize(n);
	return a;
}

template <class T>
tracery_arg arg(const T &v)
{
	return tracery_arg{&v, 0};
}

} // namespace

TEST(EventHeader, Constants)
{
	EXPECT_EQ(kCompactHeaderSize, 4u);
	EXPECT_EQ(kExtendedHeaderSize, 13u);
	EXPECT_EQ(kCompactTsBits, 27u);
	EXPECT_EQ(kMaxCompactId, 30u);
}

TEST(EventHeader, CompactBitLayout)
{
	// word = id | (ts & (2^27-1)) << 5, little-endian.
	EXPECT_EQ(header(5, 0x0123456789ABCDEFull, true), (Bytes{0xE5, 0xBD, 0x79, 0x35}));
	EXPECT_EQ(header(0, 0, true), (Bytes{0, 0, 0, 0}));
	EXPECT_EQ(header(30, 0x7FFFFFF, true), (Bytes{0xFE, 0xFF, 0xFF, 0xFF}));
	EXPECT_EQ(header(1, 1, true), (Bytes{0x21, 0, 0, 0}));
	// Bits above 27 are dropped.
	EXPECT_EQ(header(3, (uint64_t{1} << 27) | 2, true), header(3, 2, true));
}

TEST(EventHeader, ExtendedLayout)
{
	EXPECT_EQ(header(0x12345678, 0x0123456789ABCDEFull, false),
	          (Bytes{0x1F, 0x78, 0x56, 0x34, 0x12, 0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01}));
	EXPECT_EQ(header(2, UINT64_MAX, false),
	          (Bytes{0x1F, 2, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
	EXPECT_EQ(header(UINT32_MAX, 0, false), (Bytes{0x1F, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(EventHeader, CompactChoice)
{
	EXPECT_TRUE(can_use_compact_header(0, 100, 100));
	EXPECT_TRUE(can_use_compact_header(30, 100, 100 + (1 << 27) - 1));
	EXPECT_FALSE(can_use_compact_header(30, 100, 100 + (1 << 27)));
	EXPECT_FALSE(can_use_compact_header(31, 100, 101));
	EXPECT_FALSE(can_use_compact_header(0, 100, 99)); // time going backwards
	// Crossing a 2^27 boundary is fine while the delta is small.
	EXPECT_TRUE(can_use_compact_header(1, (1 << 27) - 1, (1 << 27) + 5));
}

TEST(EventContext, Sizes)
{
	EXPECT_EQ(tracery::event::context_size({}), 0u);
	EXPECT_EQ(tracery::event::context_size({true, false, false}), 4u);
	EXPECT_EQ(tracery::event::context_size({false, true, false}), 4u);
	EXPECT_EQ(tracery::event::context_size({false, false, true}), 17u);
	EXPECT_EQ(tracery::event::context_size({true, true, true}), 25u);
}

TEST(EventContext, AllFields)
{
	const tracery::event::ContextOptions o{true, true, true};
	Bytes b(tracery::event::context_size(o) + 2, 0xAA);
	const char name[17] = "myproc";
	tracery::event::write_context(b.data(), o, 0x01020304, -2, name);
	Bytes expect{0x04, 0x03, 0x02, 0x01, 0xFE, 0xFF, 0xFF, 0xFF, 'm', 'y', 'p', 'r', 'o', 'c'};
	expect.resize(25, 0);
	expect.push_back(0xAA);
	expect.push_back(0xAA);
	EXPECT_EQ(b, expect);
}

TEST(EventContext, Subsets)
{
	Bytes b(8, 0xAA);
	tracery::event::write_context(b.data(), {false, true, false}, 7, 9, nullptr);
	EXPECT_EQ(b, (Bytes{9, 0, 0, 0, 0xAA, 0xAA, 0xAA, 0xAA}));
	tracery::event::write_context(b.data(), {true, false, false}, -1, 9, nullptr);
	EXPECT_EQ(b, (Bytes{0xFF, 0xFF, 0xFF, 0xFF, 0xAA, 0xAA, 0xAA, 0xAA}));
}

TEST(EventContext, Procname)
{
	Bytes b(18, 0xAA);
	// 16 bytes of name, the 17th byte is always NUL.
	const char longname[17] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'X'};
	tracery::event::write_context(b.data(), {false, false, true}, 0, 0, longname);
	EXPECT_EQ(std::memcmp(b.data(), "abcdefghijklmnop", 16), 0);
	EXPECT_EQ(b[16], 0);
	EXPECT_EQ(b[17], 0xAA);
	// Bytes after the first NUL are not leaked: NUL padded.
	const char garbage[17] = {'a', 0, 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z'};
	tracery::event::write_context(b.data(), {false, false, true}, 0, 0, garbage);
	Bytes expect(17, 0);
	expect[0] = 'a';
	expect.push_back(0xAA);
	EXPECT_EQ(b, expect);
	// NULL: empty string.
	tracery::event::write_context(b.data(), {false, false, true}, 0, 0, nullptr);
	EXPECT_EQ(Bytes(b.begin(), b.begin() + 17), Bytes(17, 0));
	// Invalid UTF-8 replaced; valid UTF-8 kept.
	const char bad[17] = "\xff"
			     "a\xc3\xa9";
	tracery::event::write_context(b.data(), {false, false, true}, 0, 0, bad);
	EXPECT_EQ(Bytes(b.begin(), b.begin() + 5), (Bytes{'?', 'a', 0xC3, 0xA9, 0}));
}

TEST(EventContext, ProcnameEveryLength)
{
	// NUL at every position, garbage (with high bytes) after it, against a
	// byte-by-byte reference.
	for (size_t len = 0; len <= 16; ++len) {
		for (int variant = 0; variant < 3; ++variant) {
			char in[17];
			for (size_t i = 0; i < 17; ++i)
				in[i] = static_cast<char>(i < len ? 'a' + i : 0xE9);
			if (variant == 1 && len > 0)
				in[len - 1] = static_cast<char>(0xFF); // invalid UTF-8 inside the name
			if (len < 17)
				in[len] = 0;
			if (variant == 2 && len + 1 < 17)
				in[len + 1] = 'z'; // printable garbage after the NUL
			uint8_t expect[17] = {};
			for (size_t i = 0; i < len && i < 16; ++i)
				expect[i] = static_cast<uint8_t>(in[i]);
			if (variant == 1 && len > 0)
				expect[len - 1] = '?';
			uint8_t got[18];
			got[17] = 0xAA;
			tracery::event::write_procname(got, in);
			EXPECT_EQ(std::memcmp(got, expect, 17), 0) << "len " << len << " variant " << variant;
			EXPECT_EQ(got[17], 0xAA);
		}
	}
}

TEST(Payload, FixedScalarsAreTight)
{
	const std::vector<tracery_field_desc> f{field("a", TRACERY_TYPE_U64), field("b", TRACERY_TYPE_U32)};
	const auto d = event(f);
	const uint64_t a = 0x1122334455667788ull;
	const uint32_t b = 0xAABBCCDD;
	const tracery_arg args[] = {arg(a), arg(b)};
	tracery::event::EventLayout l(d);
	EXPECT_TRUE(l.is_fixed_size());
	EXPECT_EQ(l.fixed_size(), 12u);
	EXPECT_EQ(encode(d, args), (Bytes{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xDD, 0xCC, 0xBB, 0xAA}));
	// Whole event: compact header 4 + payload 12 = 16 bytes; with
	// vpid+vtid+procname context: 16 + 25 = 41 bytes.
	EXPECT_EQ(kCompactHeaderSize + l.fixed_size(), 16u);
	EXPECT_EQ(kCompactHeaderSize + tracery::event::context_size({true, true, true}) + l.fixed_size(), 41u);
}

TEST(Payload, Integers)
{
	const std::vector<tracery_field_desc> f{
		field("u8", TRACERY_TYPE_U8),   field("u16", TRACERY_TYPE_U16), field("u32", TRACERY_TYPE_U32),
		field("u64", TRACERY_TYPE_U64), field("s8", TRACERY_TYPE_S8),   field("s16", TRACERY_TYPE_S16),
		field("s32", TRACERY_TYPE_S32), field("s64", TRACERY_TYPE_S64),
	};
	const auto d = event(f);
	const uint8_t u8 = 0xFF;
	const uint16_t u16 = 0x0102;
	const uint32_t u32 = 0x01020304;
	const uint64_t u64 = UINT64_MAX;
	const int8_t s8 = -128;
	const int16_t s16 = -2;
	const int32_t s32 = INT32_MIN;
	const int64_t s64 = -1;
	const tracery_arg args[] = {arg(u8), arg(u16), arg(u32), arg(u64), arg(s8), arg(s16), arg(s32), arg(s64)};
	Bytes expect{0xFF, 0x02, 0x01, 0x04, 0x03, 0x02, 0x01};
	expect.insert(expect.end(), 8, 0xFF);
	expect.insert(expect.end(), {0x80, 0xFE, 0xFF, 0x00, 0x00, 0x00, 0x80});
	expect.insert(expect.end(), 8, 0xFF);
	EXPECT_EQ(encode(d, args), expect);
	EXPECT_EQ(tracery::event::EventLayout(d).fixed_size(), 30u);
}

TEST(Payload, FloatsAndBool)
{
	const std::vector<tracery_field_desc> f{field("f", TRACERY_TYPE_FLOAT), field("d", TRACERY_TYPE_DOUBLE),
	                                        field("b", TRACERY_TYPE_BOOL), field("b2", TRACERY_TYPE_BOOL)};
	const auto d = event(f);
	const float fv = 1.5f;                                      // 0x3FC00000
	const double dv = -std::numeric_limits<double>::infinity(); // 0xFFF0000000000000
	const bool t = true, fa = false;
	const tracery_arg args[] = {arg(fv), arg(dv), arg(t), arg(fa)};
	EXPECT_EQ(encode(d, args), (Bytes{0x00, 0x00, 0xC0, 0x3F, 0, 0, 0, 0, 0, 0, 0xF0, 0xFF, 1, 0}));
	// NaN payload bits are kept.
	uint64_t nan_bits = 0x7FF8000000000123ull;
	double nan;
	std::memcpy(&nan, &nan_bits, 8);
	const tracery_arg args2[] = {arg(fv), arg(nan), arg(t), arg(t)};
	const Bytes out = encode(d, args2);
	uint64_t got;
	std::memcpy(&got, out.data() + 4, 8);
	EXPECT_EQ(got, nan_bits);
}

TEST(Payload, Enum)
{
	static const tracery_enum_entry entries[] = {{"a", 0, 0}, {"b", 1, 5}};
	static const tracery_enum_desc e{"e", entries, 2};
	const std::vector<tracery_field_desc> f{field("e8", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &e),
	                                        field("e32", TRACERY_TYPE_ENUM, TRACERY_TYPE_S32, 0, &e)};
	const auto d = event(f);
	const uint8_t v8 = 3;
	const int32_t v32 = -7;
	const tracery_arg args[] = {arg(v8), arg(v32)};
	EXPECT_EQ(encode(d, args), (Bytes{3, 0xF9, 0xFF, 0xFF, 0xFF}));
	EXPECT_TRUE(tracery::event::EventLayout(d).is_fixed_size());
}

TEST(Payload, Strings)
{
	const std::vector<tracery_field_desc> f{field("s", TRACERY_TYPE_STRING)};
	const auto d = event(f);
	auto enc = [&](const void *p, uint32_t len) {
		const tracery_arg a{p, len};
		return encode(d, &a);
	};
	EXPECT_EQ(enc("hi", 2), (Bytes{'h', 'i', 0}));
	EXPECT_EQ(enc("", 0), (Bytes{0}));
	EXPECT_EQ(enc(nullptr, 5), (Bytes{0}));                // NULL -> ""
	EXPECT_EQ(enc("hello", 3), (Bytes{'h', 'e', 'l', 0})); // cut at len
	// A NUL among the measured bytes (the program changed the string after the
	// call site measured it): the record keeps the size it was given.
	EXPECT_EQ(enc("a\0b", 3), (Bytes{'a', '?', 'b', 0}));
	EXPECT_EQ(enc("\0\xff"
	              "abcdefgh\0",
	              11),
	          (Bytes{'?', '?', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', '?', 0}));
	EXPECT_EQ(enc("\xc3\xa9", 2), (Bytes{0xC3, 0xA9, 0})); // valid UTF-8 kept
	EXPECT_EQ(enc("a\xff\xfe", 3), (Bytes{'a', '?', '?', 0}));
	EXPECT_FALSE(tracery::event::EventLayout(d).is_fixed_size());
	EXPECT_EQ(tracery::event::EventLayout(d).fixed_size(), 1u);
}

TEST(Payload, ArraysSequencesBlobs)
{
	const std::vector<tracery_field_desc> f{
		field("arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 3),
		field("seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U32),
		field("blob", TRACERY_TYPE_BLOB),
		field("dseq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_DOUBLE),
	};
	const auto d = event(f);
	const int16_t arr[3] = {-1, 2, 0x0304};
	const uint32_t seq[2] = {0x01020304, 5};
	const uint8_t blob[3] = {0xDE, 0xAD, 0x00};
	const double dseq[1] = {2.0}; // 0x4000000000000000
	const tracery_arg args[] = {{arr, 3}, {seq, 2}, {blob, 3}, {dseq, 1}};
	EXPECT_EQ(encode(d, args), (Bytes{0xFF, 0xFF, 2, 0, 4,    3,                            // arr
	                                  2,    0,    0, 0, 4,    3,    2, 1, 5, 0, 0, 0,       // seq
	                                  3,    0,    0, 0, 0xDE, 0xAD, 0,                      // blob
	                                  1,    0,    0, 0, 0,    0,    0, 0, 0, 0, 0, 0x40})); // dseq
	// Empty and NULL sequences/blobs record count 0; a NULL array records zeros.
	const tracery_arg empty[] = {{nullptr, 3}, {seq, 0}, {nullptr, 9}, {nullptr, 4}};
	EXPECT_EQ(encode(d, empty), (Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
	tracery::event::EventLayout l(d);
	EXPECT_FALSE(l.is_fixed_size());
	EXPECT_EQ(l.fixed_size(), 6u + 4 + 4 + 4);
	EXPECT_EQ(l.field_fixed_size(0), 6u);
	EXPECT_EQ(l.field_fixed_size(1), 4u);
}

TEST(Payload, FixedArrayIsFixedSize)
{
	const std::vector<tracery_field_desc> f{field("arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, 4),
	                                        field("zero", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U64, 0)};
	const auto d = event(f);
	const uint8_t arr[4] = {1, 2, 3, 4};
	const uint64_t none[1] = {0};
	const tracery_arg args[] = {{arr, 4}, {none, 0}};
	tracery::event::EventLayout l(d);
	EXPECT_TRUE(l.is_fixed_size());
	EXPECT_EQ(l.fixed_size(), 4u);
	EXPECT_EQ(encode(d, args), (Bytes{1, 2, 3, 4}));
	// Fewer elements given than declared: the rest are zeros; more: cut.
	const tracery_arg short_args[] = {{arr, 2}, {none, 0}};
	EXPECT_EQ(encode(d, short_args), (Bytes{1, 2, 0, 0}));
	const uint8_t five[5] = {9, 8, 7, 6, 5};
	const tracery_arg long_args[] = {{five, 5}, {none, 1}};
	EXPECT_EQ(encode(d, long_args), (Bytes{9, 8, 7, 6}));
}

TEST(Payload, NoFields)
{
	const auto d = event({});
	tracery::event::EventLayout l(d);
	EXPECT_TRUE(l.valid());
	EXPECT_EQ(l.fixed_size(), 0u);
	EXPECT_EQ(tracery::event::payload_size(d, nullptr), 0u);
}

TEST(Payload, InvalidDescriptors)
{
	const std::vector<tracery_field_desc> bad_type{field("x", 99)};
	EXPECT_NE(tracery::event::event_desc_error(event(bad_type)), nullptr);
	EXPECT_FALSE(tracery::event::EventLayout(event(bad_type)).valid());
	const std::vector<tracery_field_desc> enum_no_desc{field("x", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8)};
	EXPECT_NE(tracery::event::event_desc_error(event(enum_no_desc)), nullptr);
	const std::vector<tracery_field_desc> enum_float{field("x", TRACERY_TYPE_ENUM, TRACERY_TYPE_FLOAT)};
	EXPECT_NE(tracery::event::event_desc_error(event(enum_float)), nullptr);
	const std::vector<tracery_field_desc> seq_of_string{field("x", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_STRING)};
	EXPECT_NE(tracery::event::event_desc_error(event(seq_of_string)), nullptr);
	const std::vector<tracery_field_desc> no_name{field(nullptr, TRACERY_TYPE_U8)};
	EXPECT_NE(tracery::event::event_desc_error(event(no_name)), nullptr);
	std::vector<tracery_field_desc> many(17, field("x", TRACERY_TYPE_U8));
	EXPECT_EQ(tracery::event::event_desc_error(event(many)), nullptr);
	EXPECT_FALSE(tracery::event::EventLayout(event(many)).valid()); // > kMaxFields: use the free functions
	std::vector<tracery_arg> args(17);
	uint8_t v = 1;
	for (auto &a : args)
		a = arg(v);
	EXPECT_EQ(tracery::event::payload_size(event(many), args.data()), 17u);
}

TEST(Packet, PrefixLayout)
{
	Uuid u;
	for (int i = 0; i < 16; ++i)
		u.bytes[i] = static_cast<uint8_t>(0xA0 + i);
	PacketInfo info;
	info.timestamp_begin = 0x0102030405060708ull;
	info.timestamp_end = 0x1112131415161718ull;
	info.events_discarded = 3;
	info.seq = 9;
	info.cpu_id = 0xCAFE;
	Bytes b(kPacketPrefixSize + 1, 0xAA);
	write_packet_prefix(b.data(), u, 0x11223344, 0x5566778899AABBCCull, info, 16);
	EXPECT_EQ(b[kPacketPrefixSize], 0xAA);
	EXPECT_EQ(Bytes(b.begin(), b.begin() + 4), (Bytes{0xC1, 0x1F, 0xFC, 0xC1}));
	EXPECT_EQ(std::memcmp(b.data() + 4, u.bytes.data(), 16), 0);
	EXPECT_EQ(tracery::base::load_le<uint32_t>(b.data() + 20), 0x11223344u);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 24), 0x5566778899AABBCCull);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 32), info.timestamp_begin);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 40), info.timestamp_end);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 48), (84u + 16u) * 8);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 56), (84u + 16u) * 8);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 64), 9u);
	EXPECT_EQ(tracery::base::load_le<uint64_t>(b.data() + 72), 3u);
	EXPECT_EQ(tracery::base::load_le<uint32_t>(b.data() + 80), 0xCAFEu);
}

TEST(Utf8, Sanitize)
{
	auto s = [](std::string in) { return tracery::base::sanitize_utf8(in); };
	EXPECT_EQ(s("plain ascii"), "plain ascii");
	EXPECT_EQ(s("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	EXPECT_EQ(s("\x80"), "?");                // lone continuation byte
	EXPECT_EQ(s("\xc0\xaf"), "??");           // overlong
	EXPECT_EQ(s("\xed\xa0\x80"), "???");      // surrogate
	EXPECT_EQ(s("\xf4\x90\x80\x80"), "????"); // above U+10FFFF
	EXPECT_EQ(s("\xf5"), "?");
	EXPECT_EQ(s("a\xe2\x82"), "a??"); // truncated at the end
	EXPECT_EQ(s("\xe2\x82"
	            "a"),
	          "??a");
	EXPECT_EQ(s("\xff\xc3\xa9"), "?\xc3\xa9");
	EXPECT_TRUE(tracery::base::is_ascii(reinterpret_cast<const uint8_t *>("0123456789abcdefg"), 17));
	EXPECT_FALSE(tracery::base::is_ascii(reinterpret_cast<const uint8_t *>("0123456789abcde\x80g"), 17));
}

// Every length up to 40 and every position of one NUL or one byte >= 0x80
// (the word loop, the overlapping last word, the 4-byte pair, the bytes):
// found and replaced, the rest copied as it is.
TEST(Utf8, CopyStringTextReplacesEveryNulAndStrayByte)
{
	for (size_t n = 0; n <= 40; ++n) {
		std::vector<uint8_t> text(n), out(n + 1, 0xAA);
		for (size_t i = 0; i < n; ++i)
			text[i] = static_cast<uint8_t>('a' + i % 26);
		tracery::base::copy_string_text(out.data(), text.data(), n);
		EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + n), text) << n;
		EXPECT_EQ(out[n], 0xAA) << "wrote past the text, n = " << n;
		for (size_t at = 0; at < n; ++at)
			for (uint8_t bad : {uint8_t{0}, uint8_t{0x80}, uint8_t{0xff}}) {
				std::vector<uint8_t> in = text, want = text;
				in[at] = bad;
				want[at] = '?';
				tracery::base::copy_string_text(out.data(), in.data(), n);
				EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + n), want)
					<< n << " " << at << " " << +bad;
			}
	}
	const uint8_t e_acute[] = {'x', 0xC3, 0xA9, 'y', 'z', 'z', 'z', 'z', 'z'}; // valid UTF-8 is kept
	uint8_t out[sizeof e_acute];
	tracery::base::copy_string_text(out, e_acute, sizeof e_acute);
	EXPECT_EQ(std::memcmp(out, e_acute, sizeof out), 0);
}
