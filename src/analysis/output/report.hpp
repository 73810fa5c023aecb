// analysis/output/report.hpp — what `tracery stats` and `tracery analyze` print: a
// title, the time range read, tables of typed cells and notes, shown either
// as aligned text tables (durations each in the unit that fits it, ns, µs,
// ms or s, or all in µs; ratios in %, times of day) or as one JSON object
// for scripts (raw numbers: durations in ns, ratios 0..1, counts); and the
// distribution of a set of durations (count, total, min, mean, max, standard
// deviation, percentiles, a log2 or linear histogram) that the latency
// analyses share; --sort COLUMN, --top N (the first rows of each table) and
// the histograms' --buckets/--bucket-width/--min/--max.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tracery::analysis {

enum class Format : uint8_t {
	text,
	integer,  // a count, an id
	duration, // ns; text: in ns, µs, ms or s as it fits (fixed: µs with 3 decimals)
	time,     // ns from the epoch; text: local HH:MM:SS.nnnnnnnnn
	ratio,    // 0..1; text: % with 2 decimals
	rate,     // per second; text: 1 decimal
};

struct Column {
	std::string key;   // JSON member name
	std::string title; // text heading
	Format format = Format::integer;
};

// Empty (no value: "-" in text, null in JSON), an integer, a real, text.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

// The value, or an empty cell.
inline Cell cell_of(std::optional<int64_t> v)
{
	if (v)
		return Cell(std::in_place_type<int64_t>, *v);
	return Cell();
}
inline Cell cell_of(std::optional<double> v)
{
	if (v)
		return Cell(std::in_place_type<double>, *v);
	return Cell();
}

class Distribution;

struct Table {
	std::string key;   // JSON member of the report holding its rows
	std::string title; // text heading ("" for none)
	std::vector<Column> columns;
	std::vector<std::vector<Cell>> rows;
	// A histogram (columns lo, hi, count): text draws a bar per row.
	bool histogram = false;
	// The column whose largest values --top keeps ("" for a table --top
	// keeps whole: totals, histograms, losses).
	std::string top_by;
	// The column --sort ordered the rows by ("": the table's own order);
	// --top then keeps the first rows.
	std::string sorted_by;
	// A histogram's values, for other buckets (rebucket_histograms).
	std::shared_ptr<const Distribution> values;
};

struct Report {
	std::string kind; // "stats", "cputop", ...
	bool has_range = false;
	int64_t begin_ns = 0, end_ns = 0;
	std::vector<Table> tables;
	std::vector<std::string> notes; // text: after the tables; JSON: "notes"

	Table &add(std::string key, std::string title, std::vector<Column> columns)
	{
		Table &t = tables.emplace_back();
		t.key = std::move(key);
		t.title = std::move(title);
		t.columns = std::move(columns);
		return t;
	}

	static Report ranged(std::string kind, int64_t begin, int64_t end)
	{
		Report r;
		r.kind = std::move(kind);
		r.has_range = true;
		r.begin_ns = begin;
		r.end_ns = end;
		return r;
	}
};

// --sort COLUMN: the rows of each table that has the column ordered by it,
// largest first (text: A to Z; empty cells last; equal ones in the
// table's order). COLUMN: a column's JSON key, that key without its "_ns"
// ("max" for "max_ns"), or "name" (a table's first text column). Throws
// std::invalid_argument when no table has it, naming the columns there are.
void sort_tables(Report &report, const std::string &column);

// --top N: of each table with a top_by column (or sorted), the N rows of its
// largest values (largest first; equal ones in the table's order; sorted:
// its first N), and a note per table naming the column and how many rows
// there were.
void keep_top(Report &report, size_t n);

// The histograms' buckets: log2 edges (none of the options), or linear
// ones from `min` to `max` (default: the smallest and largest value) of a
// width or in a count (as lttng-analyses' --freq-resolution).
struct HistogramOptions {
	int64_t bucket_width = 0; // ns, 0: from `buckets`
	size_t buckets = 0;       // 0: from bucket_width
	std::optional<int64_t> min, max;
	static constexpr size_t kMaxBuckets = 10000;
	bool linear() const { return bucket_width > 0 || buckets > 0 || min || max; }
};
// Rebuilds the rows of each histogram table as `options` say, with a note
// per table of the values left out below min or above max. Throws
// std::invalid_argument for options that do not make a histogram (both
// width and count, min above max, more than kMaxBuckets buckets).
void rebucket_histograms(Report &report, const HistogramOptions &options);

