// analysis/output/report.cpp — reports as text tables and JSON, and distributions
// of durations (see report.hpp).
#include "analysis/output/report.hpp"
#include "base/monotonic.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace tracery::analysis {

namespace {

using base::kNsPerS;

std::string format_cell(const Cell &c, Format f)
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
		snprintf(b, sizeof b, "%.3f", d / 1000);
		return b;
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

std::string heading(const Column &c)
{
	std::string h = c.title;
	if (c.format == Format::duration)
		h += " (µs)";
	else if (c.format == Format::ratio)
		h += " (%)";
	return h;
}

// Display width: UTF-8 continuation bytes take no column.
size_t columns_of(const std::string &s)
{
	return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xc0) != 0x80; }));
}

void print_table(const Table &t, FILE *out)
{
	if (!t.title.empty())
		fprintf(out, "%s\n", t.title.c_str());
	std::vector<std::vector<std::string>> text;
	std::vector<size_t> width;
	std::vector<std::string> head;
	for (const Column &c : t.columns) {
		head.push_back(heading(c));
		width.push_back(columns_of(head.back()));
	}
	uint64_t most = 0;
	for (const auto &row : t.rows) {
		auto &line = text.emplace_back();
		for (size_t i = 0; i < row.size() && i < t.columns.size(); ++i) {
			line.push_back(format_cell(row[i], t.columns[i].format));
			width[i] = std::max(width[i], columns_of(line.back()));
		}
		if (t.histogram && row.size() == 3 && std::holds_alternative<int64_t>(row[2]))
			most = std::max(most, static_cast<uint64_t>(std::get<int64_t>(row[2])));
	}
	const auto emit = [&](const std::vector<std::string> &cells, size_t row) {
		std::string line;
		for (size_t i = 0; i < cells.size(); ++i) {
			const std::string &s = cells[i];
			const size_t pad = width[i] - columns_of(s);
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

void keep_top(Report &report, size_t n)
{
	for (Table &t : report.tables) {
		if (t.top_by.empty())
			continue;
		const size_t k = static_cast<size_t>(std::find_if(t.columns.begin(), t.columns.end(),
		                                                  [&](const Column &c) { return c.key == t.top_by; }) -
		                                     t.columns.begin());
		if (k == t.columns.size())
			continue;
		// an empty cell is the smallest; integers and reals compare as numbers
		const auto value = [k](const std::vector<Cell> &row) -> std::optional<double> {
			if (k >= row.size())
				return std::nullopt;
			if (const auto *i = std::get_if<int64_t>(&row[k]))
				return static_cast<double>(*i);
			if (const auto *d = std::get_if<double>(&row[k]))
				return *d;
			return std::nullopt;
		};
		std::stable_sort(t.rows.begin(), t.rows.end(),
		                 [&](const auto &a, const auto &b) { return value(a) > value(b); });
		const size_t had = t.rows.size();
		if (had > n)
			t.rows.resize(n);
		report.notes.push_back((t.title.empty() ? t.key : t.title) + ": the " + std::to_string(t.rows.size()) +
		                       " largest by " + t.columns[k].title + " (of " + std::to_string(had) + ").");
	}
}

void print_text(const Report &report, FILE *out)
{
	if (report.has_range) {
		const Cell b = report.begin_ns, e = report.end_ns;
		fprintf(out, "Time range: [%s, %s] (%.9f s)\n\n", format_cell(b, Format::time).c_str(),
		        format_cell(e, Format::time).c_str(),
		        static_cast<double>(report.end_ns - report.begin_ns) / 1e9);
	}
	for (const Table &t : report.tables)
		print_table(t, out);
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
	return t;
}

} // namespace tracery::analysis
