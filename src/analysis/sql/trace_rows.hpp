// analysis/sql/trace_rows.hpp — the rows of the SQL schema (docs/sql.md),
// worked out once from the merged items of the traces and handed to a sink:
// each event with its cpu, pid and tid, the streams and what they lost, and
// the derived rows: slices (system calls and user spans, paired by the
// kernel model, model/syscalls.hpp and model/spans.hpp, as `analyze
// syscalls` and `analyze latency` pair them), thread states, threads and
// processes. The SQLite database (sqlite_export.hpp) and ClickHouse's
// tables (clickhouse_export.hpp) are two sinks of the same rows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/spans.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/sql/derived.hpp"

namespace tracery::analysis::sql {

// Text is valid UTF-8 (the trace's bytes repaired); a view lives for the
// call only.
struct StreamRow {
	int64_t id = 0; // 1, 2, ... in the order the streams first delivered anything
	std::string_view trace, path;
	int64_t stream_class = 0, instance = 0;
	uint64_t events = 0;
};
struct LostRow {
	int64_t stream = 0, ts = 0;
	std::optional<int64_t> end_ts;
	int64_t events = 0, packets = 0;
};
struct SliceRow {
	int64_t id = 0; // 1, 2, ... in the order the slices end
	int64_t ts = 0, dur = 0;
	std::string_view kind, name;
	std::optional<int64_t> cpu, pid, tid, ret;
	std::string_view span_key; // empty: none (NULL)
};
struct ThreadStateRow {
	int64_t ts = 0, dur = 0, tid = 0;
	std::optional<int64_t> pid;
	std::string_view state;
	std::optional<int64_t> cpu;
};
struct ThreadRow {
	int64_t tid = 0;
	std::optional<int64_t> pid;
	std::string_view name;
	std::optional<int64_t> start_ts, end_ts;
};

// Each row's columns in the schema's order (docs/sql.md), for sinks that
// write every column alike: f(value) per column, a value being an int64_t,
// a std::string_view or a std::optional of one (empty: NULL).
template <class F>
void for_each_column(const StreamRow &r, F &&f)
{
	f(r.id), f(r.trace), f(r.path), f(r.stream_class), f(r.instance), f(static_cast<int64_t>(r.events));
}
template <class F>
void for_each_column(const LostRow &r, F &&f)
{
	f(r.stream), f(r.ts), f(r.end_ts), f(r.events), f(r.packets);
}
template <class F>
void for_each_column(const SliceRow &r, F &&f)
{
	f(r.id), f(r.ts), f(r.dur), f(r.kind), f(r.name), f(r.cpu), f(r.pid), f(r.tid), f(r.ret);
	f(r.span_key.empty() ? std::optional<std::string_view>() : std::optional<std::string_view>(r.span_key));
}
template <class F>
void for_each_column(const ThreadStateRow &r, F &&f)
{
	f(r.ts), f(r.dur), f(r.tid), f(r.pid), f(r.state), f(r.cpu);
}
template <class F>
void for_each_column(const ThreadRow &r, F &&f)
{
	f(r.tid), f(r.pid), f(r.name), f(r.start_ts), f(r.end_ts);
}
template <class F>
void for_each_column(const ProcessRow &r, F &&f)
{
	f(r.pid), f(r.ppid), f(std::string_view(r.name)), f(r.start_ns), f(r.end_ns), f(r.threads);
}

// Where the rows go. Events, lost ranges, slices and thread states come
// during the walk; streams, threads and processes after it.
class RowSink {
public:
	virtual ~RowSink() = default;
	virtual void event(const ctf::reader::Item &it, std::optional<int64_t> cpu, std::optional<int64_t> pid,
	                   std::optional<int64_t> tid) = 0;
	virtual void lost(const LostRow &row) = 0;
	virtual void slice(const SliceRow &row) = 0;
	virtual void thread_state(const ThreadStateRow &row) = 0;
	virtual void stream(const StreamRow &row) = 0;
	virtual void thread(const ThreadRow &row) = 0;
	virtual void process(const ProcessRow &row) = 0;
};

// The rows of items handed one at a time. In time order (a walk of the
// traces) every table's rows; with `ordered` false (the items of each
// stream in order, the streams one after another as their packets come: a
// relay's) only what does not need the order across streams: each event
// with its cpu, pid and tid (a kernel event's thread: the last switch on its
// cpu), what was lost, and the streams at the end.
class RowWalker {
public:
	RowWalker(const ctf::reader::TraceSet &set, const std::vector<SpanOptions> &spans, RowSink &sink,
	          bool ordered = true);
	~RowWalker();
	RowWalker(const RowWalker &) = delete;
	RowWalker &operator=(const RowWalker &) = delete;

	// Throws std::invalid_argument (a span's event or field missing) and
	// whatever the sink throws.
	void item(const ctf::reader::Item &it);
	// After the last item: the thread states still open, then the streams,
	// threads and processes (ordered), or the streams.
	void finish();
	uint64_t events() const;

private:
	struct State;
	std::unique_ptr<State> s_;
};

// Walks every item of the walk into sink. Returns the events walked. Throws
// ReadError (a damaged trace), std::invalid_argument (a span's event or
// field missing) and whatever the sink throws.
uint64_t walk_rows(EventWalk &walk, const std::vector<SpanOptions> &spans, RowSink &sink);

} // namespace tracery::analysis::sql
