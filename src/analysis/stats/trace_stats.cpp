// analysis/stats/trace_stats.cpp — counting events per name, CPU, process and the
// losses per stream (see trace_stats.hpp).
#include "analysis/stats/trace_stats.hpp"

#include "analysis/model/kernel_events.hpp"
#include "analysis/model/scheduling.hpp"
#include "analysis/model/symbol_events.hpp"
#include "analysis/model/tasks.hpp"
#include "analysis/model/trace_env.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace tracery::analysis {

namespace reader = ctf::reader;

namespace {

// Events counted: how many, their bytes, and for event names the time of
// the first and the last in the order of the merge (seq: their places in it,
// Item::seq), which counted runs of several streams are combined by.
struct Count {
	uint64_t events = 0, bits = 0;
	uint64_t first_seq = 0, last_seq = 0;
	int64_t first = 0, last = 0;
	void add(uint64_t n, uint64_t b)
	{
		events += n;
		bits += b;
	}
	void add(uint64_t n, uint64_t b, uint64_t fseq, int64_t fns, uint64_t lseq, int64_t lns)
	{
		if (!events || fseq < first_seq) {
			first_seq = fseq;
			first = fns;
		}
		if (!events || lseq > last_seq) {
			last_seq = lseq;
			last = lns;
		}
		add(n, b);
	}
	void add(const reader::Item &it) { add(1, it.bits, it.seq, it.ns, it.seq, it.ns); }
};

// A kernel trace's system call of one name: its entries and exits paired
// per thread (one call each), and those left unpaired.
struct SyscallCounts {
	Count calls, entries_only, exits_only;
};

// A thread's system call entered and not yet exited.
struct OpenCall {
	SyscallCounts *call = nullptr;
	uint64_t bits = 0, seq = 0;
	int64_t ns = 0;
	bool counted = false; // within the narrowing
	void unpaired() const
	{
		if (counted)
			call->entries_only.add(1, bits, seq, ns, seq, ns);
	}
};

struct Loss {
	uint64_t events = 0, packets = 0;
};

// Where the CPU and the process of an event are: per event class, or per
// stream for its counted runs (only in its packet context or its trace's env).
struct Source {
	FieldRef cpu, pid, procname;
	FieldRef tid;                   // kernel events: their tid context (add-context -k -t tid)
	std::optional<int64_t> env_pid; // a per-process buffer's vpid
	std::string_view env_procname;
	bool kernel = false;
};

// What one event class needs, found once.
struct ClassInfo : Source {
	Count *name = nullptr;
	KernelEvent task_event; // other unless is_task_event: for TaskTable and the CPU's task
	FieldRef vtid;          // user events: their thread, for --tid
	// a kernel trace's syscall_entry_NAME and syscall_exit_NAME: their
	// name's counts (not name's); entry: which of the two
	SyscallCounts *syscall = nullptr;
	bool entry = false;
};

// A map's entry for a key, the last key's found again without a lookup
// (events come in runs of one CPU, one process). The map only grows.
template <class Map>
class LastEntry {
public:
	explicit LastEntry(Map &map) : map_(map) {}
	typename Map::mapped_type &operator[](const typename Map::key_type &key)
	{
		if (!last_ || key != key_) {
			last_ = &map_[key];
			key_ = key;
		}
		return *last_;
	}

private:
	Map &map_;
	typename Map::key_type key_{};
	typename Map::mapped_type *last_ = nullptr;
};

// An event class whose payload tells which task runs or exists.
bool is_task_event(const reader::TraceClass &tc, const std::string &name)
{
	if (!is_kernel_trace(tc))
		return false;
	const KernelEvent::Kind k = KernelEvent::kind_of(name);
	return k == KernelEvent::sched_switch || k == KernelEvent::process_fork || k == KernelEvent::process_statedump;
}

// A kernel trace's syscall_entry_NAME or syscall_exit_NAME.
bool is_syscall_event(const reader::TraceClass &tc, const std::string &name)
{
	const KernelEvent::Kind k = KernelEvent::kind_of(name);
	return (k == KernelEvent::syscall_entry || k == KernelEvent::syscall_exit) && is_kernel_trace(tc);
}

// The source's trace-wide part: its env and domain.
void from_env(const reader::TraceClass &tc, Source &s)
{
	const EnvProcess env = env_process(tc);
	s.env_pid = env.pid;
	s.env_procname = env.procname;
	s.kernel = is_kernel_trace(tc);
}

} // namespace

