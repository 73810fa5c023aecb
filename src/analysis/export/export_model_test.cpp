// analysis/export/export_model_test.cpp — the export model's pieces that need no
// trace: JSON strings (escapes, bytes that are not UTF-8; the HTML export's
// that cannot end a script element), decoded values as JSON, the name table, and the --span /
// --counter arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "analysis/export/export_model.hpp"
#include "analysis/export/html_export.hpp"
#include "analysis/output/json_text.hpp"

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

TEST(ExportJson, HtmlStringsCannotEndTheScript)
{
	const auto html = [](std::string_view s) {
		std::string o = "[";
		append_html_json_string(o, s);
		return o;
	};
	EXPECT_EQ(html("plain"), "[\"plain\"");
	EXPECT_EQ(html("</script><!--x"), "[\"\\u003c/script>\\u003c!--x\"");
	EXPECT_EQ(html("<\xff\"<"), "[\"\\u003c?\\\"\\u003c\""); // with the other escapes
}

TEST(ExportNames, EachOnce)
{
	NameTable t;
	const uint32_t a = t.id("a"), b = t.id("b");
	EXPECT_NE(a, b);
	EXPECT_EQ(t.id("a"), a);
	for (int i = 0; i < 1000; ++i) { // the deque keeps the strings where they are
		std::string name = "n";  // appended: GCC 12 -O3 warns falsely (-Wrestrict) on "n" + std::string
		name += std::to_string(i);
		t.id(name);
	}
	EXPECT_EQ(t.id("b"), b);
	EXPECT_EQ(t[b], "b");
	EXPECT_EQ(t.size(), 1002u);
}

TEST(ExportOptions, SpansAndCounters)
{
	ExportOptions o;
	o.add_span("app:req_begin,app:req_end");
	ASSERT_EQ(o.spans.size(), 1u);
	EXPECT_EQ(o.spans[0].begin, "app:req_begin");
	EXPECT_EQ(o.spans[0].end, "app:req_end");
	o.add_counter("app:tick:depth");
	ASSERT_EQ(o.counters.size(), 1u);
	EXPECT_EQ(o.counters[0].event, "app:tick");
	EXPECT_EQ(o.counters[0].field, "depth");
	for (const char *bad : {"app:a", "app:a,", ",app:b", "a,a", "a,b,c"})
		EXPECT_THROW(o.add_span(bad), std::invalid_argument) << bad;
	for (const char *bad : {"depth", "app:tick:", ":depth"})
		EXPECT_THROW(o.add_counter(bad), std::invalid_argument) << bad;
}

} // namespace
