// analysis/sql/clickhouse_export.cpp — the schema's rows sent to ClickHouse
// (see clickhouse_export.hpp).
#include "analysis/sql/clickhouse_export.hpp"

#include "analysis/output/json_text.hpp"
#include "analysis/sql/trace_rows.hpp"

#include <sys/random.h>

#include <variant>

namespace tracery::analysis::sql {

namespace reader = ctf::reader;
using clickhouse::append_tsv;
using clickhouse::quote_name;
using clickhouse::quote_string;

namespace {

// The columns every table starts with: where its rows came from.
constexpr const char *kIdentity = "host String, session String, load String";

struct TableDef {
	const char *name;
	const char *columns; // after the identity columns
	const char *order;   // the MergeTree sorting key
};

// The SQLite schema's tables (docs/sql.md), typed for ClickHouse 18.16 and
// later: Int64 for SQLite's INTEGER, String for TEXT, Nullable where SQLite
// allows NULL (never in a sorting key).
constexpr TableDef kTables[] = {
	{"events",
         "trace String, ts Int64, name String, cpu Nullable(Int64), pid Nullable(Int64), tid Nullable(Int64), "
         "context String, payload String",
         "(host, session, ts)"},
	{"streams", "id Int64, trace String, path String, stream_class Int64, instance Int64, events Int64",
         "(host, session, load, id)"},
	{"lost", "stream Int64, ts Int64, end_ts Nullable(Int64), events Int64, packets Int64", "(host, session, ts)"},
	{"slices",
         "id Int64, ts Int64, dur Int64, kind String, name String, cpu Nullable(Int64), pid Nullable(Int64), "
         "tid Nullable(Int64), ret Nullable(Int64), span_key Nullable(String)",
         "(host, session, ts)"},
	{"thread_state", "ts Int64, dur Int64, tid Int64, pid Nullable(Int64), state String, cpu Nullable(Int64)",
         "(host, session, ts)"},
	{"threads", "tid Int64, pid Nullable(Int64), name String, start_ts Nullable(Int64), end_ts Nullable(Int64)",
         "(host, session, load, tid)"},
	{"processes",
         "pid Int64, ppid Nullable(Int64), name String, start_ts Nullable(Int64), end_ts Nullable(Int64), threads "
         "Int64",
         "(host, session, load, pid)"},
};
enum TableIndex { events_table, streams_table, lost_table, slices_table, state_table, threads_table, processes_table };
constexpr size_t kTableCount = std::size(kTables);

// "a Int64, b Nullable(String)" -> {{"a", "Int64"}, {"b", "Nullable(String)"}}
std::vector<std::pair<std::string, std::string>> columns_of(std::string_view list)
{
	std::vector<std::pair<std::string, std::string>> r;
	while (!list.empty()) {
		const size_t comma = list.find(", ");
		const std::string_view one = list.substr(0, comma);
		const size_t sp = one.find(' ');
		r.emplace_back(std::string(one.substr(0, sp)), std::string(one.substr(sp + 1)));
		list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 2);
	}
	return r;
}

void tsv_int(std::string &out, int64_t v)
{
	out += '\t';
	append_decimal(out, v);
}

void tsv_text(std::string &out, std::string_view s)
{
	out += '\t';
	append_tsv(out, s);
}

// One column of a row (trace_rows.hpp's for_each_column): a number, text, or
// either or NULL.
void tsv_value(std::string &out, int64_t v) { tsv_int(out, v); }
void tsv_value(std::string &out, std::string_view s) { tsv_text(out, s); }
template <class T>
void tsv_value(std::string &out, const std::optional<T> &v)
{
	if (v)
		tsv_value(out, *v);
	else
		out += "\t\\N";
}

void append_members(std::string &out, const std::vector<reader::FieldDecl> &members,
                    std::span<const reader::Value> values)
{
	size_t v = 1;
	for (const reader::FieldDecl &d : members) {
		if (v >= values.size())
			break;
		if (out.back() != '{')
			out += ',';
		append_json_string(out, d.name());
		out += ':';
		v = append_json_value(out, d, values, v);
	}
}

// Throws std::invalid_argument when the table exists with other columns.
void check_columns(clickhouse::Client &client, const std::string &table, const std::string &expected_list)
{
	const std::string db = client.endpoint().database;
	const std::string have =
		client.run("SELECT name, type FROM system.columns WHERE database = " + quote_string(db) +
	                   " AND table = " + quote_string(table) + " FORMAT TabSeparated");
	std::string want;
	for (const auto &[name, type] : columns_of(expected_list)) {
		want += name;
		want += '\t';
		want += type;
		want += '\n';
	}
	if (have == want)
		return;
	const auto shown = [](std::string s) {
		for (char &c : s)
			c = c == '\t' ? ' ' : c == '\n' ? ',' : c;
		if (!s.empty())
			s.pop_back();
		return s;
	};
	throw std::invalid_argument("ClickHouse table " + db + "." + table + " exists with other columns: it has (" +
	                            shown(have) + "), the export writes (" + shown(want) +
	                            "); give another --table-prefix, or drop the table");
}

} // namespace

