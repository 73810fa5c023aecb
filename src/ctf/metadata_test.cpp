// ctf/metadata_test.cpp — the TSDL text: preamble, stream and event classes, escaping.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "ctf/metadata.hpp"
#include "ctf/tsdl.hpp"

using namespace tracery::ctf;

namespace {

bool contains(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

#define EXPECT_CONTAINS(text, needle) \
	EXPECT_TRUE(contains(text, needle)) << "missing: " << (needle) << "\nin:\n" << (text)
#define EXPECT_NOT_CONTAINS(text, needle) \
	EXPECT_FALSE(contains(text, needle)) << "unexpected: " << (needle) << "\nin:\n" << (text)

TraceInfo test_info()
{
	TraceInfo info;
	info.uuid = *Uuid::parse("01234567-89ab-cdef-0123-456789abcdef");
	info.hostname = "host \"one\"";
	info.clock_scale = tracery::base::ns_tick_scale(1700000000123456789);
	info.env = {{"procname", std::string("my\\proc")}, {"vpid", int64_t{-12}}};
	return info;
}

tracery_event_desc event(const char *prov, const char *name, const tracery_field_desc *f, uint32_t n)
{
	return tracery_event_desc{prov, name, f, n, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
}

} // namespace

TEST(Tsdl, StringLiteral)
{
	EXPECT_EQ(tsdl_string_literal("plain"), "\"plain\"");
	EXPECT_EQ(tsdl_string_literal(""), "\"\"");
	EXPECT_EQ(tsdl_string_literal("a\"b\\c"), "\"a\\\"b\\\\c\"");
	EXPECT_EQ(tsdl_string_literal("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
	EXPECT_EQ(tsdl_string_literal(std::string("\x01\x1b\x7f", 3)), "\"\\001\\033\\177\"");
	EXPECT_EQ(tsdl_string_literal("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
	EXPECT_EQ(tsdl_string_literal("bad\xff\xc3"), "\"bad??\"");
	// A NUL cannot reach the reader's C strings: escaped too.
	EXPECT_EQ(tsdl_string_literal(std::string("a\0b", 3)), "\"a\\000b\"");
}

TEST(Tsdl, FieldNames)
{
	EXPECT_EQ(tsdl_field_name("count"), "_count");
	EXPECT_EQ(tsdl_field_name("struct"), "_struct"); // keyword: harmless once prefixed
	EXPECT_EQ(tsdl_field_name("Bool"), "_Bool_");    // _Bool is a keyword
	EXPECT_EQ(tsdl_field_name("Complex"), "_Complex_");
	EXPECT_EQ(tsdl_field_name("Imaginary"), "_Imaginary_");
	EXPECT_EQ(tsdl_field_name("my-field.x"), "_my_field_x");
	EXPECT_EQ(tsdl_field_name("1st"), "_1st");
	EXPECT_EQ(tsdl_field_name(""), "_field");
	EXPECT_EQ(tsdl_field_name("gr\xc3\xb6\xc3\x9f"
	                          "e"),
	          "_gr____e");
	EXPECT_EQ(tsdl_field_name("uint32_t"), "_uint32_t");
	FieldNameSet names;
	EXPECT_EQ(names.unique("_x"), "_x");
	EXPECT_EQ(names.unique("_x"), "_x_2");
	EXPECT_EQ(names.unique("_x"), "_x_3");
	EXPECT_EQ(names.unique("_x_2"), "_x_2_2");
}

TEST(Tsdl, Identifiers)
{
	EXPECT_TRUE(is_tsdl_identifier("abc_1"));
	EXPECT_TRUE(is_tsdl_identifier("_x"));
	EXPECT_FALSE(is_tsdl_identifier("1abc"));
	EXPECT_FALSE(is_tsdl_identifier(""));
	EXPECT_FALSE(is_tsdl_identifier("a-b"));
	for (const char *k : {"event", "stream", "trace", "clock", "env", "string", "integer", "enum", "struct",
	                      "variant", "typealias", "align", "_Bool", "_Imaginary"})
		EXPECT_TRUE(is_tsdl_keyword(k)) << k;
	EXPECT_FALSE(is_tsdl_keyword("events"));
}

TEST(Metadata, Preamble)
{
	const MetadataWriter mw(test_info());
	const std::string m = mw.preamble();
	EXPECT_EQ(m.rfind("/* CTF 1.8 */\n", 0), 0u);
	EXPECT_CONTAINS(m, "major = 1;");
	EXPECT_CONTAINS(m, "minor = 8;");
	EXPECT_CONTAINS(m, "uuid = \"01234567-89ab-cdef-0123-456789abcdef\";");
	EXPECT_CONTAINS(m, "byte_order = le;");
	EXPECT_CONTAINS(m, "\tpacket.header := struct {\n"
	                   "\t\tuint32_t magic;\n"
	                   "\t\tuint8_t  uuid[16];\n"
	                   "\t\tuint32_t stream_id;\n"
	                   "\t\tuint64_t stream_instance_id;\n"
	                   "\t} align(8);");
	// env
	EXPECT_CONTAINS(m, "hostname = \"host \\\"one\\\"\";");
	EXPECT_CONTAINS(m, "domain = \"ust\";");
	EXPECT_CONTAINS(m, "tracer_name = \"tracery\";");
	EXPECT_CONTAINS(m, "tracer_major = ");
	EXPECT_CONTAINS(m, "tracer_minor = ");
	EXPECT_CONTAINS(m, "tracer_patch = ");
	EXPECT_CONTAINS(m, "procname = \"my\\\\proc\";");
	EXPECT_CONTAINS(m, "vpid = -12;");
	// clock
	EXPECT_CONTAINS(m, "name = \"monotonic\";");
	EXPECT_CONTAINS(m, "freq = 1000000000;");
	EXPECT_CONTAINS(m, "offset_s = 1700000000;");
	EXPECT_CONTAINS(m, "offset = 123456789;");
	EXPECT_CONTAINS(m, "absolute = true;");
	EXPECT_CONTAINS(m, "precision = 1;");
	// The clock UUID defaults to the trace UUID: it appears twice.
	EXPECT_NE(m.find("01234567-89ab-cdef-0123-456789abcdef", m.find("clock {")), std::string::npos);
	// Packet context and event header.
	EXPECT_CONTAINS(m, "struct packet_context {\n"
	                   "\tuint64_clock_monotonic_t timestamp_begin;\n"
	                   "\tuint64_clock_monotonic_t timestamp_end;\n"
	                   "\tuint64_t content_size;\n"
	                   "\tuint64_t packet_size;\n"
	                   "\tuint64_t packet_seq_num;\n"
	                   "\tuint64_t events_discarded;\n"
	                   "\tuint32_t cpu_id;\n"
	                   "} align(8);");
	EXPECT_CONTAINS(m, "enum : uint5_t { compact = 0 ... 30, extended = 31 } id;");
	EXPECT_CONTAINS(m, "typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; }");
	EXPECT_CONTAINS(m, "uint27_clock_monotonic_t timestamp;");
	EXPECT_CONTAINS(m, "uint32_t id;\n\t\t\tuint64_clock_monotonic_t timestamp;");
	// The clock is declared before the types mapped to it.
	EXPECT_LT(m.find("clock {"), m.find("map = clock.monotonic.value"));
}

TEST(Metadata, ClockOffsetAndUuid)
{
	TraceInfo info = test_info();
	info.clock_scale = tracery::base::ns_tick_scale(-1500000000); // -1.5 s = -2 s + 0.5 s
	info.clock_uuid = *Uuid::parse("ffffffff-0000-0000-0000-000000000001");
	info.clock_scale.description = "desc \"q\"";
	info.clock_precision = 30;
	const std::string m = MetadataWriter(info).preamble();
	EXPECT_CONTAINS(m, "offset_s = -2;");
	EXPECT_CONTAINS(m, "offset = 500000000;");
	EXPECT_CONTAINS(m, "uuid = \"ffffffff-0000-0000-0000-000000000001\";");
	EXPECT_CONTAINS(m, "description = \"desc \\\"q\\\"\";");
	EXPECT_CONTAINS(m, "precision = 30;");
	info.clock_scale = {2500000001, 1700000000, 2500000000, "TSC"}; // a TSC's rate, in Hz
	const std::string t = MetadataWriter(info).preamble();
	EXPECT_CONTAINS(t, "freq = 2500000001;");
	EXPECT_CONTAINS(t, "offset_s = 1700000000;");
	EXPECT_CONTAINS(t, "offset = 2500000000;");
	info.clock_scale = tracery::base::ns_tick_scale(0);
	const std::string z = MetadataWriter(info).preamble();
	EXPECT_CONTAINS(z, "offset_s = 0;");
	EXPECT_CONTAINS(z, "offset = 0;");
}

TEST(Metadata, DefaultHostname)
{
	TraceInfo info = test_info();
	info.hostname.clear();
	const MetadataWriter mw(info);
	EXPECT_FALSE(mw.info().hostname.empty());
	EXPECT_CONTAINS(mw.preamble(), "hostname = " + tsdl_string_literal(mw.info().hostname) + ";");
}

TEST(Metadata, BadEnvKeys)
{
	for (const char *key :
	     {"", "1x", "a-b", "event", "stream", "uint32_t", "hostname", "domain", "tracer_name", "tracer_major"}) {
		TraceInfo info = test_info();
		info.env.push_back({key, int64_t{1}});
		EXPECT_THROW(MetadataWriter{info}, std::invalid_argument) << key;
	}
	TraceInfo dup = test_info();
	dup.env.push_back({"vpid", int64_t{1}});
	EXPECT_THROW(MetadataWriter{dup}, std::invalid_argument);
}

TEST(Metadata, IdentityIsAParameter)
{
	TraceInfo info = test_info();
	info.identity = {{"domain", std::string("kernel")}, {"tracer_patchlevel", int64_t{3}}};
	const std::string m = MetadataWriter(info).preamble();
	EXPECT_CONTAINS(m, "\tdomain = \"kernel\";\n\ttracer_patchlevel = 3;\n\tprocname = ");
	EXPECT_EQ(m.find("tracery"), std::string::npos);
	EXPECT_EQ(m.find("\"ust\""), std::string::npos);
	// An env entry may not repeat an identity key, nor an identity key hostname.
	info.env.push_back({"tracer_patchlevel", int64_t{4}});
	EXPECT_THROW(MetadataWriter{info}, std::invalid_argument);
	info = test_info();
	info.identity.push_back({"hostname", std::string("x")});
	EXPECT_THROW(MetadataWriter{info}, std::invalid_argument);
}

TEST(Metadata, StreamClass)
{
	const std::string none = MetadataWriter::stream_class(3, {});
	EXPECT_EQ(none, "stream {\n"
	                "\tid = 3;\n"
	                "\tevent.header := struct event_header_compact;\n"
	                "\tpacket.context := struct packet_context;\n"
	                "};\n\n");
	const std::string all = MetadataWriter::stream_class(0, {true, true, true});
	EXPECT_CONTAINS(all, "\tevent.context := struct {\n"
	                     "\t\tint32_t _vpid;\n"
	                     "\t\tint32_t _vtid;\n"
	                     "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } _procname[17];\n"
	                     "\t} align(8);\n");
	const std::string tid = MetadataWriter::stream_class(1, {false, true, false});
	EXPECT_CONTAINS(tid, "int32_t _vtid;");
	EXPECT_NOT_CONTAINS(tid, "_vpid");
	EXPECT_NOT_CONTAINS(tid, "_procname");

	// The other user contexts follow, in the table's order, as LTTng-UST types them.
	tracery::event::ContextOptions more{false, true, false};
	for (const char *name : {"perf:thread:page-fault", "vgid", "ip", "time_ns"})
		ASSERT_TRUE(tracery::event::set_user_context(more, name));
	EXPECT_CONTAINS(MetadataWriter::stream_class(2, more), "\tevent.context := struct {\n"
	                                                       "\t\tint32_t _vtid;\n"
	                                                       "\t\tuint64_t _ip;\n"
	                                                       "\t\tuint32_t _vgid;\n"
	                                                       "\t\tuint64_t _time_ns;\n"
	                                                       "\t\tuint64_t _perf_thread_page_fault;\n"
	                                                       "\t} align(8);\n");
}

TEST(Metadata, EventClassAllTypes)
{
	static const tracery_enum_entry entries[] = {{"a \"quoted\"", 0, 0}, {"range", 1, 10}, {"neg", -3, -1}};
	static const tracery_enum_desc e{"e", entries, 3};
	const tracery_field_desc f[] = {
		{"u8", TRACERY_TYPE_U8, 0, 0, nullptr},
		{"u16", TRACERY_TYPE_U16, 0, 0, nullptr},
		{"u32", TRACERY_TYPE_U32, 0, 0, nullptr},
		{"u64", TRACERY_TYPE_U64, 0, 0, nullptr},
		{"s8", TRACERY_TYPE_S8, 0, 0, nullptr},
		{"s16", TRACERY_TYPE_S16, 0, 0, nullptr},
		{"s32", TRACERY_TYPE_S32, 0, 0, nullptr},
		{"s64", TRACERY_TYPE_S64, 0, 0, nullptr},
		{"f", TRACERY_TYPE_FLOAT, 0, 0, nullptr},
		{"d", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},
		{"b", TRACERY_TYPE_BOOL, 0, 0, nullptr},
		{"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_S16, 0, &e},
		{"s", TRACERY_TYPE_STRING, 0, 0, nullptr},
		{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U16, 4, nullptr},
		{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_S64, 0, nullptr},
		{"blob", TRACERY_TYPE_BLOB, 0, 0, nullptr},
	};
	const auto d = event("prov", "name", f, 16);
	const std::string m = MetadataWriter::event_class(2, 7, d);
	EXPECT_EQ(m, "event {\n"
	             "\tname = \"prov:name\";\n"
	             "\tid = 7;\n"
	             "\tstream_id = 2;\n"
	             "\tfields := struct {\n"
	             "\t\tuint8_t _u8;\n"
	             "\t\tuint16_t _u16;\n"
	             "\t\tuint32_t _u32;\n"
	             "\t\tuint64_t _u64;\n"
	             "\t\tint8_t _s8;\n"
	             "\t\tint16_t _s16;\n"
	             "\t\tint32_t _s32;\n"
	             "\t\tint64_t _s64;\n"
	             "\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 8; } _f;\n"
	             "\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } _d;\n"
	             "\t\tuint8_t _b;\n"
	             "\t\tenum : int16_t { \"a \\\"quoted\\\"\" = 0, \"range\" = 1 ... 10, \"neg\" = -3 ... -1 } _e;\n"
	             "\t\tstring _s;\n"
	             "\t\tuint16_t _arr[4];\n"
	             "\t\tuint32_t __seq_length;\n"
	             "\t\tint64_t _seq[__seq_length];\n"
	             "\t\tuint32_t __blob_length;\n"
	             "\t\tinteger { size = 8; align = 8; signed = false; base = 16; } _blob[__blob_length];\n"
	             "\t};\n"
	             "};\n\n");
}

TEST(Metadata, EnumRanges)
{
	static const tracery_enum_entry entries[] = {
		{"neg", -5, -1}, {"big", 250, 300}, {"ok", 3, 3}, {"backwards", 9, 8}, {nullptr, 4, 4},
	};
	static const tracery_enum_desc e{"e", entries, 5};
	const tracery_field_desc u8[] = {{"x", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &e}};
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 0, event("p", "n", u8, 1)),
	                "enum : uint8_t { \"big\" = 250 ... 255, \"ok\" = 3, \"\" = 4 } _x;");
	const tracery_field_desc s8[] = {{"x", TRACERY_TYPE_ENUM, TRACERY_TYPE_S8, 0, &e}};
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 0, event("p", "n", s8, 1)),
	                "enum : int8_t { \"neg\" = -5 ... -1, \"ok\" = 3, \"\" = 4 } _x;");
	static const tracery_enum_entry wide[] = {{"all", INT64_MIN, INT64_MAX}, {"top", -1, -1}};
	static const tracery_enum_desc w{"w", wide, 2};
	const tracery_field_desc s64[] = {{"x", TRACERY_TYPE_ENUM, TRACERY_TYPE_S64, 0, &w}};
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 0, event("p", "n", s64, 1)),
	                "enum : int64_t { \"all\" = -9223372036854775808 ... 9223372036854775807, \"top\" = -1 } _x;");
	// U64: int64 values are read as their uint64 bit pattern; [0, -1] is
	// everything, [-1, 0] is backwards and dropped.
	static const tracery_enum_entry u64e[] = {{"all", 0, -1}, {"back", -1, 0}, {"max", -1, -1}};
	static const tracery_enum_desc u{"u", u64e, 3};
	const tracery_field_desc u64[] = {{"x", TRACERY_TYPE_ENUM, TRACERY_TYPE_U64, 0, &u}};
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 0, event("p", "n", u64, 1)),
	                "enum : uint64_t { \"all\" = 0 ... 18446744073709551615, \"max\" = 18446744073709551615 } _x;");
	// No usable entry: the plain integer type.
	static const tracery_enum_desc empty{"empty", nullptr, 0};
	const tracery_field_desc none[] = {{"x", TRACERY_TYPE_ENUM, TRACERY_TYPE_U32, 0, &empty}};
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 0, event("p", "n", none, 1)), "\t\tuint32_t _x;\n");
	static const tracery_enum_entry only_neg[] = {{"neg", -5, -1}};
	static const tracery_enum_desc on{"on", only_neg, 1};
	const tracery_field_desc u16[] = {{"x", TRACERY_TYPE_ENUM, TRACERY_TYPE_U16, 0, &on}};
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 0, event("p", "n", u16, 1)), "\t\tuint16_t _x;\n");
}

