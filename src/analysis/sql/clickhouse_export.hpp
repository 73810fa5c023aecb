// analysis/sql/clickhouse_export.hpp — traces loaded into ClickHouse tables
// over its HTTP interface (`tracery export --format clickhouse`): the rows of
// the SQL schema (trace_rows.hpp, the SQLite export's), with the host,
// session and load each came from so that many machines' traces share the
// tables; one `events` table with typed common columns and the context and
// payload as JSON text. Batches of TabSeparated rows, one INSERT per table
// and batch; with a cluster, MergeTree tables `*_local` on this server and
// Distributed tables over the cluster's. docs/sql.md describes the schema.
// The tables and the rows of one load are also what tracery-relayd's
// ClickHouse sink sends as packets come (relay/clickhouse_sink.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/spans.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/sql/trace_rows.hpp"
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

// The tables made ready on the server of a client: created when they do not
// exist, their columns checked when they do; each one's INSERT. Throws
// clickhouse::Error, std::invalid_argument (a table with other columns, an
// unknown cluster, a bad prefix).
class ClickHouseTables {
public:
	ClickHouseTables(clickhouse::Client &client, const ClickHouseOptions &options);
	// By the index of the table (kTables' order in the source).
	const std::string &insert(size_t table) const { return inserts_[table]; }
	const std::string &name(size_t table) const { return names_[table]; }
	static constexpr size_t kCount = 7;

private:
	std::string inserts_[kCount], names_[kCount];
};

// 32 hex digits, new each time: a load's id (the `load` column).
std::string new_load_id();

// The rows of one host, session and load as a batch of TabSeparated rows per
// table, each sent once it reaches batch_bytes (0: only by flush()).
class ClickHouseRows final : public RowSink {
public:
	// host and session: UTF-8.
	ClickHouseRows(clickhouse::Client &client, const ClickHouseTables &tables, size_t batch_bytes,
	               std::string_view host, std::string_view session, std::string_view load_id);
	~ClickHouseRows() override;

	void event(const ctf::reader::Item &it, std::optional<int64_t> cpu, std::optional<int64_t> pid,
	           std::optional<int64_t> tid) override;
	void lost(const LostRow &row) override;
	void slice(const SliceRow &row) override;
	void thread_state(const ThreadStateRow &row) override;
	void stream(const StreamRow &row) override;
	void thread(const ThreadRow &row) override;
	void process(const ProcessRow &row) override;

	// Sends every batch that waits. A batch the server refuses (or cannot
	// take) is dropped and counted (refused()); then clickhouse::Error says
	// what was and was not delivered, the batches of the other tables still
	// waiting.
	void flush();
	// The bytes of the rows waiting.
	size_t waiting_bytes() const;
	struct Counts {
		uint64_t events = 0, rows = 0;
	};
	const Counts &delivered() const { return delivered_; }
	const Counts &refused() const { return refused_; }

private:
	struct Batch {
		std::string rows;
		uint64_t count = 0;
	};
	struct ClassJson;
	template <class Row>
	void append(size_t t, const Row &r);
	std::string &begin_row(size_t t);
	void end_row(size_t t);
	void flush(size_t t);

	clickhouse::Client &client_;
	const ClickHouseTables &tables_;
	size_t batch_bytes_;
	std::string identity_; // host, session, load, TSV
	std::string load_id_;
	Batch batches_[ClickHouseTables::kCount];
	Counts delivered_, refused_;
	std::unique_ptr<ClassCache<ClassJson>> classes_;
	const ctf::reader::Trace *last_trace_ = nullptr;
	std::string trace_name_, json_;
};

// Creates the tables that do not exist (checking that those that do have
// the columns the export writes) and loads the walk's rows. Throws
// clickhouse::Error (server down, statement refused: the rows delivered and
// not delivered counted in the message), std::invalid_argument (a table
// with other columns, an unknown cluster, a bad prefix), ReadError.
ClickHouseCounts load_into_clickhouse(EventWalk &walk, clickhouse::Client &client, const ClickHouseOptions &options);

} // namespace tracery::analysis::sql