bool stats_reads_fields(const reader::Trace &trace, const reader::EventClass &cls)
{
	return is_task_event(trace.cls, cls.name);
}

bool stats_counts(const reader::Trace &trace, const reader::TracePlans::StreamPlans &stream,
                  const reader::TracePlans::EventPlans &event)
{
	using S = reader::Scope;
	for (const char *name : {"cpu_id", "vpid", "pid", "procname"})
		if (find_member(scope_root(stream, &event, S::event_context), name) ||
		    find_member(scope_root(stream, &event, S::stream_event_context), name))
			return false;
	if (is_syscall_event(trace.cls, event.cls->name) &&
	    (trace.cls.streams.size() != 1 || find_member(scope_root(stream, &event, S::event_context), "tid") ||
	     find_member(scope_root(stream, &event, S::stream_event_context), "tid")))
		return false;
	return !find_member(scope_root(stream, &event, S::packet_context), "procname") &&
	       !is_task_event(trace.cls, event.cls->name);
}

bool stats_notes(const reader::Trace &trace, const reader::TracePlans::StreamPlans &,
                 const reader::TracePlans::EventPlans &event)
{
	return is_syscall_event(trace.cls, event.cls->name);
}

bool stats_reads_fields_with_symbols(const reader::Trace &trace, const reader::EventClass &cls)
{
	return stats_reads_fields(trace, cls) || symbol_events_fields(cls.name);
}

bool stats_counts_with_symbols(const reader::Trace &trace, const reader::TracePlans::StreamPlans &stream,
                               const reader::TracePlans::EventPlans &event)
{
	using S = reader::Scope;
	return stats_counts(trace, stream, event) && !symbol_events_fields(event.cls->name) &&
	       !find_member(scope_root(stream, &event, S::event_context), "ip") &&
	       !find_member(scope_root(stream, &event, S::stream_event_context), "ip");
}

namespace {
constexpr size_t kMaxFunctions = 1 << 16; // rows of per_function
} // namespace

