// analysis/output/report.cpp — reports as text tables and JSON, and distributions
// of durations (see report.hpp).
#include "analysis/output/report.hpp"
#include "base/monotonic.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <stdexcept>

namespace tracery::analysis {

namespace {

using base::kNsPerS;

std::string format_cell(const Cell &c, Format f, bool fixed_units = false)
{
	if (std::holds_alternative<std::monostate>(c))
		return "-";
	if (const auto *s = std::get_if<std::string>(&c))
		return *s;
	const double d =
		std::holds_alternative<int64_t>(c) ? static_cast<double>(std::get<int64_t>(c)) : std::get<double>(c);
	char b[64];
	switch (f) {
	case Format::duration:
		return duration_text(d, {.fixed_units = fixed_units});
	case Format::ratio:
		snprintf(b, sizeof b, "%.2f", d * 100);
		return b;
	case Format::rate:
		snprintf(b, sizeof b, "%.1f", d);
		return b;
	case Format::time: {
		const int64_t ns = std::get<int64_t>(c);
		const auto t = static_cast<time_t>(ns / kNsPerS);
		struct tm tm;
		if (ns < 0 || !localtime_r(&t, &tm))
			snprintf(b, sizeof b, "%lld", static_cast<long long>(ns));
		else
			snprintf(b, sizeof b, "%02d:%02d:%02d.%09lld", tm.tm_hour, tm.tm_min, tm.tm_sec,
			         static_cast<long long>(ns % kNsPerS));
		return b;
	}
	case Format::text:
	case Format::integer:
		break;
	}
	if (const auto *i = std::get_if<int64_t>(&c))
		return std::to_string(*i);
	snprintf(b, sizeof b, "%g", d);
	return b;
}

std::string heading(const Column &c, bool fixed_units)
{
	if (c.format == Format::duration)
		return duration_heading(c.title, {.fixed_units = fixed_units});
	if (c.format == Format::ratio)
		return c.title + " (%)";
	return c.title;
}

void print_table(const Table &t, FILE *out, bool fixed_units)
{
	if (!t.title.empty())
		fprintf(out, "%s\n", t.title.c_str());
	std::vector<std::vector<std::string>> text;
	std::vector<size_t> width;
	std::vector<std::string> head;
	for (const Column &c : t.columns) {
		head.push_back(heading(c, fixed_units));
		width.push_back(display_width(head.back()));
	}
	uint64_t most = 0;
	for (const auto &row : t.rows) {
		auto &line = text.emplace_back();
		for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
			line.push_back(format_cell(row[i], t.columns[i].format, fixed_units));
			width[i] = std::max(width[i], display_width(line.back()));
		}
		if (t.histogram && row.size() == 3 && std::holds_alternative<int64_t>(row[2]))
			most = std::max(most, static_cast<uint64_t>(std::get<int64_t>(row[2])));
	}
	const auto emit = [&](const std::vector<std::string> &cells, size_t row) {
		std::string line;
		for (size_t i = 0; i < cells.size(); ++i) {
			const std::string &s = cells[i];
			const size_t pad = width[i] - display_width(s);
			if (i)
				line += "  ";
			if (t.columns[i].format == Format::text) {
				line += s;
				if (i + 1 < cells.size() || t.histogram)
					line.append(pad, ' ');
			} else {
				line.append(pad, ' ');
				line += s;
			}
		}
		if (t.histogram && row != SIZE_MAX && most) {
			const auto n = static_cast<uint64_t>(std::get<int64_t>(t.rows[row][2]));
			line += "  ";
			line.append(static_cast<size_t>((n * 40 + most - 1) / most), '#');
		}
		fprintf(out, "%s\n", line.c_str());
	};
	emit(head, SIZE_MAX);
	for (size_t r = 0; r < text.size(); ++r)
		emit(text[r], r);
	fputc('\n', out);
}

nlohmann::json json_cell(const Cell &c)
{
	if (const auto *i = std::get_if<int64_t>(&c))
		return *i;
	if (const auto *d = std::get_if<double>(&c))
		return *d;
	if (const auto *s = std::get_if<std::string>(&c))
		return *s;
	return nullptr;
}

} // namespace

