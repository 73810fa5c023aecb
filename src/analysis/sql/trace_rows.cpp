// analysis/sql/trace_rows.cpp — the walk that works out the SQL schema's rows
// (see trace_rows.hpp).
#include "analysis/sql/trace_rows.hpp"

#include "analysis/model/kernel_events.hpp"
#include "analysis/model/syscalls.hpp"
#include "analysis/model/tasks.hpp"
#include "analysis/model/trace_env.hpp"
#include "analysis/output/json_text.hpp"

#include <algorithm>
#include <memory>
#include <unordered_map>

namespace tracery::analysis::sql {

namespace reader = ctf::reader;

namespace {

// What the walk does with an event class, found once.
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

struct SpanState {
	SpanEvents events;
	OpenSpans<std::string, Begun> open;
	std::string name; // "BEGIN to END"
};

// A stream seen: its row's id and its events.
struct StreamSeen {
	int64_t id = 0;
	uint64_t events = 0;
	std::string trace, path;
	int64_t stream_class = 0, instance = 0;
};

} // namespace

struct RowWalker::State {
	State(const reader::TraceSet &set, const std::vector<SpanOptions> &span_options, RowSink &sink, bool ordered)
		: sink(sink), ordered(ordered), states([this](const ThreadStates::Interval &i) {
			  this->sink.thread_state(ThreadStateRow{i.ts, i.dur, i.tid, tasks.pid(i.tid),
		                                                 ThreadStates::name(i.state), i.cpu});
		  })
	{
		if (ordered)
			for (const SpanOptions &o : span_options)
				spans.push_back(std::make_unique<SpanState>(
					SpanState{SpanEvents(set, o), {}, o.begin + " to " + o.end}));
	}

	void slice(int64_t ts, int64_t end, std::string_view kind, std::string_view name, const Begun &who,
	           std::optional<int64_t> ret, std::string_view key)
	{
		sink.slice(SliceRow{++slices, ts, end - ts, kind, name, who.cpu, who.pid, who.tid, ret, key});
	}
	StreamSeen &stream_seen(const reader::Stream *s)
	{
		if (s == last_stream)
			return *last_entry;
		auto [where, added] = streams.try_emplace(s);
		if (added) {
			StreamSeen &seen = where->second;
			seen.id = static_cast<int64_t>(streams.size());
			append_utf8(seen.trace, s->trace().name);
			append_utf8(seen.path, s->name());
			seen.stream_class = static_cast<int64_t>(s->class_id());
			seen.instance = static_cast<int64_t>(s->id());
		}
		last_stream = s;
		last_entry = &where->second;
		return where->second;
	}
	void item(const reader::Item &it);
	void spans_of(const reader::Item &it, const Begun &who);
	void kernel(const reader::Item &it, const ClassInfo &c, std::optional<int64_t> cpu);
	void finish();