static_assert(ClickHouseTables::kCount == kTableCount);

ClickHouseTables::ClickHouseTables(clickhouse::Client &client, const ClickHouseOptions &options)
{
	for (const char c : options.table_prefix)
		if (!(isalnum(static_cast<unsigned char>(c)) || c == '_'))
			throw std::invalid_argument("--table-prefix '" + options.table_prefix +
			                            "': letters, digits and _ only");
	const std::string db = quote_name(client.endpoint().database);
	const bool cluster = !options.cluster.empty();
	if (cluster) {
		const std::string n = client.run("SELECT count() FROM system.clusters WHERE cluster = " +
		                                 quote_string(options.cluster) + " FORMAT TabSeparated");
		if (n == "0\n")
			throw std::invalid_argument("--cluster " + options.cluster + ": ClickHouse at " +
			                            client.endpoint().shown +
			                            " has no such cluster in its remote_servers configuration");
	}
	for (size_t t = 0; t < kTableCount; ++t) {
		const std::string columns = std::string(kIdentity) + ", " + kTables[t].columns;
		names_[t] = options.table_prefix + kTables[t].name;
		const std::string local = cluster ? names_[t] + "_local" : names_[t];
		client.run("CREATE TABLE IF NOT EXISTS " + db + "." + quote_name(local) + " (" + columns +
		           ") ENGINE = MergeTree() ORDER BY " + kTables[t].order);
		check_columns(client, local, columns);
		if (cluster) {
			client.run("CREATE TABLE IF NOT EXISTS " + db + "." + quote_name(names_[t]) + " (" + columns +
			           ") ENGINE = Distributed(" + quote_name(options.cluster) + ", " + db + ", " +
			           quote_name(local) + ", rand())");
			check_columns(client, names_[t], columns);
		}
		std::string &insert = inserts_[t];
		insert = "INSERT INTO " + db + "." + quote_name(local) + " (";
		bool first = true;
		for (const auto &[name, type] : columns_of(columns)) {
			if (!first)
				insert += ", ";
			first = false;
			insert += name;
		}
		insert += ") FORMAT TabSeparated";
	}
}

std::string new_load_id()
{
	unsigned char b[16] = {};
	if (getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b))
		throw std::runtime_error("getrandom failed: cannot make the load's id");
	static const char hex[] = "0123456789abcdef";
	std::string s;
	for (const unsigned char c : b) {
		s += hex[c >> 4];
		s += hex[c & 15];
	}
	return s;
}

// What an event class writes as its context and payload JSON: the members of
// each scope.
struct ClickHouseRows::ClassJson {
	std::vector<reader::FieldDecl> stream_context, context, payload;
	std::string name; // the event's name, UTF-8, TSV-escaped
};

ClickHouseRows::ClickHouseRows(clickhouse::Client &client, const ClickHouseTables &tables, size_t batch_bytes,
                               std::string_view host, std::string_view session, std::string_view load_id)
	: client_(client), tables_(tables), batch_bytes_(batch_bytes), load_id_(load_id),
	  classes_(std::make_unique<ClassCache<ClassJson>>())
{
	append_tsv(identity_, host);
	identity_ += '\t';
	append_tsv(identity_, session);
	identity_ += '\t';
	identity_ += load_id;
}

ClickHouseRows::~ClickHouseRows() = default;

