// analysis/sql/clickhouse_query.cpp — statements run on ClickHouse and their
// rows printed (see clickhouse_query.hpp). Results come as
// TabSeparatedWithNamesAndTypes, read line by line as they arrive.
#include "analysis/sql/clickhouse_query.hpp"

#include "analysis/output/json_text.hpp"

#include <cmath>
#include <cstdlib>
#include <memory>

namespace tracery::analysis::sql {

namespace {

// A line longer than this is not a row a terminal or a file wants.
constexpr size_t kMaxLine = 64 << 20;

std::string lower_word(std::string_view s)
{
	size_t i = 0;
	while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '('))
		++i;
	std::string w;
	for (; i < s.size() && isalpha(static_cast<unsigned char>(s[i])); ++i)
		w += static_cast<char>(tolower(static_cast<unsigned char>(s[i])));
	return w;
}

bool returns_rows(std::string_view statement)
{
	const std::string w = lower_word(statement);
	return w == "select" || w == "with" || w == "show" || w == "describe" || w == "desc" || w == "exists";
}

// Int8..UInt64 (also inside Nullable): integers; Float32/64: reals.
Cell::Kind kind_of(std::string_view type)
{
	if (type.rfind("Nullable(", 0) == 0)
		type = type.substr(9);
	if (type.rfind("Int", 0) == 0 || type.rfind("UInt", 0) == 0)
		return Cell::integer;
	if (type.rfind("Float", 0) == 0)
		return Cell::real;
	return Cell::string;
}

std::vector<std::string_view> fields_of(std::string_view line)
{
	std::vector<std::string_view> f;
	for (;;) {
		const size_t tab = line.find('\t');
		f.push_back(line.substr(0, tab));
		if (tab == std::string_view::npos)
			return f;
		line.remove_prefix(tab + 1);
	}
}

// The lines of a TabSeparatedWithNamesAndTypes result: names, types, rows.
class ResultReader {
public:
	ResultReader(OutputFormat format, FILE *out) : format_(format), out_(out) {}

	void data(std::string_view piece)
	{
		pending_ += piece;
		size_t from = 0;
		for (size_t nl; (nl = pending_.find('\n', from)) != std::string::npos; from = nl + 1)
			line(std::string_view(pending_).substr(from, nl - from));
		pending_.erase(0, from);
		if (pending_.size() > kMaxLine)
			throw clickhouse::Error(clickhouse::Error::refused,
			                        "ClickHouse: a result line longer than 64 MiB; select fewer columns");
	}
	uint64_t end()
	{
		if (!printer_)
			return 0;
		printer_->end();
		return printer_->rows();
	}

private:
	void line(std::string_view l)
	{
		bool null = false;
		if (names_.empty() && !printer_) {
			for (const std::string_view f : fields_of(l)) {
				std::string name;
				append_utf8(name, clickhouse::unescape_tsv(f, null));
				names_.push_back(name);
			}
			return;
		}
		if (!printer_) {
			for (const std::string_view f : fields_of(l))
				kinds_.push_back(kind_of(clickhouse::unescape_tsv(f, null)));
			kinds_.resize(names_.size(), Cell::string);
			printer_ = std::make_unique<RowPrinter>(std::move(names_), format_, out_);
			return;
		}
		const std::vector<std::string_view> fields = fields_of(l);
		cells_.assign(kinds_.size(), Cell{});
		for (size_t i = 0; i < kinds_.size() && i < fields.size(); ++i) {
			Cell &c = cells_[i];
			const std::string value = clickhouse::unescape_tsv(fields[i], null);
			if (null) {
				c = {Cell::null, "NULL"};
				continue;
			}
			c.kind = kinds_[i];
			if (c.kind == Cell::real) {
				const double d = strtod(value.c_str(), nullptr);
				c.text = real_text(d);
				if (!std::isfinite(d))
					c.kind = Cell::nonfinite;
			} else {
				append_utf8(c.text, value);
			}
		}
		printer_->row(cells_);
	}

	OutputFormat format_;
	FILE *out_;
	std::string pending_;
	std::vector<std::string> names_;
	std::vector<Cell::Kind> kinds_;
	std::vector<Cell> cells_;
	std::unique_ptr<RowPrinter> printer_;
};

} // namespace

std::vector<std::string> split_statements(std::string_view sql)
{
	std::vector<std::string> out;
	std::string current;
	const auto push = [&] {
		if (current.find_first_not_of(" \t\r\n") != std::string::npos)
			out.push_back(current);
		current.clear();
	};
	for (size_t i = 0; i < sql.size(); ++i) {
		const char c = sql[i];
		if (c == ';') {
			push();
			continue;
		}
		current += c;
		if (c == '\'' || c == '"' || c == '`') {
			for (++i; i < sql.size(); ++i) {
				current += sql[i];
				if (sql[i] == '\\' && i + 1 < sql.size())
					current += sql[++i];
				else if (sql[i] == c)
					break;
			}
		} else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
			const size_t nl = sql.find('\n', i);
			const size_t stop = nl == std::string_view::npos ? sql.size() : nl;
			current.append(sql.substr(i + 1, stop - i - 1));
			i = stop - 1;
		} else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
			const size_t close = sql.find("*/", i + 2);
			const size_t stop = close == std::string_view::npos ? sql.size() : close + 2;
			current.append(sql.substr(i + 1, stop - i - 1));
			i = stop - 1;
		}
	}
	push();
	return out;
}

uint64_t run_clickhouse_query(clickhouse::Client &client, const std::string &sql, OutputFormat format, FILE *out)
{
	uint64_t rows = 0;
	for (const std::string &statement : split_statements(sql)) {
		try {
			if (!returns_rows(statement)) {
				client.run(statement);
				continue;
			}
			ResultReader reader(format, out);
			client.run(statement + "\nFORMAT TabSeparatedWithNamesAndTypes",
			           [&](std::string_view piece) { reader.data(piece); });
			rows += reader.end();
		} catch (const clickhouse::Error &e) {
			throw clickhouse::Error(e.kind(), std::string(e.what()) + "\nin the query: " + statement);
		}
	}
	return rows;
}

} // namespace tracery::analysis::sql