namespace {

// The index of column `key` in t, or t.columns.size().
size_t column_index(const Table &t, const std::string &key)
{
	return static_cast<size_t>(
		std::find_if(t.columns.begin(), t.columns.end(), [&](const Column &c) { return c.key == key; }) -
		t.columns.begin());
}

// A number cell as a double (empty cells and text: none).
std::optional<double> number(const std::vector<Cell> &row, size_t k)
{
	if (k >= row.size())
		return std::nullopt;
	if (const auto *i = std::get_if<int64_t>(&row[k]))
		return static_cast<double>(*i);
	if (const auto *d = std::get_if<double>(&row[k]))
		return *d;
	return std::nullopt;
}

// Rows by column k: numbers largest first, text A to Z, empty cells last.
void sort_rows(Table &t, size_t k)
{
	const bool text = t.columns[k].format == Format::text;
	std::stable_sort(t.rows.begin(), t.rows.end(), [&](const auto &a, const auto &b) {
		if (!text)
			return number(a, k) > number(b, k); // an empty optional is the smallest
		const auto *x = k < a.size() ? std::get_if<std::string>(&a[k]) : nullptr;
		const auto *y = k < b.size() ? std::get_if<std::string>(&b[k]) : nullptr;
		if (!x || !y)
			return x && !y;
		return *x < *y;
	});
}

// The column of t that --sort NAME means, or t.columns.size().
size_t sort_column(const Table &t, const std::string &name)
{
	size_t k = column_index(t, name);
	if (k == t.columns.size())
		k = column_index(t, name + "_ns");
	if (k == t.columns.size() && name == "name")
		k = static_cast<size_t>(std::find_if(t.columns.begin(), t.columns.end(),
		                                     [](const Column &c) { return c.format == Format::text; }) -
		                        t.columns.begin());
	return k;
}

} // namespace

void sort_tables(Report &report, const std::string &column)
{
	bool any = false;
	std::vector<std::string> keys;
	for (Table &t : report.tables) {
		if (t.top_by.empty()) // whole tables: totals, histograms, losses
			continue;
		const size_t k = sort_column(t, column);
		if (k == t.columns.size()) {
			for (const Column &c : t.columns)
				if (std::find(keys.begin(), keys.end(), c.key) == keys.end())
					keys.push_back(c.key);
			continue;
		}
		sort_rows(t, k);
		t.sorted_by = t.columns[k].key;
		any = true;
	}
	if (!any) {
		std::string list;
		for (const std::string &k : keys)
			list += (list.empty() ? "" : ", ") + k;
		throw std::invalid_argument("no table of " + report.kind + " has a column '" + column +
		                            "' (--sort): give name or one of " + list);
	}
}

void keep_top(Report &report, size_t n)
{
	for (Table &t : report.tables) {
		const bool sorted = !t.sorted_by.empty();
		const size_t k = column_index(t, sorted ? t.sorted_by : t.top_by);
		if (k == t.columns.size())
			continue;
		if (!sorted)
			sort_rows(t, k);
		const size_t had = t.rows.size();
		if (had > n)
			t.rows.resize(n);
		report.notes.push_back((t.title.empty() ? t.key : t.title) + ": the " + std::to_string(t.rows.size()) +
		                       (sorted ? " first by " : " largest by ") + t.columns[k].title + " (of " +
		                       std::to_string(had) + ").");
	}
}

std::string human_duration(double ns)
{
	char b[64];
	const double a = std::fabs(ns);
	if (a < 1e3) {
		if (ns == std::floor(ns))
			snprintf(b, sizeof b, "%.0f ns", ns);
		else
			snprintf(b, sizeof b, "%.1f ns", ns);
	} else if (a < 1e6) {
		snprintf(b, sizeof b, "%.3f µs", ns / 1e3);
	} else if (a < 1e9) {
		snprintf(b, sizeof b, "%.3f ms", ns / 1e6);
	} else {
		snprintf(b, sizeof b, "%.3f s", ns / 1e9);
	}
	return b;
}

std::string duration_text(double ns, const TextOptions &options)
{
	if (!options.fixed_units)
		return human_duration(ns);
	char b[64];
	snprintf(b, sizeof b, "%.3f", ns / 1000);
	return b;
}

