// analysis/sql/event_tables.hpp — one SQL table per event name of the traces
// (the union of the columns of every class of that name: ts, cpu, pid, tid,
// the context fields, then the payload fields, typed INTEGER, REAL or TEXT),
// rows inserted through one prepared statement per event class, and the
// `events` view over all of them (ts, name, cpu, pid, tid, payload as JSON),
// with the `event_classes` table naming each event's table. Event and field
// names come from the trace: every one is quoted as an SQL identifier.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/read/event_walk.hpp"
#include "analysis/sql/sqlite.hpp"
#include "ctf/reader/trace_reader.hpp"

namespace tracery::analysis::sql {

// INTEGER (integers), REAL (floating point) or TEXT (strings, enumerations as
// their label, compound types as JSON).
const char *sql_type(const ctf::reader::FieldType &t);

// A struct, variant, array or sequence (not text): stored as JSON.
bool is_compound(const ctf::reader::FieldType &t);

// The names derived tables and views use, which no event table may take.
bool reserved_table(std::string_view name);

class EventTables {
public:
	// Creates a table for each event name the traces declare. Throws SqlError.
	EventTables(Db &db, const ctf::reader::TraceSet &set);
	// Inserts the event. Throws SqlError.
	void insert(const ctf::reader::Item &it, std::optional<int64_t> cpu, std::optional<int64_t> pid,
	            std::optional<int64_t> tid);
	// Inserts the rows still waiting, creates the events view and fills
	// event_classes. Throws SqlError.
	void finish();

	struct Column {
		std::string name; // unquoted
		const char *type;
		bool payload;      // a payload field (else a context field)
		std::string field; // the field's name as shown (for the payload JSON)
		bool json = false; // a compound field, stored as JSON
	};
	struct Table {
		std::string event, name;
		std::vector<Column> columns; // after ts, cpu, pid, tid
		uint64_t rows = 0;
		// (payload?, shown name, type) -> index in columns
		std::map<std::tuple<bool, std::string, std::string>, size_t> index;
	};
	const std::vector<Table> &tables() const { return tables_; }

private:
	// A value waiting in a sink's batch (text in its own buffer: the trace's
	// bytes need not outlive the batch).
	struct Cell {
		enum Type : uint8_t { null, integer, real, text } type = null;
		int64_t i = 0;
		double f = 0;
		std::string s;
	};
	// What one event class binds: per member of each scope, its column
	// (-1: none).
	struct Member {
		int column = -1;
		enum Kind : uint8_t { integer, enumeration, real, text, json } kind = integer;
		bool is_signed = false;
	};
	// Rows wait in batches of kBatchRows, inserted by one multi-row INSERT.
	static constexpr size_t kBatchRows = 32;
	struct Sink {
		Table *table = nullptr;
		size_t columns = 0;      // per row, ts, cpu, pid, tid included
		Stmt batch, one;         // kBatchRows rows, one row
		std::vector<Cell> cells; // kBatchRows x columns
		size_t pending = 0;
		std::vector<Member> stream_context, context, fields;
	};
	Sink make_sink(const ctf::reader::Item &it);
	void fill_scope(Cell *row, std::vector<Member> &members, const ctf::reader::Plan &plan,
	                std::span<const ctf::reader::Value> values);
	void flush(Sink &s);

	Db &db_;
	std::vector<Table> tables_;
	std::unordered_map<std::string, size_t> by_event_;
	ClassCache<std::unique_ptr<Sink>> sinks_;
	std::vector<Sink *> all_sinks_;
};

} // namespace tracery::analysis::sql
