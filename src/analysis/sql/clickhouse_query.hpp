// analysis/sql/clickhouse_query.hpp — `tracery query --clickhouse URL 'SQL'`:
// the statements run on a ClickHouse server, one request each, and the rows
// of those that return any printed as `tracery query` prints SQLite's
// (query.hpp): integers and floats as numbers, NULL as NULL.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/sql/query.hpp"
#include "base/clickhouse_client.hpp"

namespace tracery::analysis::sql {

// The statements of sql, split at the semicolons outside quotes and
// comments; empty ones left out.
std::vector<std::string> split_statements(std::string_view sql);

// Runs each statement in turn. Throws clickhouse::Error with ClickHouse's
// message and the statement. Returns the rows printed.
uint64_t run_clickhouse_query(clickhouse::Client &client, const std::string &sql, OutputFormat format, FILE *out);

} // namespace tracery::analysis::sql
