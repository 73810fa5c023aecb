// analysis/sql/query.hpp — `tracery query`: SQL statements run on a database
// and the rows they return printed as an aligned text table (the default),
// CSV (RFC 4180, a header line, NULL as an empty field) or JSON (per
// statement an array of objects, one per row).
#pragma once

#include <cstdio>
#include <string>

#include "analysis/sql/sqlite.hpp"

namespace tracery::analysis::sql {

enum class OutputFormat { text, csv, json };

// Runs each statement of sql in turn, printing the rows of those that
// return any. Throws SqlError with SQLite's message and the statement.
// Returns the rows printed.
uint64_t run_query(Db &db, const std::string &sql, OutputFormat format, FILE *out);

} // namespace tracery::analysis::sql