TEST(Metadata, EventNamesAndFieldNames)
{
	const tracery_field_desc f[] = {
		{"x", TRACERY_TYPE_U8, 0, 0, nullptr},
		{"x", TRACERY_TYPE_U8, 0, 0, nullptr},
		{"s", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U8, 0, nullptr},
		{"_s_length", TRACERY_TYPE_U8, 0, 0, nullptr},
		{"event", TRACERY_TYPE_STRING, 0, 0, nullptr},
		{"a b", TRACERY_TYPE_BLOB, 0, 0, nullptr},
	};
	const std::string m = MetadataWriter::event_class(0, 1, event("my\"prov", "ev\\\n", f, 6));
	EXPECT_CONTAINS(m, "name = \"my\\\"prov:ev\\\\\\n\";");
	EXPECT_CONTAINS(m, "\t\tuint8_t _x;\n\t\tuint8_t _x_2;\n");
	// The user's "_s_length" keeps its name; the count of "s" gets another.
	EXPECT_CONTAINS(m, "\t\tuint32_t __s_length_2;\n\t\tuint8_t _s[__s_length_2];\n\t\tuint8_t __s_length;\n");
	EXPECT_CONTAINS(m, "\t\tstring _event;\n");
	EXPECT_CONTAINS(m, "\t\tuint32_t __a_b_length;\n");
	EXPECT_CONTAINS(m, " _a_b[__a_b_length];\n");
}