struct TextOptions {
	// Every duration in µs with 3 decimals, the unit in the heading (the
	// text of earlier versions, for scripts that read it).
	bool fixed_units = false;
};
void print_text(const Report &report, FILE *out, const TextOptions &options = {});
// A duration in the unit that fits it: "870 ns", "12.500 µs", "1.285 s".
std::string human_duration(double ns);
// A duration as the text tables show it (options.fixed_units: µs with 3
// decimals, no unit), and a duration column's heading ("Incl" or "Incl (µs)").
std::string duration_text(double ns, const TextOptions &options);
std::string duration_heading(const std::string &title, const TextOptions &options);
// The columns a UTF-8 text takes on a terminal (continuation bytes take none).
size_t display_width(const std::string &s);
// {"kind": ..., "begin_ns": ..., "end_ns": ..., "duration_ns": ..., TABLE
// KEY: [{COLUMN KEY: value, ...}, ...], ..., "notes": [...]}
std::string to_json(const Report &report);

// Durations (ns) and what they add up to, in bounded memory: the values
// themselves while there are at most kExactLimit of them (every figure
// exact), then counts in log-linear buckets (64 per power of two, at most
// a few thousand whatever the count): count, min, max, total, mean,
// standard deviation and the log2 histogram stay exact, and a percentile
// is its bucket's middle, within 1/128 of the exact value.
class Distribution {
public:
	static constexpr size_t kExactLimit = 4096;

	void add(int64_t ns);
	// Adds every value of `other`.
	void merge(const Distribution &other);
	uint64_t count() const { return count_; }
	// Every value kept (not yet in log-linear buckets).
	bool exact() const { return buckets_.empty(); }

	struct Summary {
		uint64_t count = 0;
		int64_t min = 0, max = 0, total = 0;
		double mean = 0, stdev = 0;        // stdev: sample (n - 1), 0 below two values
		int64_t p50 = 0, p90 = 0, p99 = 0; // nearest rank
	};
	Summary summary();
	// Bucket k holds [2^k, 2^(k+1)) ns (bucket 0 also 0 and below), from the
	// lowest to the highest non-empty bucket: (lo, hi, count).
	struct Bucket {
		int64_t lo, hi;
		uint64_t count;
	};
	std::vector<Bucket> histogram() const;
	// `n` buckets of `width` from `lo`: [lo + i width, lo + (i + 1) width),
	// the last one closed at `hi` (a value of hi in it); the values below lo
	// and above hi counted in `below` and `above`.
	struct Linear {
		std::vector<Bucket> buckets;
		uint64_t below = 0, above = 0;
	};
	Linear linear_histogram(int64_t lo, int64_t hi, int64_t width, size_t n) const;
	int64_t min() const { return min_; }
	int64_t max() const { return max_; }

private:
	void to_buckets(); // leaves exact mode
	void count_in_buckets(int64_t ns, uint64_t n);
	int64_t percentile(unsigned p);

	uint64_t count_ = 0;
	int64_t min_ = 0, max_ = 0;
	long double total_ = 0, mean_ = 0, m2_ = 0; // Welford's running mean and sum of squared deviations
	std::vector<int64_t> values_;               // exact mode (count_ <= kExactLimit)
	bool sorted_ = false;
	std::map<uint32_t, uint64_t> buckets_; // log-linear bucket index -> count, after exact mode
};

// The columns a Summary fills, in order (count, min, mean, max, stdev, p50,
// p90, p99, total), and the cells.
void summary_columns(std::vector<Column> &columns);
void summary_cells(const Distribution::Summary &s, std::vector<Cell> &row);
// A table of one row: d's summary.
Table summary_table(const std::string &key, const std::string &title, Distribution &d);
// A histogram table of d.
Table histogram_table(const std::string &key, const std::string &title, const Distribution &d);

} // namespace tracery::analysis
