// analysis/sql/sqlite_export.hpp — traces loaded into an SQLite database, a sink
// of the schema's rows (trace_rows.hpp)
// (`tracery export --format sqlite`, and `tracery query`'s database): the
// per-event tables and the events view (event_tables.hpp), the streams and
// the events they lost, and the derived tables: slices (system calls and
// user spans paired by the kernel model, model/syscalls.hpp and
// model/spans.hpp, as `analyze syscalls` and `analyze latency` pair them), thread_state, threads and processes. Streamed: one prepared
// statement per event class, a transaction per batch of rows, memory
// independent of the trace's size. docs/sql.md describes the schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/model/spans.hpp"
#include "analysis/model/symbols.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/sql/sqlite.hpp"

namespace tracery::analysis::sql {

struct LoadOptions {
	// User spans: begin and end events, paired per thread or by a field.
	std::vector<SpanOptions> spans;
	// --symbols: the table `symbols`, what each address of the events names
	// (docs/sql.md).
	std::optional<SymbolOptions> symbols;
};

// "BEGIN,END[,FIELD]" (--span): throws std::invalid_argument naming --span
// and the fix.
SpanOptions parse_span(const std::string &spec);

// Settings for a database written once from scratch: no rollback journal, no
// sync, exclusive lock, a bounded page cache.
void fresh_database_pragmas(Db &db);

// Loads every item of the walk into db (which has none of its tables).
// Returns the events loaded. Throws ReadError (a damaged trace), SqlError,
// std::invalid_argument (a span's event or field missing).
uint64_t load_traces(EventWalk &walk, Db &db, const LoadOptions &options);

} // namespace tracery::analysis::sql