std::string duration_heading(const std::string &title, const TextOptions &options)
{
	return options.fixed_units ? title + " (µs)" : title;
}

size_t display_width(const std::string &s)
{
	return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xc0) != 0x80; }));
}

void print_text(const Report &report, FILE *out, const TextOptions &options)
{
	if (report.has_range) {
		const Cell b = report.begin_ns, e = report.end_ns;
		fprintf(out, "Time range: [%s, %s] (%.9f s)\n\n", format_cell(b, Format::time).c_str(),
		        format_cell(e, Format::time).c_str(),
		        static_cast<double>(report.end_ns - report.begin_ns) / 1e9);
	}
	for (const Table &t : report.tables)
		print_table(t, out, options.fixed_units);
	for (const std::string &n : report.notes)
		fprintf(out, "%s\n", n.c_str());
	fflush(out);
}

std::string to_json(const Report &report)
{
	nlohmann::ordered_json j;
	j["kind"] = report.kind;
	if (report.has_range) {
		j["begin_ns"] = report.begin_ns;
		j["end_ns"] = report.end_ns;
		j["duration_ns"] = report.end_ns - report.begin_ns;
	} else {
		j["begin_ns"] = j["end_ns"] = j["duration_ns"] = nullptr;
	}
	for (const Table &t : report.tables) {
		nlohmann::ordered_json rows = nlohmann::ordered_json::array();
		for (const auto &row : t.rows) {
			nlohmann::ordered_json o = nlohmann::ordered_json::object();
			for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i)
				o[t.columns[i].key] = json_cell(row[i]);
			rows.push_back(std::move(o));
		}
		j[t.key] = std::move(rows);
	}
	j["notes"] = report.notes;
	std::string s =
		j.dump(1, '\t', false, nlohmann::json::error_handler_t::replace); // a trace's strings may not be UTF-8
	s += '\n';
	return s;
}

namespace {

// Log-linear buckets: below 64 one per value; above, 64 per power of two
// (the value's top 7 bits), so a bucket is at most 1/64 of its values wide.
constexpr int kSubBits = 6;

uint32_t bucket_of(int64_t v)
{
	if (v < (int64_t{1} << kSubBits))
		return v < 0 ? 0 : static_cast<uint32_t>(v);
	const int e = 63 - __builtin_clzll(static_cast<uint64_t>(v));
	const int shift = e - kSubBits;
	return static_cast<uint32_t>((1u << kSubBits) + shift * (1u << kSubBits) +
	                             ((static_cast<uint64_t>(v) >> shift) & ((1u << kSubBits) - 1)));
}

// The lowest value of bucket `b` and its width.
std::pair<int64_t, int64_t> bucket_range(uint32_t b)
{
	if (b < (1u << kSubBits))
		return {b, 1};
	const uint32_t j = b - (1u << kSubBits);
	const int shift = static_cast<int>(j >> kSubBits);
	const int64_t sub = j & ((1u << kSubBits) - 1);
	return {((int64_t{1} << kSubBits) + sub) << shift, int64_t{1} << shift};
}

// The log2 histogram's bucket of a value: [2^k, 2^(k+1)), k = 0 also for 0 and below.
int log2_bucket(int64_t v) { return v <= 1 ? 0 : 63 - __builtin_clzll(static_cast<uint64_t>(v)); }

} // namespace

void Distribution::add(int64_t ns)
{
	if (count_ == 0 || ns < min_)
		min_ = ns;
	if (count_ == 0 || ns > max_)
		max_ = ns;
	++count_;
	total_ += ns;
	const long double delta = ns - mean_;
	mean_ += delta / static_cast<long double>(count_);
	m2_ += delta * (ns - mean_);
	if (buckets_.empty() && values_.size() < kExactLimit) {
		values_.push_back(ns);
		sorted_ = false;
		return;
	}
	if (buckets_.empty())
		to_buckets();
	count_in_buckets(ns, 1);
}

void Distribution::count_in_buckets(int64_t ns, uint64_t n) { buckets_[bucket_of(ns)] += n; }

