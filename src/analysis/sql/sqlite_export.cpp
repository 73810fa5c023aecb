// analysis/sql/sqlite_export.cpp — the walk over the traces that fills the
// database (see sqlite_export.hpp).
#include "analysis/sql/sqlite_export.hpp"

#include "analysis/model/kernel_events.hpp"
#include "analysis/model/symbol_events.hpp"
#include "analysis/model/syscalls.hpp"
#include "analysis/model/tasks.hpp"
#include "analysis/model/trace_env.hpp"
#include "analysis/output/json_text.hpp"
#include "analysis/sql/derived.hpp"
#include "analysis/sql/event_tables.hpp"

#include <memory>
#include <set>
#include <unordered_map>

namespace tracery::analysis::sql {

namespace reader = ctf::reader;

namespace {

constexpr uint64_t kRowsPerTransaction = 1 << 20;

// What the export does with an event class, found once.
struct ClassInfo {
	bool kernel = false;
	KernelEvent k; // kernel: the event's kind and fields
	FieldRef cpu, pid, tid, procname;
	std::optional<int64_t> env_pid; // a per-process buffer's
	std::string_view env_procname;
};

ClassInfo class_info(const reader::Item &it)
{
	ClassInfo ci;
	const reader::TraceClass &tc = it.stream->trace().cls;
	ci.kernel = is_kernel_trace(tc);
	ci.cpu = find_context_field(it, "cpu_id");
	ci.pid = find_context_field(it, "vpid");
	if (!ci.pid)
		ci.pid = find_context_field(it, "pid");
	ci.tid = find_context_field(it, "vtid");
	if (!ci.tid)
		ci.tid = find_context_field(it, "tid");
	ci.procname = find_context_field(it, "procname");
	const EnvProcess env = env_process(tc);
	ci.env_pid = env.pid;
	ci.env_procname = env.procname;
	if (ci.kernel)
		ci.k = KernelEvent::of(it);
	return ci;
}

// A span's begin: where and who.
struct Begun {
	int64_t ns = 0;
	std::optional<int64_t> cpu, pid, tid;
};

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

struct SpanState {
	SpanEvents events;
	OpenSpans<std::string, Begun> open;
	std::string name; // "BEGIN to END"
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
	std::vector<std::unique_ptr<SpanState>> spans;
	for (const SpanOptions &o : options.spans)
		spans.push_back(std::make_unique<SpanState>(
			SpanState{SpanEvents(walk.set(), o), {}, o.begin + " to " + o.end}));

	EventTables tables(db, walk.set());
	std::optional<SymbolTable> symbols;
	if (options.symbols)
		symbols.emplace(db, *options.symbols);
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

	Stmt ins_stream(db, "INSERT INTO streams (id, trace, path, stream_class, instance) VALUES (?, ?, ?, ?, ?)");
	Stmt ins_lost(db, "INSERT INTO lost VALUES (?, ?, ?, ?, ?)");
	Stmt ins_slice(db, "INSERT INTO slices (ts, dur, kind, name, cpu, pid, tid, ret, span_key) VALUES "
	                   "(?, ?, ?, ?, ?, ?, ?, ?, ?)");
	Stmt ins_state(db, "INSERT INTO thread_state VALUES (?, ?, ?, ?, ?, ?)");

	Batches batches(db, kRowsPerTransaction);
	TaskTable tasks;
	SyscallPairs calls;
	std::unordered_map<const reader::Stream *, std::pair<int64_t, uint64_t>> streams; // id, events
	ThreadStates states([&](const ThreadStates::Interval &i) {
		ins_state.bind(1, i.ts);
		ins_state.bind(2, i.dur);
		ins_state.bind(3, i.tid);
		ins_state.bind_opt(4, tasks.pid(i.tid));
		ins_state.bind(5, std::string_view(ThreadStates::name(i.state)));
		ins_state.bind_opt(6, i.cpu);
		ins_state.run();
		batches.row();
	});
	const auto slice = [&](int64_t ts, int64_t end, std::string_view kind, std::string_view name, const Begun &who,
	                       std::optional<int64_t> ret, std::string_view key) {
		ins_slice.bind(1, ts);
		ins_slice.bind(2, end - ts);
		ins_slice.bind(3, kind);
		ins_slice.bind(4, name);
		ins_slice.bind_opt(5, who.cpu);
		ins_slice.bind_opt(6, who.pid);
		ins_slice.bind_opt(7, who.tid);
		ins_slice.bind_opt(8, ret);
		if (key.empty())
			ins_slice.bind_null(9);
		else
			ins_slice.bind(9, key);
		ins_slice.run();
		batches.row();
	};
	const reader::Stream *last_stream = nullptr;
	std::pair<int64_t, uint64_t> *last_entry = nullptr;
	const auto stream_id = [&](const reader::Stream *s) -> std::pair<int64_t, uint64_t> & {
		if (s == last_stream)
			return *last_entry;
		auto [where, added] = streams.try_emplace(s, static_cast<int64_t>(streams.size() + 1), 0);
		if (added) {
			std::string trace, path;
			append_utf8(trace, s->trace().name);
			append_utf8(path, s->name());
			ins_stream.bind(1, where->second.first);
			ins_stream.bind(2, std::string_view(trace));
			ins_stream.bind(3, std::string_view(path));
			ins_stream.bind(4, static_cast<int64_t>(s->class_id()));
			ins_stream.bind(5, static_cast<int64_t>(s->id()));
			ins_stream.run();
		}
		last_stream = s;
		last_entry = &where->second;
		return where->second;
	};