void ClickHouseRows::event(const reader::Item &it, std::optional<int64_t> cpu, std::optional<int64_t> pid,
                           std::optional<int64_t> tid)
{
	const ClassJson &c = classes_->get(it, [&] {
		ClassJson j;
		const auto members = [&](reader::Scope scope, std::vector<reader::FieldDecl> &out) {
			for (const reader::FieldDecl d : reader::scope_root(it, scope).members())
				out.push_back(d);
		};
		members(reader::Scope::stream_event_context, j.stream_context);
		members(reader::Scope::event_context, j.context);
		members(reader::Scope::payload, j.payload);
		std::string name;
		append_utf8(name, it.event->cls->name);
		append_tsv(j.name, name);
		return j;
	});
	std::string &out = begin_row(events_table);
	out += '\t';
	const reader::Trace &trace = it.stream->trace();
	if (&trace != last_trace_) {
		last_trace_ = &trace;
		trace_name_.clear();
		std::string name;
		append_utf8(name, trace.name);
		append_tsv(trace_name_, name);
	}
	out += trace_name_;
	tsv_int(out, it.ns);
	out += '\t';
	out += c.name;
	tsv_value(out, cpu);
	tsv_value(out, pid);
	tsv_value(out, tid);
	json_.clear();
	json_ += '{';
	append_members(json_, c.stream_context, it.stream_context);
	append_members(json_, c.context, it.context);
	json_ += '}';
	tsv_text(out, json_);
	json_.clear();
	json_ += '{';
	append_members(json_, c.payload, it.fields);
	json_ += '}';
	tsv_text(out, json_);
	end_row(events_table);
}
void ClickHouseRows::lost(const LostRow &r) { append(lost_table, r); }
void ClickHouseRows::slice(const SliceRow &r) { append(slices_table, r); }
void ClickHouseRows::thread_state(const ThreadStateRow &r) { append(state_table, r); }
void ClickHouseRows::stream(const StreamRow &r) { append(streams_table, r); }
void ClickHouseRows::thread(const ThreadRow &r) { append(threads_table, r); }
void ClickHouseRows::process(const ProcessRow &r) { append(processes_table, r); }

void ClickHouseRows::flush()
{
	for (size_t t = 0; t < kTableCount; ++t)
		flush(t);
}

size_t ClickHouseRows::waiting_bytes() const
{
	size_t n = 0;
	for (const Batch &b : batches_)
		n += b.rows.size();
	return n;
}

// One row of table t, a TabSeparated field per column.
template <class Row>
void ClickHouseRows::append(size_t t, const Row &r)
{
	std::string &out = begin_row(t);
	for_each_column(r, [&](const auto &value) { tsv_value(out, value); });
	end_row(t);
}

std::string &ClickHouseRows::begin_row(size_t t)
{
	std::string &out = batches_[t].rows;
	out += identity_;
	return out;
}

void ClickHouseRows::end_row(size_t t)
{
	Batch &b = batches_[t];
	b.rows += '\n';
	++b.count;
	if (batch_bytes_ && b.rows.size() >= batch_bytes_)
		flush(t);
}

void ClickHouseRows::flush(size_t t)
{
	Batch &b = batches_[t];
	if (!b.count)
		return;
	try {
		client_.insert(tables_.insert(t), b.rows);
	} catch (const clickhouse::Error &e) {
		uint64_t waiting = 0;
		for (const Batch &other : batches_)
			waiting += other.count;
		const uint64_t count = b.count;
		refused_.rows += count;
		if (t == events_table)
			refused_.events += count;
		b.rows.clear();
		b.count = 0;
		throw clickhouse::Error(e.kind(), std::string(e.what()) +
		                                          "\nnot delivered: " + std::to_string(waiting) +
		                                          " rows (a batch of " + std::to_string(count) + " for " +
		                                          tables_.name(t) + " and the batches of the other tables); " +
		                                          "delivered: " + std::to_string(delivered_.events) +
		                                          " events, " + std::to_string(delivered_.rows) +
		                                          " rows in all, with load = '" + load_id_ + "'");
	}
	delivered_.rows += b.count;
	if (t == events_table)
		delivered_.events += b.count;
	b.rows.clear();
	b.count = 0;
}

namespace {

// host: the traces' first env.hostname; session: the first trace_name
// (LTTng's and Tracery's kernel traces) or tracer_session (Tracery's user
// traces). UTF-8.
std::pair<std::string, std::string> identity_of(const reader::TraceSet &set)
{
	std::string host, session;
	for (const auto &t : set.traces()) {
		if (host.empty() && t->has_hostname)
			append_utf8(host, t->hostname);
		for (const char *key : {"trace_name", "tracer_session"})
			if (const auto *v = t->cls.env_value(key);
			    session.empty() && v && std::holds_alternative<std::string>(*v))
				append_utf8(session, std::get<std::string>(*v));
	}
	return {host, session};
}

} // namespace

ClickHouseCounts load_into_clickhouse(EventWalk &walk, clickhouse::Client &client, const ClickHouseOptions &options)
{
	const ClickHouseTables tables(client, options);
	const auto [host, session] = identity_of(walk.set());
	ClickHouseCounts counts;
	counts.load_id = new_load_id();
	ClickHouseRows rows(client, tables, options.batch_bytes, host, session, counts.load_id);
	try {
		walk_rows(walk, options.spans, rows);
		rows.flush();
	} catch (const clickhouse::Error &e) {
		throw clickhouse::Error(e.kind(),
		                        std::string(e.what()) +
		                                "\nnot delivered either: whatever the traces hold after them");
	}
	counts.events = rows.delivered().events;
	counts.rows = rows.delivered().rows;
	return counts;
}

} // namespace tracery::analysis::sql