Report trace_stats(EventWalk &walk, const std::optional<SymbolOptions> &symbol_options, Narrowing narrowing)
{
	std::optional<SymbolEvents> symbols;
	if (symbol_options)
		symbols.emplace(*symbol_options);
	std::map<std::string, uint64_t> functions; // with symbols: events per function
	uint64_t functions_not_kept = 0;
	std::map<std::string, Count> names;
	std::map<std::string, SyscallCounts> syscalls;    // by the call's name
	std::unordered_map<int64_t, OpenCall> open_calls; // by thread (or CPU)
	std::map<int64_t, Count> cpus;
	std::unordered_map<int64_t, Count> processes;
	std::unordered_map<int64_t, std::string> process_names; // the last procname context of each
	// else the env procname of its first event (seq)
	std::unordered_map<int64_t, std::pair<uint64_t, std::string_view>> env_names;
	std::map<std::pair<std::string, std::string>, Loss> losses; // (trace, stream file)
	RunningTasks running;                                       // kernel
	std::optional<int64_t> running_pid;                         // the process of running[running_pid_cpu]
	int64_t running_pid_cpu = 0;
	bool running_pid_known = false;
	LastEntry cpu_count(cpus);
	LastEntry process_count(processes);
	LastEntry process_name(process_names);
	TaskTable tasks;
	ClassCache<ClassInfo> cache;
	std::vector<std::optional<Source>> stream_sources(walk.set().streams()); // of counted runs
	// of noted runs: by stream, by class index, a system call's counts (null: none) and whether an entry
	std::vector<std::vector<std::pair<SyscallCounts *, bool>>> stream_syscalls(walk.set().streams());
	Count total;
	// The process of the item (an event or a counted run) on its CPU.
	const auto process_of = [&](const reader::Item &it, const Source &c,
	                            std::optional<int64_t> cpu) -> std::optional<int64_t> {
		if (const auto pid = int_field(it, c.pid))
			return pid;
		if (c.env_pid)
			return c.env_pid;
		if (const auto tid = int_field(it, c.tid)) // its process, else itself
			return tasks.pid(*tid).value_or(*tid);
		if (!c.kernel || !cpu)
			return std::nullopt;
		// the process of the task running on the CPU, found again only
		// after a task event (which may change either) or on another CPU
		if (!running_pid_known || *cpu != running_pid_cpu) {
			running_pid.reset();
			if (const auto r = running.running(*cpu))
				running_pid = tasks.pid(*r).value_or(*r);
			running_pid_cpu = *cpu;
			running_pid_known = true;
		}
		return running_pid;
	};
	// Whether an event is of the narrowing's time, CPU, thread and process.
	const auto narrowed_in = [&](const reader::Item &it, const ClassInfo &c) {
		narrowing.first_event(it.ns);
		const auto cpu = int_field(it, c.cpu);
		if (!narrowing.time_in(it.ns) || !narrowing.cpu_in(cpu))
			return false;
		if (!narrowing.options().by_task())
			return true;
		std::optional<int64_t> tid = int_field(it, c.kernel ? c.tid : c.vtid);
		if (!tid && c.kernel && cpu)
			tid = running.running(*cpu);
		const auto pid = process_of(it, c, cpu);
		std::string procname(text_field(it, c.procname));
		if (procname.empty())
			procname = !c.env_procname.empty() ? std::string(c.env_procname)
			           : tid                   ? tasks.comm(*tid)
			           : pid                   ? tasks.comm(*pid)
			                                   : std::string();
		return narrowing.task_in(tid, pid, procname);
	};
	// n events (bits) of the item (an event or a counted run) on their CPU
	// and process, from the first's place seq on.
	const auto attribute = [&](const reader::Item &it, const Source &c, uint64_t n, uint64_t bits, uint64_t seq) {
		const auto cpu = int_field(it, c.cpu);
		if (cpu)
			cpu_count[*cpu].add(n, bits);
		const std::optional<int64_t> pid = process_of(it, c, cpu);
		if (!pid)
			return;
		process_count[*pid].add(n, bits);
		if (const auto name = text_field(it, c.procname); !name.empty()) {
			if (std::string &known = process_name[*pid]; known != name)
				known = name;
		} else if (!c.env_procname.empty()) {
			if (const auto [e, added] = env_names.try_emplace(*pid, seq, c.env_procname);
			    !added && seq < e->second.first)
				e->second = {seq, c.env_procname};
		}
	};
	// The system calls of a counted run (Item::noted), all of the thread
	// running on its CPU (or of the CPU), paired in their order; its call
	// open looked up once.
	const auto pair_run = [&](const reader::Item &it, const Source &c,
	                          std::vector<std::pair<SyscallCounts *, bool>> &classes) {
		const reader::Stream &s = *it.stream;
		if (classes.empty()) {
			classes.resize(s.event_classes());
			for (size_t k = 0; k < classes.size(); ++k)
				if (const std::string &name = s.event_class(k).name;
				    is_syscall_event(s.trace().cls, name)) {
					const KernelEvent::Kind kind = KernelEvent::kind_of(name);
					const std::string_view prefix =
						kind == KernelEvent::syscall_entry ? "syscall_entry_" : "syscall_exit_";
					classes[k] = {&syscalls[name.substr(prefix.size())],
					              kind == KernelEvent::syscall_entry};
				}
		}
		std::optional<int64_t> tid;
		if (const auto cpu = int_field(it, c.cpu)) {
			tid = running.running(*cpu);
			if (!tid)
				tid = -1 - *cpu;
		}
		const auto found = tid ? open_calls.find(*tid) : open_calls.end();
		std::optional<OpenCall> open;
		if (found != open_calls.end())
			open = found->second;
		for (const reader::NotedEvent &e : it.noted) {
			const auto [call, entry] = classes[e.cls];
			const int64_t ns = s.clock().ns(e.cycles);
			if (entry && tid) {
				// an entry while a call is open: that one never returned
				if (open)
					open->unpaired();
				open = OpenCall{call, e.bits, e.seq, ns, true};
			} else if (entry) {
				call->entries_only.add(1, e.bits, e.seq, ns, e.seq, ns);
			} else if (open) {
				open->call->calls.add(1, open->bits + e.bits, open->seq, open->ns, e.seq, ns);
				open.reset();
			} else {
				call->exits_only.add(1, e.bits, e.seq, ns, e.seq, ns);
			}
		}
		if (open)
			open_calls.insert_or_assign(*tid, *open);
		else if (found != open_calls.end())
			open_calls.erase(found);
	};
	while (const reader::Item *it = walk.next()) {
		if (it->kind == reader::ItemKind::counted) {
			std::optional<Source> &source = stream_sources[it->stream->index()];
			if (!source) {
				const reader::FieldDecl packet = scope_root(*it, reader::Scope::packet_context);
				source.emplace();
				source->cpu = find_member(packet, "cpu_id");
				source->pid = find_member(packet, "vpid");
				if (!source->pid)
					source->pid = find_member(packet, "pid");
				from_env(it->stream->trace().cls, *source);
			}
			attribute(*it, *source, it->count, it->bits, it->seq);
			if (!it->noted.empty())
				pair_run(*it, *source, stream_syscalls[it->stream->index()]);
			continue;
		}
		if (it->kind != reader::ItemKind::event) {
			Loss &l = losses[{it->stream->trace().name, it->stream->name()}];
			(it->kind == reader::ItemKind::discarded_events ? l.events : l.packets) += it->count;
			continue;
		}
		const ClassInfo &c = cache.get(*it, [&] {
			ClassInfo ci;
			const std::string &name = it->event->cls->name;
			const reader::TraceClass &tc = it->stream->trace().cls;
			if (is_syscall_event(tc, name)) {
				const KernelEvent k = KernelEvent::of(*it);
				ci.syscall = &syscalls[std::string(k.call)];
				ci.entry = k.kind == KernelEvent::syscall_entry;
			} else {
				ci.name = &names[name];
			}
			ci.cpu = find_context_field(*it, "cpu_id");
			ci.pid = find_context_field(*it, "vpid");
			if (!ci.pid)
				ci.pid = find_context_field(*it, "pid");
			ci.procname = find_context_field(*it, "procname");
			from_env(tc, ci);
			if (ci.kernel)
				ci.tid = find_context_field(*it, "tid");
			else
				ci.vtid = find_context_field(*it, "vtid");
			if (is_task_event(tc, name)) {
				ci.task_event = KernelEvent::of(*it);
				ci.pid = {}; // fields of another task
			}
			return ci;
		});
		const bool counted = !narrowing.narrows() || narrowed_in(*it, c);
		if (counted) {
			total.add(*it);
			if (c.name)
				c.name->add(*it);
			attribute(*it, c, 1, it->bits, it->seq);
		}
		if (c.syscall) {
			// the thread: its tid context, else the task running on its CPU, else
			// (no sched_switch yet) the CPU itself, as -1 - CPU: no thread's id
			std::optional<int64_t> tid = int_field(*it, c.tid);
			if (const auto cpu = int_field(*it, c.cpu); !tid && cpu) {
				tid = running.running(*cpu);
				if (!tid)
					tid = -1 - *cpu;
			}
			if (c.entry && tid) {
				// an entry while a call is open: that one never returned
				auto [open, added] = open_calls.try_emplace(*tid);
				if (!added)
					open->second.unpaired();
				open->second = {c.syscall, it->bits, it->seq, it->ns, counted};
			} else if (c.entry) {
				if (counted)
					c.syscall->entries_only.add(*it);
			} else if (const auto open = tid ? open_calls.find(*tid) : open_calls.end();
			           open != open_calls.end()) {
				// one call, under its entry's name, counted where it ends
				const OpenCall &o = open->second;
				if (counted)
					o.call->calls.add(1, o.bits + it->bits, o.seq, o.ns, it->seq, it->ns);
				open_calls.erase(open);
			} else if (counted) {
				c.syscall->exits_only.add(*it);
			}
		}
		if (c.task_event.kind != KernelEvent::other) {
			running_pid_known = false;
			tasks.observe(*it, c.task_event);
			const auto cpu = int_field(*it, c.cpu);
			if (const auto next = int_field(*it, c.task_event.next_tid); next && cpu)
				running.on_switch(*cpu, *next);
		}
		if (symbols) {
			symbols->observe(*it);
			if (counted)
				symbols->for_each_address_field(*it, [&](std::string_view field, const FieldRef &ref) {
					if (field == "call_site")
						return;
					const Symbol *s = symbols->at(*it, ref);
					std::string where = "unknown";
					if (s && !s->path.empty())
						where = s->function.empty()
						                ? std::string(file_name_of(s->path)) +
						                          " (no function name)"
						                : s->function + " in " +
						                          std::string(file_name_of(s->path));
					if (auto f = functions.find(where); f != functions.end())
						++f->second;
					else if (functions.size() < kMaxFunctions)
						functions.emplace(std::move(where), 1);
					else
						++functions_not_kept;
				});
		}
	}
	// the counted events' names and times
	for (size_t i = 0; i < walk.set().streams(); ++i) {
		const reader::Stream &s = walk.set().stream(i);
		const std::vector<reader::Stream::Tally> &tallies = s.tallies();
		for (size_t k = 0; k < tallies.size(); ++k) {
			const reader::Stream::Tally &t = tallies[k];
			if (!t.events)
				continue;
			const int64_t first = s.clock().ns(t.first_cycles), last = s.clock().ns(t.last_cycles);
			if (!is_syscall_event(s.trace().cls, s.event_class(k).name)) // paired
				names[s.event_class(k).name].add(t.events, t.bits, t.first_seq, first, t.last_seq,
				                                 last);
			total.add(t.events, t.bits, t.first_seq, first, t.last_seq, last);
		}
	}
	// the system calls: one row per name, and for the unpaired entries and exits
	for (const auto &[tid, open] : open_calls)
		open.unpaired();
	for (const auto &[call, counts] : syscalls)
		for (const auto &[count, suffix] :
		     {std::pair{&counts.calls, ""}, std::pair{&counts.entries_only, " (entry without exit)"},
		      std::pair{&counts.exits_only, " (exit without entry)"}})
			if (count->events)
				names.emplace("syscall " + call + suffix, *count);
	for (const auto &[pid, e] : env_names)
		process_names.try_emplace(pid, e.second);

	Report r;
	r.kind = "stats";
	r.has_range = total.events > 0;
	r.begin_ns = total.first;
	r.end_ns = total.last;
	const double seconds = static_cast<double>(total.last - total.first) / 1e9;
	const auto rate = [&](const Count &c) {
		return cell_of(seconds > 0 ? std::optional<double>(static_cast<double>(c.events) / seconds)
		                           : std::nullopt);
	};
	const auto bytes = [](const Count &c) { return static_cast<int64_t>(c.bits / 8); };
	const std::vector<Column> counts = {{"count", "Count", Format::integer},
	                                    {"rate", "Rate (/s)", Format::rate},
	                                    {"bytes", "Bytes", Format::integer}};
	const auto row = [&](std::vector<Cell> head, const Count &c) {
		head.insert(head.end(), {static_cast<int64_t>(c.events), rate(c), bytes(c)});
		return head;
	};
	const auto by_count = [](auto &v) {
		std::stable_sort(v.begin(), v.end(),
		                 [](const auto &a, const auto &b) { return a.second->events > b.second->events; });
	};

	Table &tt = r.tables.emplace_back();
	tt.key = "total";
	tt.title = "All events";
	tt.columns = counts;
	tt.columns.insert(tt.columns.begin() + 1, {"streams", "Streams", Format::integer});
	tt.rows.push_back(row({}, total));
	tt.rows.back().insert(tt.rows.back().begin() + 1, static_cast<int64_t>(walk.set().streams()));

	Table &nt = r.add("per_event", "Per event name", {{"name", "Event", Format::text}});
	nt.top_by = "count";
	nt.columns.insert(nt.columns.end(), counts.begin(), counts.end());
	nt.columns.push_back({"first_ns", "First", Format::time});
	nt.columns.push_back({"last_ns", "Last", Format::time});
	std::vector<std::pair<std::string, const Count *>> nv;
	for (const auto &[name, c] : names)
		if (c.events)
			nv.emplace_back(name, &c);
	by_count(nv);
	for (const auto &[name, c] : nv) {
		nt.rows.push_back(row({name}, *c));
		nt.rows.back().insert(nt.rows.back().end(), {c->first, c->last});
	}

	Table &pt = r.add("per_process", "Per process",
	                  {{"pid", "PID", Format::integer}, {"procname", "Name", Format::text}});
	pt.columns.insert(pt.columns.end(), counts.begin(), counts.end());
	pt.top_by = "count";
	std::vector<std::pair<int64_t, const Count *>> pv;
	for (const auto &[pid, c] : processes)
		pv.emplace_back(pid, &c);
	std::sort(pv.begin(), pv.end());
	by_count(pv);
	for (const auto &[pid, c] : pv) {
		const auto n = process_names.find(pid);
		pt.rows.push_back(row({pid, n != process_names.end() ? n->second : tasks.comm(pid)}, *c));
	}

	Table &ct = r.add("per_cpu", "Per CPU", {{"cpu", "CPU", Format::integer}});
	ct.columns.insert(ct.columns.end(), counts.begin(), counts.end());
	ct.top_by = "count";
	for (const auto &[cpu, c] : cpus)
		ct.rows.push_back(row({cpu}, c));

	Table &lt = r.add("lost", "Lost events per stream",
	                  {{"trace", "Trace", Format::text},
	                   {"stream", "Stream", Format::text},
	                   {"discarded_events", "Events", Format::integer},
	                   {"discarded_packets", "Packets", Format::integer}});
	for (const auto &[s, l] : losses)
		lt.rows.push_back({s.first, s.second, static_cast<int64_t>(l.events), static_cast<int64_t>(l.packets)});
	if (losses.empty())
		r.notes.push_back("No stream lost events.");
	if (symbols) {
		Table &ft = r.add("per_function", "Per function (ip context, function entry address)",
		                  {{"function", "Function", Format::text}, {"count", "Count", Format::integer}});
		ft.top_by = "count";
		std::vector<std::pair<std::string, uint64_t>> fv(functions.begin(), functions.end());
		std::stable_sort(fv.begin(), fv.end(),
		                 [](const auto &a, const auto &b) { return a.second > b.second; });
		for (const auto &[name, n] : fv)
			ft.rows.push_back({name, static_cast<int64_t>(n)});
		if (functions_not_kept)
			r.notes.push_back(std::to_string(functions_not_kept) + " events of functions past the first " +
			                  std::to_string(kMaxFunctions) + " are not in per_function.");
		symbols->resolver().report(stderr);
	}
	return r;
}

} // namespace tracery::analysis