	ClassCache<ClassInfo> cache;
	uint64_t events = 0;
	TimeRange range;
	std::string key;
	while (const reader::Item *it = walk.next()) {
		auto &stream = stream_id(it->stream);
		if (it->kind != reader::ItemKind::event) {
			const bool ev = it->kind == reader::ItemKind::discarded_events;
			ins_lost.bind(1, stream.first);
			ins_lost.bind(2, it->ns);
			if (it->has_range)
				ins_lost.bind(3, it->end_ns);
			else
				ins_lost.bind_null(3);
			ins_lost.bind(4, static_cast<int64_t>(ev ? it->count : 0));
			ins_lost.bind(5, static_cast<int64_t>(ev ? 0 : it->count));
			ins_lost.run();
			continue;
		}
		++events;
		++stream.second;
		range.see(it->ns);
		const ClassInfo &c = cache.get(*it, [&] { return class_info(*it); });
		const auto cpu = int_field(*it, c.cpu);
		std::optional<int64_t> pid = int_field(*it, c.pid), tid = int_field(*it, c.tid);
		if (c.kernel) {
			if (!tid && cpu)
				tid = calls.running(*cpu);
			if (!pid && tid)
				pid = tasks.pid(*tid);
		} else {
			if (!pid)
				pid = c.env_pid;
			if (tid) {
				std::string_view procname = text_field(*it, c.procname);
				if (procname.empty())
					procname = c.env_procname;
				tasks.set(*tid, pid, procname);
			}
		}
		tables.insert(*it, cpu, pid, tid);
		batches.row();
		if (symbols)
			symbols->event(*it);

		for (auto &s : spans) {
			const SpanEvents::Fields &f = s->events.of(*it);
			if (f.kind == SpanEvents::Fields::other)
				continue;
			key = SpanEvents::key(*it, f);
			if (f.kind == SpanEvents::Fields::begin) {
				s->open.begin(key, Begun{it->ns, cpu, pid, tid});
			} else if (const auto b = s->open.end(key)) {
				std::string_view shown = key;
				if (!shown.empty() && shown[0] == '"')
					shown.remove_prefix(1);
				std::string text;
				append_utf8(text, shown);
				slice(b->ns, it->ns, "span", s->name, *b, std::nullopt, text);
			}
		}
		if (!c.kernel)
			continue;
		const KernelEvent &k = c.k;
		switch (k.kind) {
		case KernelEvent::sched_switch: {
			const auto prev = int_field(*it, k.prev_tid), next = int_field(*it, k.next_tid);
			if (cpu && next)
				calls.on_switch(*cpu, *next);
			if (cpu && prev && next)
				states.on_switch(it->ns, *cpu, *prev, int_field(*it, k.prev_state).value_or(0), *next);
			break;
		}
		case KernelEvent::sched_wake:
			if (const auto t = int_field(*it, k.tid))
				states.on_wakeup(it->ns, *t);
			break;
		case KernelEvent::process_exit:
			if (const auto t = int_field(*it, k.tid))
				states.on_exit(*t);
			break;
		case KernelEvent::syscall_entry:
			if (cpu)
				calls.on_entry(it->ns, *cpu, k.call, int_field(*it, c.tid));
			break;
		case KernelEvent::syscall_exit:
			if (cpu)
				if (const SyscallTracker::Call *call = calls.on_exit(*cpu, int_field(*it, c.tid)))
					slice(call->entry_ns, it->ns, "syscall", call->name,
					      Begun{call->entry_ns, call->cpu, tasks.pid(call->tid), call->tid},
					      int_field(*it, k.ret), {});
			break;
		default:
			break;
		}
		tasks.observe(*it, k);
	}
	states.finish(range.last);
	if (symbols)
		symbols->finish();

	Stmt up(db, "UPDATE streams SET events = ? WHERE id = ?");
	for (const auto &[s, v] : streams) {
		up.bind(1, static_cast<int64_t>(v.second));
		up.bind(2, v.first);
		up.run();
	}
	{
		Stmt ins(db, "INSERT INTO threads VALUES (?, ?, ?, ?, ?)");
		std::string name;
		for (const auto &[tid, t] : tasks.tasks()) {
			ins.bind(1, tid);
			ins.bind_opt(2, t.pid);
			name.clear();
			append_utf8(name, t.comm);
			ins.bind(3, std::string_view(name));
			ins.bind_opt(4, t.start_ns);
			ins.bind_opt(5, t.end_ns);
			ins.run();
		}
		Stmt insp(db, "INSERT INTO processes VALUES (?, ?, ?, ?, ?, ?)");
		for (const ProcessRow &p : processes_of(tasks)) {
			insp.bind(1, p.pid);
			insp.bind_opt(2, p.ppid);
			name.clear();
			append_utf8(name, p.name);
			insp.bind(3, std::string_view(name));
			insp.bind_opt(4, p.start_ns);
			insp.bind_opt(5, p.end_ns);
			insp.bind(6, p.threads);
			insp.run();
		}
	}
	tables.finish();
	batches.finish();
	return events;
}

} // namespace tracery::analysis::sql
