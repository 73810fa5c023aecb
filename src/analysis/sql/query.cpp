// analysis/sql/query.cpp — statements run and their rows printed (see
// query.hpp). The text table reuses the reports' printer, a block of rows at
// a time so that a large result needs no more memory than a block.
#include "analysis/sql/query.hpp"

#include "analysis/output/json_text.hpp"
#include "analysis/output/report.hpp"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <vector>

namespace tracery::analysis::sql {

namespace {

constexpr size_t kRowsPerBlock = 1000;

std::string blob_text(sqlite3_stmt *st, int i)
{
	static const char hex[] = "0123456789ABCDEF";
	const auto *p = static_cast<const unsigned char *>(sqlite3_column_blob(st, i));
	const int n = sqlite3_column_bytes(st, i);
	std::string s = "X'";
	for (int k = 0; k < n; ++k) {
		s += hex[p[k] >> 4];
		s += hex[p[k] & 15];
	}
	s += '\'';
	return s;
}

std::string_view column_text(sqlite3_stmt *st, int i)
{
	const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(st, i));
	return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(st, i))) : std::string_view();
}

// The cell as text (NULL: "NULL").
std::string cell_text(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return std::to_string(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return real_text(sqlite3_column_double(st, i));
	case SQLITE_BLOB:
		return blob_text(st, i);
	case SQLITE_NULL:
		return "NULL";
	default: {
		std::string s;
		append_utf8(s, column_text(st, i));
		return s;
	}
	}
}

void csv_field(std::string &line, const std::string &s)
{
	if (s.find_first_of(",\"\r\n") == std::string::npos) {
		line += s;
		return;
	}
	line += '"';
	for (const char c : s) {
		line += c;
		if (c == '"')
			line += '"';
	}
	line += '"';
}

// A row's cell from SQLite.
Cell sqlite_cell(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return {Cell::integer, cell_text(st, i)};
	case SQLITE_FLOAT: {
		const double d = sqlite3_column_double(st, i);
		return {std::isfinite(d) ? Cell::real : Cell::nonfinite, cell_text(st, i)};
	}
	case SQLITE_NULL:
		return {Cell::null, "NULL"};
	default:
		return {Cell::string, cell_text(st, i)};
	}
}

std::vector<std::string> sqlite_names(sqlite3_stmt *st)
{
	std::vector<std::string> names;
	for (int i = 0; i < sqlite3_column_count(st); ++i) {
		const char *name = sqlite3_column_name(st, i);
		std::string s;
		append_utf8(s, name ? name : "");
		names.push_back(s);
	}
	return names;
}

} // namespace

std::string real_text(double d)
{
	char b[40];
	for (int digits = 15; digits <= 17; ++digits) {
		snprintf(b, sizeof b, "%.*g", digits, d);
		if (strtod(b, nullptr) == d)
			break;
	}
	return b;
}

RowPrinter::RowPrinter(std::vector<std::string> names, OutputFormat f, FILE *out)
	: f_(f), out_(out), names_(std::move(names)), typed_(names_.size()), numeric_(names_.size())
{
}

void RowPrinter::row(std::vector<Cell> &cells)
{
	++rows_;
	const size_t n = names_.size();
	switch (f_) {
	case OutputFormat::text:
		block_.push_back({});
		for (size_t i = 0; i < n; ++i) {
			if (cells[i].kind != Cell::null && !typed_[i]) {
				typed_[i] = true;
				numeric_[i] = cells[i].kind == Cell::integer || cells[i].kind == Cell::real ||
				              cells[i].kind == Cell::nonfinite;
			}
			block_.back().push_back(std::move(cells[i].text));
		}
		if (block_.size() == kRowsPerBlock)
			flush_text();
		return;
	case OutputFormat::csv: {
		std::string line;
		if (rows_ == 1)
			csv_header(line);
		for (size_t i = 0; i < n; ++i) {
			if (i)
				line += ',';
			if (cells[i].kind != Cell::null)
				csv_field(line, cells[i].text);
		}
		line += "\r\n";
		fputs(line.c_str(), out_);
		return;
	}
	case OutputFormat::json: {
		std::string line = rows_ == 1 ? "[{" : ",\n{";
		for (size_t i = 0; i < n; ++i) {
			if (i)
				line += ',';
			append_json_string(line, names_[i]);
			line += ':';
			switch (cells[i].kind) {
			case Cell::integer:
			case Cell::real:
				line += cells[i].text;
				break;
			case Cell::nonfinite:
			case Cell::null:
				line += "null";
				break;
			case Cell::string:
				append_json_string(line, cells[i].text);
			}
		}
		line += '}';
		fputs(line.c_str(), out_);
		return;
	}
	}
}

void RowPrinter::end()
{
	switch (f_) {
	case OutputFormat::text:
		flush_text();
		break;
	case OutputFormat::csv:
		if (!rows_ && !names_.empty()) {
			std::string line;
			csv_header(line);
			fputs(line.c_str(), out_);
		}
		break;
	case OutputFormat::json:
		fputs(rows_ ? "]\n" : "[]\n", out_);
		break;
	}
	fflush(out_);
}

void RowPrinter::csv_header(std::string &line)
{
	for (size_t i = 0; i < names_.size(); ++i) {
		if (i)
			line += ',';
		csv_field(line, names_[i]);
	}
	line += "\r\n";
}

void RowPrinter::flush_text()
{
	if (block_.empty() && (rows_ || names_.empty()))
		return;
	Report r;
	Table &t = r.tables.emplace_back();
	for (size_t i = 0; i < names_.size(); ++i)
		t.columns.push_back({names_[i], names_[i], numeric_[i] ? Format::integer : Format::text});
	for (auto &line : block_) {
		auto &row = t.rows.emplace_back();
		for (auto &s : line)
			row.emplace_back(std::move(s));
	}
	block_.clear();
	print_text(r, out_);
}

uint64_t run_query(Db &db, const std::string &sql, OutputFormat format, FILE *out)
{
	const char *rest = sql.c_str();
	const char *const end = rest + sql.size();
	uint64_t rows = 0;
	while (rest < end) {
		sqlite3_stmt *raw = nullptr;
		const char *tail = nullptr;
		if (sqlite3_prepare_v2(db.handle(), rest, static_cast<int>(end - rest), &raw, &tail) != SQLITE_OK) {
			std::string msg = "SQLite: ";
			msg += db.message();
			msg += ", in the query: ";
			msg += std::string(rest, end);
			throw SqlError(msg);
		}
		const std::string text(rest, tail);
		rest = tail;
		if (!raw)
			continue; // a comment or white space
		const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt *)> st(raw, sqlite3_finalize);
		std::unique_ptr<RowPrinter> printer;
		std::vector<Cell> cells;
		for (;;) {
			const int rc = sqlite3_step(raw);
			if (rc == SQLITE_DONE)
				break;
			if (rc != SQLITE_ROW) {
				std::string msg = "SQLite: ";
				msg += db.message();
				msg += ", in the query: ";
				msg += text;
				throw SqlError(msg);
			}
			if (!printer)
				printer = std::make_unique<RowPrinter>(sqlite_names(raw), format, out);
			cells.clear();
			for (int i = 0; i < sqlite3_column_count(raw); ++i)
				cells.push_back(sqlite_cell(raw, i));
			printer->row(cells);
		}
		if (!printer && sqlite3_column_count(raw) > 0)
			printer = std::make_unique<RowPrinter>(sqlite_names(raw), format, out);
		if (printer) {
			printer->end();
			rows += printer->rows();
		}
	}
	return rows;
}

} // namespace tracery::analysis::sql