// An address field (TRACERY_FIELD_HEX) declares base 16, signed or not and of
// its own size; its neighbours, of the same types without the hint, do not.
TEST(Metadata, HexFieldsDeclareBase16)
{
	const tracery_field_desc f[] = {
		{"ptr", TRACERY_TYPE_U64, TRACERY_FIELD_HEX, 0, nullptr},   {"size", TRACERY_TYPE_U64, 0, 0, nullptr},
		{"flags", TRACERY_TYPE_S32, TRACERY_FIELD_HEX, 0, nullptr}, {"status", TRACERY_TYPE_S32, 0, 0, nullptr},
		{"crc", TRACERY_TYPE_U16, TRACERY_FIELD_HEX, 0, nullptr},
	};
	const std::string m = MetadataWriter::event_class(0, 1, event("p", "n", f, 5));
	EXPECT_CONTAINS(m, "\t\tinteger { size = 64; align = 8; signed = false; base = 16; } _ptr;\n"
	                   "\t\tuint64_t _size;\n"
	                   "\t\tinteger { size = 32; align = 8; signed = true; base = 16; } _flags;\n"
	                   "\t\tint32_t _status;\n"
	                   "\t\tinteger { size = 16; align = 8; signed = false; base = 16; } _crc;\n");
	const tracery_field_desc plain[] = {{"ptr", TRACERY_TYPE_U64, 0, 0, nullptr}};
	EXPECT_NOT_CONTAINS(MetadataWriter::event_class(0, 1, event("p", "n", plain, 1)), "base");
	// the hint on a type that takes none, or another value, is refused
	const tracery_field_desc hex_double[] = {{"d", TRACERY_TYPE_DOUBLE, TRACERY_FIELD_HEX, 0, nullptr}};
	EXPECT_THROW(MetadataWriter::event_class(0, 1, event("p", "n", hex_double, 1)), std::invalid_argument);
	const tracery_field_desc other_hint[] = {{"x", TRACERY_TYPE_U32, 0x40, 0, nullptr}};
	EXPECT_THROW(MetadataWriter::event_class(0, 1, event("p", "n", other_hint, 1)), std::invalid_argument);
}

TEST(Metadata, NoFieldsAndBadDescriptors)
{
	EXPECT_CONTAINS(MetadataWriter::event_class(0, 1, event("p", "n", nullptr, 0)), "\tfields := struct {\n\t};\n");
	const tracery_field_desc bad[] = {{"x", 77, 0, 0, nullptr}};
	EXPECT_THROW(MetadataWriter::event_class(0, 1, event("p", "n", bad, 1)), std::invalid_argument);
	EXPECT_THROW(MetadataWriter::event_class(0, 1, event(nullptr, "n", nullptr, 0)), std::invalid_argument);
}
