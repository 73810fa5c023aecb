// analysis/sql/sqlite_export.cpp — the database filled with the schema's rows
// (trace_rows.hpp; see sqlite_export.hpp).
#include "analysis/sql/sqlite_export.hpp"

#include "analysis/model/symbol_events.hpp"
#include "analysis/output/json_text.hpp"
#include "analysis/sql/event_tables.hpp"
#include "analysis/sql/trace_rows.hpp"

#include <set>

namespace tracery::analysis::sql {

namespace reader = ctf::reader;

namespace {

constexpr uint64_t kRowsPerTransaction = 1 << 20;

// The table `symbols`: each address of a process the events carry (ip
// context, function entry and exit), named when first seen.
class SymbolTable {
public:
	static constexpr size_t kMaxRows = 1 << 22;

	SymbolTable(Db &db, const SymbolOptions &options) : symbols_(options)
	{
		db.exec("CREATE TABLE symbols (pid INTEGER NOT NULL, address INTEGER NOT NULL, bin TEXT, func TEXT, "
		        "src TEXT, path TEXT, function TEXT, file TEXT, offset INTEGER, line INTEGER, "
		        "PRIMARY KEY (pid, address))");
		ins_ = Stmt(db, "INSERT INTO symbols VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
	}

	void event(const reader::Item &it)
	{
		symbols_.observe(it);
		symbols_.for_each_address_field(it, [&](std::string_view, const FieldRef &ref) {
			const std::optional<int64_t> pid = symbols_.process(it), address = int_field(it, ref);
			if (!pid || !address || seen_.count({*pid, *address}))
				return;
			if (seen_.size() >= kMaxRows) {
				++not_kept_;
				return;
			}
			seen_.insert({*pid, *address});
			const Symbol *s = symbols_.at(it, ref);
			static const Symbol kUnknown;
			if (!s)
				s = &kUnknown;
			ins_.bind(1, *pid);
			ins_.bind(2, *address);
			int col = 3;
			std::string *text = texts_;
			for (const std::string *t : {&s->bin, &s->func, &s->src, &s->path, &s->function, &s->file}) {
				text->clear();
				append_utf8(*text, *t);
				if (text->empty())
					ins_.bind_null(col++);
				else
					ins_.bind(col++,
					          std::string_view(*text)); // (bound, not copied: one string each)
				++text;
			}
			ins_.bind_opt(col++, s->path.empty() ? std::nullopt : std::optional<int64_t>(s->offset));
			ins_.bind_opt(col, s->file.empty() ? std::nullopt : std::optional<int64_t>(s->line));
			ins_.run();
		});
	}
	void finish()
	{
		symbols_.resolver().report(stderr);
		if (not_kept_)
			fprintf(stderr, "tracery: symbols: %llu addresses not in the table symbols (more than %zu)\n",
			        static_cast<unsigned long long>(not_kept_), kMaxRows);
	}

private:
	SymbolEvents symbols_;
	Stmt ins_;
	std::set<std::pair<int64_t, int64_t>> seen_;
	std::string texts_[6];
	uint64_t not_kept_ = 0;
};

// The SQLite database as a sink of the schema's rows (trace_rows.hpp).
class SqliteSink final : public RowSink {
public:
	SqliteSink(Db &db, const ctf::reader::TraceSet &set, const LoadOptions &options)
		: batches_(db, kRowsPerTransaction), tables_(db, set)
	{
		if (options.symbols)
			symbols_.emplace(db, *options.symbols);
		db.exec("CREATE TABLE streams (id INTEGER PRIMARY KEY, trace TEXT NOT NULL, path TEXT NOT NULL, "
		        "stream_class INTEGER NOT NULL, instance INTEGER NOT NULL, events INTEGER NOT NULL DEFAULT 0)");
		db.exec("CREATE TABLE lost (stream INTEGER NOT NULL REFERENCES streams(id), ts INTEGER NOT NULL, "
		        "end_ts INTEGER, events INTEGER NOT NULL, packets INTEGER NOT NULL)");
		db.exec("CREATE TABLE slices (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, dur INTEGER NOT NULL, "
		        "kind TEXT NOT NULL, name TEXT NOT NULL, cpu INTEGER, pid INTEGER, tid INTEGER, ret INTEGER, "
		        "span_key TEXT)");
		db.exec("CREATE TABLE thread_state (ts INTEGER NOT NULL, dur INTEGER NOT NULL, tid INTEGER NOT NULL, "
		        "pid INTEGER, state TEXT NOT NULL, cpu INTEGER)");
		db.exec("CREATE TABLE threads (tid INTEGER PRIMARY KEY, pid INTEGER, name TEXT, start_ts INTEGER, "
		        "end_ts INTEGER)");
		db.exec("CREATE TABLE processes (pid INTEGER PRIMARY KEY, ppid INTEGER, name TEXT, start_ts INTEGER, "
		        "end_ts INTEGER, threads INTEGER NOT NULL)");
		ins_stream_ = Stmt(db, "INSERT INTO streams VALUES (?, ?, ?, ?, ?, ?)");
		ins_lost_ = Stmt(db, "INSERT INTO lost VALUES (?, ?, ?, ?, ?)");
		ins_slice_ = Stmt(db, "INSERT INTO slices VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
		ins_state_ = Stmt(db, "INSERT INTO thread_state VALUES (?, ?, ?, ?, ?, ?)");
		ins_thread_ = Stmt(db, "INSERT INTO threads VALUES (?, ?, ?, ?, ?)");
		ins_process_ = Stmt(db, "INSERT INTO processes VALUES (?, ?, ?, ?, ?, ?)");
	}

	void event(const reader::Item &it, std::optional<int64_t> cpu, std::optional<int64_t> pid,
	           std::optional<int64_t> tid) override
	{
		tables_.insert(it, cpu, pid, tid);
		batches_.row();
		if (symbols_)
			symbols_->event(it);
	}
	void lost(const LostRow &r) override { insert(ins_lost_, r); }
	void slice(const SliceRow &r) override
	{
		insert(ins_slice_, r);
		batches_.row();
	}
	void thread_state(const ThreadStateRow &r) override
	{
		insert(ins_state_, r);
		batches_.row();
	}
	void stream(const StreamRow &r) override { insert(ins_stream_, r); }
	void thread(const ThreadRow &r) override { insert(ins_thread_, r); }
	void process(const ProcessRow &r) override { insert(ins_process_, r); }
	void finish()
	{
		if (symbols_)
			symbols_->finish();
		tables_.finish();
		batches_.finish();
	}

private:
	// One row into its table's statement, a parameter per column.
	template <class Row>
	static void insert(Stmt &statement, const Row &r)
	{
		int parameter = 1;
		for_each_column(r, [&](const auto &value) {
			if constexpr (requires { value.has_value(); })
				statement.bind_opt(parameter++, value);
			else
				statement.bind(parameter++, value);
		});
		statement.run();
	}
	Batches batches_;
	EventTables tables_;
	std::optional<SymbolTable> symbols_;
	Stmt ins_stream_, ins_lost_, ins_slice_, ins_state_, ins_thread_, ins_process_;
};

} // namespace

SpanOptions parse_span(const std::string &spec)
{
	SpanOptions o;
	std::vector<std::string> parts;
	size_t from = 0;
	for (;;) {
		const size_t comma = spec.find(',', from);
		parts.push_back(spec.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
		if (comma == std::string::npos)
			break;
		from = comma + 1;
	}
	if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty() ||
	    (parts.size() == 3 && parts[2].empty()))
		throw std::invalid_argument(
			"--span '" + spec +
			"': give BEGIN,END or BEGIN,END,FIELD: the event that opens a span, the one "
			"that closes it and, to pair them by a field of both instead of by thread, "
			"that field (e.g. --span app:req_begin,app:req_end,id)");
	o.begin = parts[0];
	o.end = parts[1];
	if (parts.size() == 3)
		o.match = parts[2];
	o.begin_option = o.end_option = o.match_option = "--span " + spec;
	return o;
}

void fresh_database_pragmas(Db &db)
{
	db.exec("PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
	        "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32768");
}

uint64_t load_traces(EventWalk &walk, Db &db, const LoadOptions &options)
{
	SqliteSink sink(db, walk.set(), options);
	const uint64_t events = walk_rows(walk, options.spans, sink);
	sink.finish();
	return events;
}

} // namespace tracery::analysis::sql
