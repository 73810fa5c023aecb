// analysis/output/json_text_test.cpp — JSON from hostile traces: strings
// (escapes, bytes that are not UTF-8), numbers for JavaScript readers
// (integers beyond 2^53 quoted, the shortest floats, non-finite as strings),
// and decoded values as JSON, bounded.
#include "analysis/output/json_text.hpp"
#include "ctf/reader/tsdl_parser.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace tracery::analysis;
namespace ctf = tracery::ctf;

std::string json(std::string_view s)
{
	std::string o;
	append_json_string(o, s);
	return o;
}

TEST(ExportJson, StringsEscapedAndValidUtf8)
{
	EXPECT_EQ(json("plain text"), "\"plain text\"");
	EXPECT_EQ(json("a\"b\\c"), "\"a\\\"b\\\\c\"");
	EXPECT_EQ(json(std::string_view("\n\t\x01\x1f\0", 5)), "\"\\u000a\\u0009\\u0001\\u001f\\u0000\"");
	EXPECT_EQ(json("caf\xc3\xa9"), "\"caf\xc3\xa9\""); // UTF-8 kept
	EXPECT_EQ(json("x\xff\xc3(y"), "\"x?"
	                               "?(y\"");    // not UTF-8: '?'
	EXPECT_EQ(json("\xed\xa0\x80"), "\"???\""); // a surrogate
	EXPECT_EQ(json(""), "\"\"");
}

// The payload declaration of the one event class of a trace's metadata (a
// stream 0 with an event 0 whose fields are `fields`, after `types`).
struct Declared {
	ctf::reader::TraceClass tc;
	std::unique_ptr<ctf::reader::TracePlans> plans;
	ctf::reader::FieldDecl payload;
};

std::unique_ptr<Declared> declare(const std::string &types, const std::string &fields)
{
	auto d = std::make_unique<Declared>();
	d->tc = ctf::reader::parse_tsdl("typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	                                "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	                                "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	                                "trace { major = 1; minor = 8; byte_order = le; };\n"
	                                "stream { id = 0; };\n" +
	                                types + "event { name = \"e\"; id = 0; stream_id = 0; fields := struct { " +
	                                fields + " }; };\n");
	d->plans = std::make_unique<ctf::reader::TracePlans>(d->tc);
	const auto *stream = d->plans->stream(0);
	d->payload = ctf::reader::scope_root(*stream, stream->event(0), ctf::reader::Scope::payload);
	return d;
}

ctf::reader::Value value(uint64_t u, uint64_t n = 0)
{
	ctf::reader::Value x;
	x.u = u;
	x.n = n;
	return x;
}

ctf::reader::Value real(double f)
{
	ctf::reader::Value x;
	x.f = f;
	x.n = 0;
	return x;
}

// A decoded struct { _id: u32, n, xs: sequence of double, tag, v: variant { a: s64, b: string } }
// written as JSON, then the same declaration with values a hostile trace could give.
TEST(ExportJson, DecodedValuesAsJsonBounded)
{
	const auto d =
		declare("", "uint32_t _id; uint8_t n; floating_point { exp_dig = 11; mant_dig = 53; align = 8; } "
	                    "xs[n]; enum : uint8_t { a, b } tag; variant <tag> { int64_t a; string b; } v;");
	ASSERT_TRUE(d->payload);
	const char text[] = "q\"";
	ctf::reader::Value str;
	str.s = text;
	str.n = 2;
	const auto json_of = [&](std::vector<ctf::reader::Value> vals, size_t *next = nullptr) {
		std::string o;
		const size_t n = append_json_value(o, d->payload, vals, 0);
		if (next)
			*next = n;
		return o;
	};
	size_t next = 0;
	EXPECT_EQ(json_of({value(0), value(7), value(2), value(0, 2), real(1.5), real(NAN), value(1), value(0, 1), str},
	                  &next),
	          "{\"id\":7,\"n\":2,\"xs\":[1.5,null],\"tag\":\"b\",\"v\":\"q\\\"\"}");
	EXPECT_EQ(next, 9u);
	ctf::reader::Value minus = value(0);
	minus.i = -3;
	EXPECT_EQ(json_of({value(0), value(7), value(0), value(0, 0), value(0), value(0, 0), minus}),
	          "{\"id\":7,\"n\":0,\"xs\":[],\"tag\":\"a\",\"v\":-3}");
	// A variant selecting an option that does not exist, and a sequence longer than the values.
	EXPECT_EQ(json_of({value(0), value(7), value(0), value(0, 0), value(0), value(0, 9)}, &next),
	          "{\"id\":7,\"n\":0,\"xs\":[],\"tag\":\"a\",\"v\":null}");
	EXPECT_EQ(next, 6u);
	EXPECT_EQ(json_of({value(0), value(7), value(0), value(0, 1000000)}, &next),
	          "{\"id\":7,\"n\":0,\"xs\":[],\"tag\":null,\"v\":null}");
	EXPECT_EQ(next, 4u);
	// Types nested deeper than 64 levels: 80 structs, each the only member of the one before.
	std::string types = "struct s0 { uint32_t _id; };\n";
	for (int k = 1; k < 80; ++k)
		types += "struct s" + std::to_string(k) + " { struct s" + std::to_string(k - 1) + " _id; };\n";
	const auto deep = declare(types, "struct s79 _id;");
	ASSERT_TRUE(deep->payload);
	std::vector<ctf::reader::Value> many(82, value(5));
	std::string o;
	EXPECT_EQ(append_json_value(o, deep->payload, many, 0), many.size());
	const std::string level = "{\"id\":";
	EXPECT_EQ(o, [&] {
		std::string want;
		for (int k = 0; k < 65; ++k)
			want += level;
		return want + "null" + std::string(65, '}');
	}());
}

TEST(ExportJson, NumbersForJavaScriptReaders)
{
	const auto num = [](auto v) {
		std::string o;
		append_json_number(o, v);
		return o;
	};
	constexpr int64_t exact = int64_t{1} << 53;
	EXPECT_EQ(num(int64_t{0}), "0");
	EXPECT_EQ(num(int64_t{-42}), "-42");
	EXPECT_EQ(num(exact), "9007199254740992");
	EXPECT_EQ(num(-exact), "-9007199254740992");
	EXPECT_EQ(num(exact + 1), "\"9007199254740993\""); // a double would round it
	EXPECT_EQ(num(-exact - 1), "\"-9007199254740993\"");
	EXPECT_EQ(num(std::numeric_limits<int64_t>::min()), "\"-9223372036854775808\"");
	EXPECT_EQ(num(uint64_t{7}), "7");
	EXPECT_EQ(num(static_cast<uint64_t>(exact)), "9007199254740992");
	EXPECT_EQ(num(std::numeric_limits<uint64_t>::max()), "\"18446744073709551615\"");
	EXPECT_EQ(num(0.1), "0.1"); // the shortest that reads back the same
	EXPECT_EQ(num(1.5), "1.5");
	EXPECT_EQ(num(-2.0), "-2");
	EXPECT_EQ(num(1e300), "1e+300");
	EXPECT_EQ(num(NAN), "\"nan\"");
	EXPECT_EQ(num(INFINITY), "\"inf\"");
	EXPECT_EQ(num(-INFINITY), "\"-inf\"");
	std::string d;
	append_decimal(d, std::numeric_limits<int64_t>::min());
	EXPECT_EQ(d, "-9223372036854775808"); // ids and times: never quoted
}

} // namespace
