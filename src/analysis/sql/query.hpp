// analysis/sql/query.hpp — `tracery query`: SQL statements run on a database
// and the rows they return printed as an aligned text table (the default),
// CSV (RFC 4180, a header line, NULL as an empty field) or JSON (per
// statement an array of objects, one per row).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "analysis/sql/sqlite.hpp"

namespace tracery::analysis::sql {

enum class OutputFormat { text, csv, json };

// A cell of a result row: its kind and its text (integers in decimal, reals
// as short as reads back the same double, NULL as "NULL").
struct Cell {
	enum Kind : uint8_t { null, integer, real, nonfinite, string } kind = null;
	std::string text;
};

// A statement's rows printed as text, CSV or JSON, whichever database they
// come from (SQLite here, ClickHouse in clickhouse_query.hpp).
class RowPrinter {
public:
	RowPrinter(std::vector<std::string> names, OutputFormat f, FILE *out);
	// Takes the cells' text.
	void row(std::vector<Cell> &cells);
	// After the last row.
	void end();
	uint64_t rows() const { return rows_; }

private:
	void csv_header(std::string &line);
	void flush_text();
	OutputFormat f_;
	FILE *out_;
	std::vector<std::string> names_;
	std::vector<std::vector<std::string>> block_;
	std::vector<bool> typed_, numeric_;
	uint64_t rows_ = 0;
};

// A double as short as reads back the same double.
std::string real_text(double d);

// Runs each statement of sql in turn, printing the rows of those that
// return any. Throws SqlError with SQLite's message and the statement.
// Returns the rows printed.
uint64_t run_query(Db &db, const std::string &sql, OutputFormat format, FILE *out);

} // namespace tracery::analysis::sql
