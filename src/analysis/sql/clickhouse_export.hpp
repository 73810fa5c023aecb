// analysis/sql/clickhouse_export.hpp — traces loaded into ClickHouse tables
// over its HTTP interface (`tracery export --format clickhouse`): the rows of
// the SQL schema (trace_rows.hpp, the SQLite export's), with the host,
// session and load each came from so that many machines' traces share the
// tables; one `events` table with typed common columns and the context and
// payload as JSON text. Batches of TabSeparated rows, one INSERT per table
// and batch; with a cluster, MergeTree tables `*_local` on this server and
// Distributed tables over the cluster's. docs/sql.md describes the schema.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model/spans.hpp"
#include "analysis/read/event_walk.hpp"
#include "base/clickhouse_client.hpp"

namespace tracery::analysis::sql {

struct ClickHouseOptions {
	std::string table_prefix; // before each table's name
	std::string cluster;      // remote_servers' cluster name; empty: plain MergeTree tables
	std::vector<SpanOptions> spans;
	size_t batch_bytes = 4 << 20; // a table's TabSeparated rows sent at this size
};

struct ClickHouseCounts {
	uint64_t events = 0; // delivered
	uint64_t rows = 0;   // delivered, every table
	std::string load_id; // the load column of every row
};

// Creates the tables that do not exist (checking that those that do have
// the columns the export writes) and loads the walk's rows. Throws
// clickhouse::Error (server down, statement refused: the rows delivered and
// not delivered counted in the message), std::invalid_argument (a table
// with other columns, an unknown cluster, a bad prefix), ReadError.
ClickHouseCounts load_into_clickhouse(EventWalk &walk, clickhouse::Client &client, const ClickHouseOptions &options);

} // namespace tracery::analysis::sql