void Distribution::to_buckets()
{
	for (int64_t v : values_)
		count_in_buckets(v, 1);
	values_.clear();
	values_.shrink_to_fit();
}

void Distribution::merge(const Distribution &other)
{
	if (other.count_ == 0)
		return;
	if (other.buckets_.empty()) {
		for (int64_t v : other.values_)
			add(v);
		return;
	}
	if (buckets_.empty())
		to_buckets();
	for (const auto &[b, n] : other.buckets_)
		buckets_[b] += n;
	// Chan et al.'s combination of two running means and sums of squares.
	const long double n_a = count_, n_b = other.count_, n = n_a + n_b;
	const long double delta = other.mean_ - mean_;
	m2_ += other.m2_ + delta * delta * n_a * n_b / n;
	mean_ += delta * n_b / n;
	min_ = count_ ? std::min(min_, other.min_) : other.min_;
	max_ = count_ ? std::max(max_, other.max_) : other.max_;
	count_ += other.count_;
	total_ += other.total_;
}

int64_t Distribution::percentile(unsigned p)
{
	const uint64_t k = std::max<uint64_t>((count_ * p + 99) / 100, 1); // nearest rank, 1-based
	if (buckets_.empty()) {
		if (!sorted_) {
			std::sort(values_.begin(), values_.end());
			sorted_ = true;
		}
		return values_[k - 1];
	}
	uint64_t seen = 0;
	for (const auto &[b, n] : buckets_) {
		seen += n;
		if (seen >= k) {
			const auto [lo, width] = bucket_range(b);
			return std::clamp(lo + (width - 1) / 2, min_, max_);
		}
	}
	return max_;
}

Distribution::Summary Distribution::summary()
{
	Summary s;
	if (count_ == 0)
		return s;
	s.count = count_;
	s.min = min_;
	s.max = max_;
	s.total = static_cast<int64_t>(total_);
	s.mean = static_cast<double>(total_ / count_);
	if (count_ > 1)
		s.stdev = static_cast<double>(std::sqrt(m2_ / (count_ - 1)));
	s.p50 = percentile(50);
	s.p90 = percentile(90);
	s.p99 = percentile(99);
	return s;
}

std::vector<Distribution::Bucket> Distribution::histogram() const
{
	std::vector<uint64_t> counts(64, 0);
	for (int64_t v : values_)
		++counts[static_cast<size_t>(log2_bucket(v))];
	for (const auto &[b, n] : buckets_)
		counts[static_cast<size_t>(log2_bucket(bucket_range(b).first))] += n;
	std::vector<Bucket> out;
	size_t lo = 0, hi = 0;
	bool any = false;
	for (size_t k = 0; k < counts.size(); ++k)
		if (counts[k]) {
			if (!any)
				lo = k;
			hi = k;
			any = true;
		}
	if (!any)
		return out;
	for (size_t k = lo; k <= hi; ++k)
		out.push_back({k == 0 ? 0 : int64_t{1} << k, k >= 62 ? INT64_MAX : (int64_t{1} << (k + 1)), counts[k]});
	return out;
}

Distribution::Linear Distribution::linear_histogram(int64_t lo, int64_t hi, int64_t width, size_t n) const
{
	Linear out;
	for (size_t i = 0; i < n; ++i)
		out.buckets.push_back(
			{lo + static_cast<int64_t>(i) * width, lo + static_cast<int64_t>(i + 1) * width, 0});
	const auto place = [&](int64_t v, uint64_t count) {
		if (v < lo) {
			out.below += count;
		} else if (v > hi) {
			out.above += count;
		} else {
			const auto i = static_cast<size_t>((v - lo) / width);
			out.buckets[std::min(i, n - 1)].count += count;
		}
	};
	for (int64_t v : values_)
		place(v, 1);
	for (const auto &[b, count] : buckets_) {
		const auto [first, w] = bucket_range(b);
		place(std::clamp(first + (w - 1) / 2, min_, max_), count);
	}
	return out;
}

