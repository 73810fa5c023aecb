// analysis/output/json_text_test.cpp — JSON from hostile traces: strings
// (escapes, bytes that are not UTF-8), numbers for JavaScript readers
// (integers beyond 2^53 quoted, the shortest floats, non-finite as strings),
// and decoded values as JSON, bounded.
#include "analysis/output/json_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using namespace tracery::analysis;

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

// A decoded struct { _id: u32, xs: sequence of double, v: variant { a: s64, b: string } }
// written as JSON, then the same plan with values a hostile trace could give.
TEST(ExportJson, DecodedValuesAsJsonBounded)
{
	namespace r = tracery::ctf::reader;
	const std::string id = "_id", xs = "xs", v = "v", a = "a", b = "b";
	r::Plan plan;
	plan.ops.resize(7);
	plan.ops[0] = {.kind = r::OpKind::structure, .next = 7, .count = 3};
	plan.ops[1] = {.kind = r::OpKind::u32, .next = 2, .name = &id};
	plan.ops[2] = {.kind = r::OpKind::sequence, .next = 4, .name = &xs};
	plan.ops[3] = {.kind = r::OpKind::float64, .next = 4};
	plan.ops[4] = {.kind = r::OpKind::variant, .next = 7, .count = 2, .table = 0, .name = &v};
	plan.ops[5] = {.kind = r::OpKind::integer, .is_signed = true, .next = 6, .name = &a};
	plan.ops[6] = {.kind = r::OpKind::string, .next = 7, .name = &b};
	r::Selector options;
	options.option_ops = {5, 6};
	plan.selectors.push_back(options);
	const auto value = [](uint64_t u, uint64_t n = 0) {
		r::Value x;
		x.u = u;
		x.n = n;
		return x;
	};
	const auto real = [](double f) {
		r::Value x;
		x.f = f;
		x.n = 0;
		return x;
	};
	const char text[] = "q\"";
	r::Value str;
	str.s = text;
	str.n = 2;
	const auto json_of = [&](std::vector<r::Value> vals, size_t *next = nullptr) {
		std::string o;
		const size_t n = append_json_value(o, plan, 0, vals, 0);
		if (next)
			*next = n;
		return o;
	};
	size_t next = 0;
	EXPECT_EQ(json_of({value(0), value(7), value(0, 2), real(1.5), real(NAN), value(1, 1), str}, &next),
	          "{\"id\":7,\"xs\":[1.5,null],\"v\":\"q\\\"\"}");
	EXPECT_EQ(next, 7u);
	r::Value minus = value(0);
	minus.i = -3;
	EXPECT_EQ(json_of({value(0), value(7), value(0, 0), value(0, 0), minus}), "{\"id\":7,\"xs\":[],\"v\":-3}");
	// A variant selecting an option that does not exist, and a sequence longer than the values.
	EXPECT_EQ(json_of({value(0), value(7), value(0, 0), value(0, 9)}, &next), "{\"id\":7,\"xs\":[],\"v\":null}");
	EXPECT_EQ(next, 4u);
	EXPECT_EQ(json_of({value(0), value(7), value(0, 1000000)}, &next), "{\"id\":7,\"xs\":[],\"v\":null}");
	EXPECT_EQ(next, 3u);
	// Metadata nested deeper than 64 levels: 80 structs, each the only member of the one before.
	r::Plan deep;
	deep.ops.resize(81);
	for (uint32_t k = 0; k < 80; ++k)
		deep.ops[k] = {.kind = r::OpKind::structure, .next = 81, .count = 1, .name = &id};
	deep.ops[80] = {.kind = r::OpKind::u32, .next = 81, .name = &id};
	std::vector<r::Value> many(81, value(5));
	std::string o;
	EXPECT_EQ(append_json_value(o, deep, 0, many, 0), many.size());
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