	RowSink &sink;
	const bool ordered;
	std::vector<std::unique_ptr<SpanState>> spans;
	TaskTable tasks;
	SyscallPairs calls;
	std::unordered_map<const reader::Stream *, StreamSeen> streams;
	ThreadStates states;
	int64_t slices = 0;
	const reader::Stream *last_stream = nullptr;
	StreamSeen *last_entry = nullptr;
	ClassCache<ClassInfo> cache;
	uint64_t events = 0;
	TimeRange range;
	std::string key, shown_key;
};

void RowWalker::State::item(const reader::Item &it)
{
	StreamSeen &stream = stream_seen(it.stream);
	if (it.kind != reader::ItemKind::event) {
		const bool ev = it.kind == reader::ItemKind::discarded_events;
		sink.lost(LostRow{stream.id, it.ns, it.has_range ? std::optional<int64_t>(it.end_ns) : std::nullopt,
		                  static_cast<int64_t>(ev ? it.count : 0), static_cast<int64_t>(ev ? 0 : it.count)});
		return;
	}
	++events;
	++stream.events;
	range.see(it.ns);
	const ClassInfo &c = cache.get(it, [&] { return class_info(it); });
	const auto cpu = int_field(it, c.cpu);
	std::optional<int64_t> pid = int_field(it, c.pid), tid = int_field(it, c.tid);
	if (c.kernel) {
		if (!tid && cpu)
			tid = calls.running(*cpu);
		if (!pid && tid)
			pid = tasks.pid(*tid);
	} else {
		if (!pid)
			pid = c.env_pid;
		if (tid) {
			std::string_view procname = text_field(it, c.procname);
			if (procname.empty())
				procname = c.env_procname;
			tasks.set(*tid, pid, procname);
		}
	}
	sink.event(it, cpu, pid, tid);
	if (!spans.empty())
		spans_of(it, Begun{it.ns, cpu, pid, tid});
	if (c.kernel)
		kernel(it, c, cpu);
}

void RowWalker::State::spans_of(const reader::Item &it, const Begun &who)
{
	for (auto &s : spans) {
		const SpanEvents::Fields &f = s->events.of(it);
		if (f.kind == SpanEvents::Fields::other)
			continue;
		key = SpanEvents::key(it, f);
		if (f.kind == SpanEvents::Fields::begin) {
			s->open.begin(key, who);
		} else if (const auto b = s->open.end(key)) {
			std::string_view shown = key;
			if (!shown.empty() && shown[0] == '"')
				shown.remove_prefix(1);
			shown_key.clear();
			append_utf8(shown_key, shown);
			slice(b->ns, it.ns, "span", s->name, *b, std::nullopt, shown_key);
		}
	}
}

// A kernel event's part in the model: the thread each cpu runs, the tasks,
// and when ordered, the system calls paired and the thread states.
void RowWalker::State::kernel(const reader::Item &it, const ClassInfo &c, std::optional<int64_t> cpu)
{
	const KernelEvent &k = c.k;
	switch (k.kind) {
	case KernelEvent::sched_switch: {
		const auto prev = int_field(it, k.prev_tid), next = int_field(it, k.next_tid);
		if (cpu && next)
			calls.on_switch(*cpu, *next);
		if (ordered && cpu && prev && next)
			states.on_switch(it.ns, *cpu, *prev, int_field(it, k.prev_state).value_or(0), *next);
		break;
	}
	case KernelEvent::sched_wake:
		if (ordered)
			if (const auto t = int_field(it, k.tid))
				states.on_wakeup(it.ns, *t);
		break;
	case KernelEvent::process_exit:
		if (ordered)
			if (const auto t = int_field(it, k.tid))
				states.on_exit(*t);
		break;
	case KernelEvent::syscall_entry:
		if (ordered && cpu)
			calls.on_entry(it.ns, *cpu, k.call, int_field(it, c.tid));
		break;
	case KernelEvent::syscall_exit:
		if (ordered && cpu)
			if (const SyscallTracker::Call *call = calls.on_exit(*cpu, int_field(it, c.tid)))
				slice(call->entry_ns, it.ns, "syscall", call->name,
				      Begun{call->entry_ns, call->cpu, tasks.pid(call->tid), call->tid},
				      int_field(it, k.ret), {});
		break;
	default:
		break;
	}
	tasks.observe(it, k);
}

void RowWalker::State::finish()
{
	if (ordered)
		states.finish(range.last);
	std::vector<const StreamSeen *> by_id;
	for (const auto &[s, seen] : streams)
		by_id.push_back(&seen);
	std::sort(by_id.begin(), by_id.end(), [](const StreamSeen *a, const StreamSeen *b) { return a->id < b->id; });
	for (const StreamSeen *s : by_id)
		sink.stream(StreamRow{s->id, s->trace, s->path, s->stream_class, s->instance, s->events});
	if (!ordered)
		return;
	std::string name;
	for (const auto &[tid, t] : tasks.tasks()) {
		name.clear();
		append_utf8(name, t.comm);
		sink.thread(ThreadRow{tid, t.pid, name, t.start_ns, t.end_ns});
	}
	for (ProcessRow &p : processes_of(tasks)) {
		name.clear();
		append_utf8(name, p.name);
		p.name = name;
		sink.process(p);
	}
}

RowWalker::RowWalker(const reader::TraceSet &set, const std::vector<SpanOptions> &spans, RowSink &sink, bool ordered)
	: s_(std::make_unique<State>(set, spans, sink, ordered))
{
}
RowWalker::~RowWalker() = default;
void RowWalker::item(const reader::Item &it) { s_->item(it); }
void RowWalker::finish() { s_->finish(); }
uint64_t RowWalker::events() const { return s_->events; }

uint64_t walk_rows(EventWalk &walk, const std::vector<SpanOptions> &spans, RowSink &sink)
{
	RowWalker rows(walk.set(), spans, sink);
	while (const reader::Item *it = walk.next())
		rows.item(*it);
	rows.finish();
	return rows.events();
}

} // namespace tracery::analysis::sql
