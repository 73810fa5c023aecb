// analysis/export/timeline_test.cpp — the timeline model's pieces that need no
// trace: the HTML export's JSON strings that cannot end a script element, the
// name table, and the --span / --counter arguments.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "analysis/export/html_export.hpp"
#include "analysis/export/timeline.hpp"

namespace {

using namespace tracery::analysis;

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
