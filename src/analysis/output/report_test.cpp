// analysis/output/report_test.cpp — distributions (nearest-rank percentiles, sample
// standard deviation, log2 and linear buckets), reports as JSON and text
// (durations in the unit that fits, or fixed), --sort, --top, the
// histograms' --buckets/--bucket-width/--min/--max.
#include "analysis/output/report.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>

using namespace tracery::analysis;

namespace {

TEST(Distribution, SummaryAndPercentiles)
{
	Distribution d;
	for (int64_t v = 100; v >= 1; --v) // 1..100, unsorted
		d.add(v);
	const auto s = d.summary();
	EXPECT_EQ(s.count, 100u);
	EXPECT_EQ(s.min, 1);
	EXPECT_EQ(s.max, 100);
	EXPECT_EQ(s.total, 5050);
	EXPECT_DOUBLE_EQ(s.mean, 50.5);
	EXPECT_NEAR(s.stdev, std::sqrt(841.6666666666666), 1e-9); // sample: sum of squares 83325 / 99
	EXPECT_EQ(s.p50, 50);
	EXPECT_EQ(s.p90, 90);
	EXPECT_EQ(s.p99, 99);
	Distribution one;
	one.add(7);
	const auto o = one.summary();
	EXPECT_EQ(o.p50, 7);
	EXPECT_EQ(o.p99, 7);
	EXPECT_EQ(o.stdev, 0);
}

TEST(Distribution, Log2Histogram)
{
	Distribution d;
	for (int64_t v : {0, 1, 2, 3, 4, 1000, 1023, 1024})
		d.add(v);
	const auto h = d.histogram();
	ASSERT_EQ(h.size(), 11u); // [0,2) .. [1024,2048)
	EXPECT_EQ(h[0].lo, 0);
	EXPECT_EQ(h[0].hi, 2);
	EXPECT_EQ(h[0].count, 2u);
	EXPECT_EQ(h[1].lo, 2);
	EXPECT_EQ(h[1].count, 2u);
	EXPECT_EQ(h[2].count, 1u);
	EXPECT_EQ(h[3].count, 0u); // empty buckets between stay
	EXPECT_EQ(h[9].lo, 512);
	EXPECT_EQ(h[9].count, 2u);
	EXPECT_EQ(h[10].lo, 1024);
	EXPECT_EQ(h[10].hi, 2048);
	EXPECT_EQ(h[10].count, 1u);
	EXPECT_TRUE(Distribution().histogram().empty());
}

// Beyond kExactLimit values: bounded memory, every figure but the
// percentiles still exact, the percentiles within 1/128, merges as adds.
TEST(Distribution, ManyValuesInBuckets)
{
	constexpr int64_t kN = 100000;
	Distribution d, first_half, second_half, small;
	for (int64_t v = kN; v >= 1; --v) {
		d.add(v * 10);
		(v <= kN / 2 ? first_half : second_half).add(v * 10);
	}
	small.add(7);
	small.add(3);
	const auto s = d.summary();
	EXPECT_EQ(s.count, uint64_t(kN));
	EXPECT_EQ(s.min, 10);
	EXPECT_EQ(s.max, kN * 10);
	EXPECT_EQ(s.total, 10 * kN * (kN + 1) / 2);
	EXPECT_DOUBLE_EQ(s.mean, 5.0 * (kN + 1));
	// Sample standard deviation of 10, 20 .. 10 N: 10 sqrt(N (N + 1) / 12).
	EXPECT_NEAR(s.stdev, 10 * std::sqrt(double(kN) * (kN + 1) / 12), 1e-6);
	for (const auto &[got, exact] : {std::pair{s.p50, 500000.0}, {s.p90, 900000.0}, {s.p99, 990000.0}})
		EXPECT_NEAR(double(got), exact, exact / 128) << exact;
	const auto h = d.histogram();
	uint64_t total = 0;
	for (const auto &b : h) {
		total += b.count;
		// The values 10 v in [lo, hi): exactly the log2 bucket's count.
		const int64_t first = std::max<int64_t>((b.lo + 9) / 10, 1),
			      last = std::min<int64_t>((b.hi - 1) / 10, kN);
		EXPECT_EQ(b.count, uint64_t(std::max<int64_t>(last - first + 1, 0))) << b.lo;
	}
	EXPECT_EQ(total, uint64_t(kN));

	Distribution merged;
	merged.merge(small);
	merged.merge(first_half);
	merged.merge(second_half);
	merged.merge(Distribution());
	const auto m = merged.summary();
	EXPECT_EQ(m.count, uint64_t(kN + 2));
	EXPECT_EQ(m.min, 3);
	EXPECT_EQ(m.max, kN * 10);
	EXPECT_EQ(m.total, s.total + 10);
	EXPECT_NEAR(m.mean, double(s.total + 10) / (kN + 2), 1e-6);
	EXPECT_NEAR(m.p50, 500000.0, 500000.0 / 128);
}

Report sample()
{
	Report r;
	r.kind = "test";
	r.has_range = true;
	r.begin_ns = 1000;
	r.end_ns = 3500;
	Table &t = r.tables.emplace_back();
	t.key = "rows";
	t.title = "Rows";
	t.columns = {
		{"name", "Name", Format::text}, {"ns", "Time", Format::duration}, {"share", "Share", Format::ratio}};
	t.rows.push_back({std::string("a"), int64_t{1500}, 0.25});
	t.rows.push_back({std::string("bb"), Cell(), 1.0});
	r.notes.push_back("a note");
	return r;
}

TEST(Report, TopKeepsTheLargestRowsOfTablesThatSayByWhat)
{
	Report r;
	Table &t =
		r.add("per_thread", "Per thread", {{"tid", "TID", Format::integer}, {"ns", "Time", Format::duration}});
	t.top_by = "ns";
	t.rows = {{int64_t{1}, int64_t{5}},
	          {int64_t{2}, Cell()},
	          {int64_t{3}, 7.5},
	          {int64_t{4}, int64_t{5}},
	          {int64_t{5}, int64_t{9}}};
	Table &whole = r.add("total", "", {{"n", "N", Format::integer}});
	whole.rows = {{int64_t{1}}, {int64_t{2}}, {int64_t{3}}};
	keep_top(r, 3);
	// 9, 7.5, then the first of the two 5s; the empty cell is the smallest
	ASSERT_EQ(r.tables[0].rows.size(), 3u);
	EXPECT_EQ(std::get<int64_t>(r.tables[0].rows[0][0]), 5);
	EXPECT_EQ(std::get<int64_t>(r.tables[0].rows[1][0]), 3);
	EXPECT_EQ(std::get<int64_t>(r.tables[0].rows[2][0]), 1);
	EXPECT_EQ(r.tables[1].rows.size(), 3u);
	ASSERT_EQ(r.notes.size(), 1u);
	EXPECT_EQ(r.notes[0], "Per thread: the 3 largest by Time (of 5).");
	keep_top(r, 10);
	EXPECT_EQ(r.tables[0].rows.size(), 3u);
	EXPECT_EQ(r.notes[1], "Per thread: the 3 largest by Time (of 3).");
}

TEST(Report, Json)
{
	const auto j = nlohmann::json::parse(to_json(sample()));
	EXPECT_EQ(j["kind"], "test");
	EXPECT_EQ(j["duration_ns"], 2500);
	ASSERT_EQ(j["rows"].size(), 2u);
	EXPECT_EQ(j["rows"][0]["name"], "a");
	EXPECT_EQ(j["rows"][0]["ns"], 1500);
	EXPECT_EQ(j["rows"][0]["share"], 0.25);
	EXPECT_TRUE(j["rows"][1]["ns"].is_null());
	EXPECT_EQ(j["notes"][0], "a note");
}

std::string text_of(const Report &r, const TextOptions &options = {})
{
	char *buf = nullptr;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	print_text(r, f, options);
	fclose(f);
	const std::string text(buf, size);
	free(buf);
	return text;
}

TEST(Report, Text)
{
	std::string text = text_of(sample());
	EXPECT_NE(text.find("(0.000002500 s)"), std::string::npos) << text;
	// "µs" is two bytes and one column: the heading is as wide as "1.500 µs"
	EXPECT_NE(text.find("Name      Time  Share (%)\n"), std::string::npos) << text;
	EXPECT_NE(text.find("a     1.500 µs      25.00\n"), std::string::npos) << text;
	EXPECT_NE(text.find("bb           -     100.00\n"), std::string::npos) << text;
	EXPECT_NE(text.find("a note\n"), std::string::npos) << text;
	text = text_of(sample(), {.fixed_units = true});
	EXPECT_NE(text.find("Name  Time (µs)  Share (%)\n"), std::string::npos) << text;
	EXPECT_NE(text.find("a         1.500      25.00\n"), std::string::npos) << text;
	EXPECT_NE(text.find("bb            -     100.00\n"), std::string::npos) << text;
}

TEST(Report, DurationsInTheUnitThatFitsThem)
{
	EXPECT_EQ(human_duration(0), "0 ns");
	EXPECT_EQ(human_duration(870), "870 ns");
	EXPECT_EQ(human_duration(437.5), "437.5 ns");
	EXPECT_EQ(human_duration(999), "999 ns");
	EXPECT_EQ(human_duration(1000), "1.000 µs");
	EXPECT_EQ(human_duration(12500), "12.500 µs");
	EXPECT_EQ(human_duration(2'345'678), "2.346 ms");
	EXPECT_EQ(human_duration(1'285'306'800), "1.285 s");
	EXPECT_EQ(human_duration(-1500), "-1.500 µs");
}

// Rows of (name, count, max_ns), --top by count.
Report calls_report()
{
	Report r;
	Table &t = r.add("per_call", "Calls",
	                 {{"name", "Name", Format::text},
	                  {"count", "Count", Format::integer},
	                  {"max_ns", "Max", Format::duration}});
	t.top_by = "count";
	t.rows = {{std::string("read"), int64_t{3}, int64_t{50}},
	          {std::string("close"), int64_t{9}, Cell()},
	          {std::string("write"), int64_t{3}, int64_t{700}},
	          {std::string("openat"), int64_t{1}, 4.5}};
	Table &whole = r.add("total", "All", {{"count", "Count", Format::integer}});
	whole.rows = {{int64_t{16}}};
	return r;
}

std::string names_of(const Table &t)
{
	std::string s;
	for (const auto &row : t.rows)
		s += std::get<std::string>(row[0]) + " ";
	return s;
}

TEST(Report, SortOrdersTheRowsOfTablesByTheColumnNamed)
{
	Report r = calls_report();
	sort_tables(r, "max"); // max_ns: largest first, the empty cell last
	EXPECT_EQ(names_of(r.tables[0]), "write read openat close ");
	EXPECT_EQ(r.tables[0].sorted_by, "max_ns");
	EXPECT_TRUE(r.tables[1].sorted_by.empty()); // a whole table stays as it is
	sort_tables(r, "name");                     // the first text column, A to Z
	EXPECT_EQ(names_of(r.tables[0]), "close openat read write ");
	sort_tables(r, "count"); // equal counts keep the order they had (read before write)
	EXPECT_EQ(names_of(r.tables[0]), "close read write openat ");
	try {
		sort_tables(r, "latency");
		FAIL() << "sorted by a column no table has";
	} catch (const std::invalid_argument &e) {
		EXPECT_NE(std::string(e.what()).find("give name or one of name, count, max_ns"), std::string::npos)
			<< e.what();
	}
	// --top after --sort keeps the first rows of the sorted order
	r = calls_report();
	sort_tables(r, "name");
	keep_top(r, 2);
	EXPECT_EQ(names_of(r.tables[0]), "close openat ");
	ASSERT_EQ(r.notes.size(), 1u);
	EXPECT_EQ(r.notes[0], "Calls: the 2 first by Name (of 4).");
}

// The rows of a histogram table as "lo-hi:count ".
std::string buckets_of(const Table &t)
{
	std::string s;
	for (const auto &row : t.rows)
		s += std::to_string(std::get<int64_t>(row[0])) + "-" + std::to_string(std::get<int64_t>(row[1])) + ":" +
		     std::to_string(std::get<int64_t>(row[2])) + " ";
	return s;
}

Report histogram_of(std::initializer_list<int64_t> values)
{
	Distribution d;
	for (int64_t v : values)
		d.add(v);
	Report r;
	r.tables.push_back(histogram_table("histogram", "Latency", d));
	return r;
}

TEST(Report, LinearHistograms)
{
	const std::initializer_list<int64_t> values = {10, 12, 19, 20, 35, 50};
	Report r = histogram_of(values);
	// without options: log2 edges
	rebucket_histograms(r, {});
	EXPECT_EQ(buckets_of(r.tables[0]), "8-16:2 16-32:2 32-64:2 ");
	// 4 buckets from the smallest (10) to the largest (50): 10 wide, the last closed at 50
	HistogramOptions o;
	o.buckets = 4;
	rebucket_histograms(r, o);
	EXPECT_EQ(buckets_of(r.tables[0]), "10-20:3 20-30:1 30-40:1 40-50:1 ");
	EXPECT_TRUE(r.notes.empty());
	// 15 wide from --min 0: [0, 15) [15, 30) [30, 45) [45, 60), 50 in the last
	r = histogram_of(values);
	o = {};
	o.bucket_width = 15;
	o.min = 0;
	rebucket_histograms(r, o);
	EXPECT_EQ(buckets_of(r.tables[0]), "0-15:2 15-30:2 30-45:1 45-60:1 ");
	// --min and --max leave out what is outside, and say how much
	r = histogram_of(values);
	o = {};
	o.bucket_width = 10;
	o.min = 15;
	o.max = 35;
	rebucket_histograms(r, o);
	EXPECT_EQ(buckets_of(r.tables[0]), "15-25:2 25-35:1 ");
	ASSERT_EQ(r.notes.size(), 1u);
	EXPECT_EQ(r.notes[0], "Latency: 2 value(s) below 15 ns and 1 above 35 ns (--min, --max) not in the histogram");
	// only --min: 20 buckets (lttng-analyses' default) to the largest value
	r = histogram_of(values);
	o = {};
	o.min = 10;
	rebucket_histograms(r, o);
	ASSERT_EQ(r.tables[0].rows.size(), 20u);
	EXPECT_EQ(buckets_of(r.tables[0]).substr(0, 23), "10-12:1 12-14:1 14-16:0");
}

TEST(Report, LinearHistogramsOfManyValuesPlaceThemWithin1Of128)
{
	Distribution d;
	for (int64_t v = 0; v < 10000; ++v) // 10000 values: log-linear buckets beyond 4096
		d.add(1'000'000 + v * 100);
	Report r;
	r.tables.push_back(histogram_table("histogram", "Latency", d));
	HistogramOptions o;
	o.buckets = 10; // 10 buckets of 99990 ns: 1000 values each, give or take the edges' 1/128
	rebucket_histograms(r, o);
	const Table &t = r.tables[0];
	ASSERT_EQ(t.rows.size(), 10u);
	int64_t n = 0;
	for (const auto &row : t.rows) {
		const int64_t count = std::get<int64_t>(row[2]);
		n += count;
		EXPECT_NEAR(count, 1000, 1999990 / 128 / 100 + 1);
	}
	EXPECT_EQ(n, 10000);
	ASSERT_EQ(r.notes.size(), 1u);
	EXPECT_NE(r.notes[0].find("beyond 4096 values"), std::string::npos);
}

TEST(Report, HistogramOptionsThatMakeNoHistogramAreRefused)
{
	Report r = histogram_of({1, 1'000'000'000});
	HistogramOptions o;
	o.bucket_width = 10; // 10^8 buckets
	EXPECT_THROW(rebucket_histograms(r, o), std::invalid_argument);
	o.buckets = 5;
	EXPECT_THROW(rebucket_histograms(r, o), std::invalid_argument);
	o = {};
	o.min = 10;
	o.max = 5;
	EXPECT_THROW(rebucket_histograms(r, o), std::invalid_argument);
}

} // namespace