void summary_columns(std::vector<Column> &columns)
{
	columns.push_back({"count", "Count", Format::integer});
	columns.push_back({"min_ns", "Min", Format::duration});
	columns.push_back({"mean_ns", "Mean", Format::duration});
	columns.push_back({"max_ns", "Max", Format::duration});
	columns.push_back({"stdev_ns", "Stdev", Format::duration});
	columns.push_back({"p50_ns", "P50", Format::duration});
	columns.push_back({"p90_ns", "P90", Format::duration});
	columns.push_back({"p99_ns", "P99", Format::duration});
	columns.push_back({"total_ns", "Total", Format::duration});
}

void summary_cells(const Distribution::Summary &s, std::vector<Cell> &row)
{
	row.emplace_back(static_cast<int64_t>(s.count));
	row.emplace_back(s.min);
	row.emplace_back(s.mean);
	row.emplace_back(s.max);
	row.emplace_back(cell_of(s.count > 1 ? std::optional<double>(s.stdev) : std::nullopt));
	row.emplace_back(s.p50);
	row.emplace_back(s.p90);
	row.emplace_back(s.p99);
	row.emplace_back(s.total);
}

Table summary_table(const std::string &key, const std::string &title, Distribution &d)
{
	Table t;
	t.key = key;
	t.title = title;
	summary_columns(t.columns);
	summary_cells(d.summary(), t.rows.emplace_back());
	return t;
}

Table histogram_table(const std::string &key, const std::string &title, const Distribution &d)
{
	Table t;
	t.key = key;
	t.title = title;
	t.histogram = true;
	t.columns = {{"lo_ns", "From", Format::duration},
	             {"hi_ns", "To", Format::duration},
	             {"count", "Count", Format::integer}};
	for (const auto &b : d.histogram())
		t.rows.push_back({b.lo, b.hi, static_cast<int64_t>(b.count)});
	t.values = std::make_shared<const Distribution>(d);
	return t;
}

void rebucket_histograms(Report &report, const HistogramOptions &options)
{
	if (!options.linear())
		return;
	if (options.bucket_width < 0 || (options.bucket_width > 0 && options.buckets > 0))
		throw std::invalid_argument("give --bucket-width or --buckets, not both");
	if (options.min && options.max && *options.min > *options.max)
		throw std::invalid_argument("--min is above --max");
	for (Table &t : report.tables) {
		if (!t.histogram || !t.values)
			continue;
		t.rows.clear();
		const Distribution &d = *t.values;
		if (!d.count())
			continue;
		const int64_t lo = options.min.value_or(d.min());
		const int64_t hi = std::max(options.max.value_or(d.max()), lo);
		// the span of [lo, hi] in unsigned: lo may be far below 0
		const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
		int64_t width = options.bucket_width;
		uint64_t n = options.buckets ? options.buckets : 20; // only --min/--max: lttng-analyses' 20
		if (width > 0)
			n = std::max<uint64_t>(
				span / static_cast<uint64_t>(width) + (span % static_cast<uint64_t>(width) != 0), 1);
		else
			width = static_cast<int64_t>(std::max<uint64_t>(span / n + (span % n != 0), 1));
		if (n > HistogramOptions::kMaxBuckets)
			throw std::invalid_argument("the histogram of " + t.title + " would have " + std::to_string(n) +
			                            " buckets of " + human_duration(static_cast<double>(width)) +
			                            ": at most " + std::to_string(HistogramOptions::kMaxBuckets) +
			                            " (a wider --bucket-width, or --min/--max)");
		const Distribution::Linear h = d.linear_histogram(lo, hi, width, static_cast<size_t>(n));
		for (const auto &b : h.buckets)
			t.rows.push_back({b.lo, b.hi, static_cast<int64_t>(b.count)});
		if (h.below || h.above)
			report.notes.push_back((t.title.empty() ? t.key : t.title) + ": " + std::to_string(h.below) +
			                       " value(s) below " + human_duration(static_cast<double>(lo)) + " and " +
			                       std::to_string(h.above) + " above " +
			                       human_duration(static_cast<double>(hi)) +
			                       " (--min, --max) not in the histogram");
		if (!d.exact())
			report.notes.push_back((t.title.empty() ? t.key : t.title) + ": beyond " +
			                       std::to_string(Distribution::kExactLimit) +
			                       " values, each placed by a value within 1/128 of it");
	}
}

} // namespace tracery::analysis
