// analysis/export/export_model.cpp — the events of traces as tracks, slices,
// instants, counters and scheduler events for the exports (see
// export_model.hpp).
#include "analysis/export/export_model.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

#include "analysis/output/json_text.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::Op;
using reader::OpKind;
using reader::Plan;
using reader::Value;

void ExportOptions::add_span(const std::string &spec)
{
	const size_t comma = spec.find(',');
	if (comma == std::string::npos || comma == 0 || comma + 1 == spec.size() ||
	    spec.find(',', comma + 1) != std::string::npos)
		throw std::invalid_argument("--span '" + spec +
		                            "': give the event that begins a span and the one that ends it, "
		                            "e.g. --span app:req_begin,app:req_end");
	Span s{spec.substr(0, comma), spec.substr(comma + 1)};
	if (s.begin == s.end)
		throw std::invalid_argument("--span '" + spec + "': the begin and the end event must differ");
	spans.push_back(std::move(s));
}

void ExportOptions::add_counter(const std::string &spec)
{
	const size_t colon = spec.rfind(':');
	if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
		throw std::invalid_argument("--counter '" + spec +
		                            "': give an event and one of its fields, e.g. --counter app:tick:depth");
	counters.push_back({spec.substr(0, colon), spec.substr(colon + 1)});
}

void write_all(int fd, const void *p, size_t n, const std::string &what)
{
	const auto *b = static_cast<const uint8_t *>(p);
	while (n) {
		const ssize_t w = ::write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			throw std::runtime_error("cannot write " + what + ": " + strerror(errno));
		}
		b += w;
		n -= static_cast<size_t>(w);
	}
}

uint32_t NameTable::id(std::string_view name)
{
	if (const auto it = ids_.find(name); it != ids_.end())
		return it->second;
	const auto id = static_cast<uint32_t>(names_.size());
	const std::string &s = names_.emplace_back(name);
	ids_.emplace(s, id);
	return id;
}

namespace {

bool is_integer(OpKind k)
{
	return k == OpKind::u8 || k == OpKind::u16 || k == OpKind::u32 || k == OpKind::u64 || k == OpKind::integer;
}

} // namespace

FieldValue field_value_of(const reader::Item &event, const ShownField &field, std::string &scratch)
{
	FieldValue r;
	r.type = field.type;
	const Value *v;
	if (field.ref.index >= 0) { // at a fixed index: the common case, without a call
		const std::span<const Value> values = values_of(event, field.ref.scope);
		const auto i = static_cast<size_t>(field.ref.index);
		v = i < values.size() ? &values[i] : nullptr;
	} else {
		v = field_value(event, field.ref);
	}
	if (!v) {
		r.type = ShownField::text;
		return r;
	}
	switch (field.type) {
	case ShownField::i64:
		r.i = v->i;
		break;
	case ShownField::u64:
		r.u = v->u;
		break;
	case ShownField::f64:
		r.f = v->f;
		break;
	case ShownField::text:
		r.s = {v->s, static_cast<size_t>(v->n)};
		break;
	case ShownField::enumeration: {
		const Op &op = plan_of(event, field.ref.scope).ops[field.ref.op];
		scratch.clear();
		reader::for_each_enum_label(*op.type, v->u, [&](const std::string &label) {
			if (!scratch.empty())
				scratch += ',';
			scratch += label;
		});
		if (scratch.empty())
			scratch = op.is_signed ? std::to_string(v->i) : std::to_string(v->u);
		r.s = scratch;
		break;
	}
	case ShownField::compound: {
		const Plan &plan = plan_of(event, field.ref.scope);
		const std::span<const Value> values = values_of(event, field.ref.scope);
		scratch.clear();
		append_json_value(scratch, plan, field.ref.op, values, static_cast<size_t>(v - values.data()));
		r.s = scratch;
		break;
	}
	}
	return r;
}

namespace {

constexpr uint64_t kIdMask = (uint64_t{1} << 48) - 1;
uint64_t uuid_of(TrackKind kind, int64_t id)
{
	return (uint64_t{static_cast<uint8_t>(kind)} << 56) | (static_cast<uint64_t>(id) & kIdMask);
}

// Identity contexts, shown as tracks rather than as fields.
bool identity_field(std::string_view name)
{
	return name == "vpid" || name == "vtid" || name == "procname" || name == "pid" || name == "tid" ||
	       name == "cpu_id";
}

// The members of a scope's plan worth showing, with their types.
void shown_fields(const reader::Item &it, reader::Scope scope, NameTable &names, std::vector<ShownField> &out)
{
	const Plan &plan = plan_of(it, scope);
	if (plan.empty() || plan.ops[0].kind != OpKind::structure)
		return;
	uint32_t c = 1;
	for (uint32_t k = 0; k < plan.ops[0].count; ++k) {
		const Op &m = plan.ops[c];
		if (m.name && m.shown) {
			std::string_view n = *m.name;
			if (!n.empty() && n[0] == '_')
				n.remove_prefix(1);
			if (scope == reader::Scope::payload || !identity_field(n)) {
				ShownField f;
				f.name = names.id(n);
				f.ref = find_field(it, n);
				if (f.ref.scope != scope ||
				    f.ref.op != c) // a payload field of that name wins: skip the context's
					f.ref = {};
				if (f.ref) {
					if (m.type && m.type->kind == reader::TypeKind::enumeration)
						f.type = ShownField::enumeration;
					else if (is_integer(m.kind))
						f.type = m.is_signed ? ShownField::i64 : ShownField::u64;
					else if (m.kind == OpKind::float32 || m.kind == OpKind::float64)
						f.type = ShownField::f64;
					else if (m.kind == OpKind::string || m.kind == OpKind::text_array ||
					         m.kind == OpKind::text_sequence)
						f.type = ShownField::text;
					else
						f.type = ShownField::compound;
					out.push_back(f);
				}
			}
		}
		c = m.next;
	}
}

// What to do with the events of one class.
struct ClassPlan {
	enum Kind : uint8_t { user, syscall_entry, syscall_exit, sched_switch, sched_wake, kernel_other } kind = user;
	enum Task : uint8_t { no_task, statedump, fork, exec } task = no_task;
	SchedWakeEvent::Kind wake = SchedWakeEvent::waking;
	uint32_t name = 0, slice_name = 0, category = 0;
	int span = -1; // index in options.spans
	bool span_begin = false;
	int counter = -1; // index in options.counters
	bool counter_double = false;
	FieldRef counter_field;
	std::vector<ShownField> fields;
	FieldRef vpid, vtid, procname;  // user
	std::optional<int64_t> env_pid; // the trace's env: a per-process buffer's
	std::string env_procname;
	uint64_t fixed_track = 0; // the track of every event of the class, when it has no vpid or vtid
	FieldRef cpu, tid;        // kernel: packet's cpu_id, a tid context
	// scheduler fields / task fields
	FieldRef f[7];
};

// Arithmetic on values of hostile traces: two's complement, never undefined.
int64_t wrapping_add(int64_t a, int64_t b)
{
	return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapping_sub(int64_t a, int64_t b)
{
	return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

int64_t int_or(const reader::Item &it, const FieldRef &ref, int64_t dflt)
{
	const auto v = int_field(it, ref);
	return v ? *v : dflt;
}

class Exporter {
public:
	Exporter(EventWalk &walk, const ExportOptions &options, ExportSink &sink)
		: walk_(walk), options_(options), sink_(sink)
	{
		check_options();
		clock_ = clock_of(walk.set());
		cat_ust_ = names_.id("ust");
		cat_kernel_ = names_.id("kernel");
		cat_syscall_ = names_.id("syscall");
	}

	ExportCounts run()
	{
		sink_.start(clock_, names_);
		while (const reader::Item *it = walk_.next()) {
			if (it->kind != reader::ItemKind::event) {
				counts_.discarded += it->count;
				continue;
			}
			++counts_.events;
			one(*it);
		}
		sink_.finish();
		return counts_;
	}

private:
	struct Thread {
		bool announced = false, syscalls_announced = false;
		int64_t pid = 0;
		std::string name;
		std::vector<int> spans; // open spans, innermost last
		bool in_syscall = false;
		uint64_t task_gen = 0; // tasks_gen_ when its pid and name were last taken from tasks_
	};
	struct Process {
		bool announced = false;
		std::string name;
	};

	void check_options()
	{
		std::set<std::string> names;
		for (const auto &t : walk_.set().traces())
			for (const auto &[id, sc] : t->cls.streams)
				for (const auto &[eid, ec] : sc.events)
					names.insert(ec.name);
		const auto need = [&](const std::string &n, const char *what) {
			if (!names.count(n))
				throw std::invalid_argument("no event named '" + n + "' in the trace (" + what + ")");
		};
		for (const auto &s : options_.spans) {
			need(s.begin, "--span");
			need(s.end, "--span");
		}
		for (const auto &c : options_.counters)
			need(c.event, "--counter");
	}

	static bool monotonic_clock(const reader::Clock &c)
	{
		return c.description == "Monotonic Clock" || c.name == "monotonic";
	}

	static ExportClock clock_of(const reader::TraceSet &set)
	{
		ExportClock clock;
		bool all_monotonic = !set.traces().empty();
		const reader::Clock *first = nullptr;
		for (const auto &t : set.traces()) {
			if (t->cls.clocks.empty())
				all_monotonic = false;
			for (const reader::Clock &c : t->cls.clocks) {
				if (!first)
					first = &c;
				all_monotonic &= monotonic_clock(c);
			}
		}
		if (all_monotonic && first) {
			clock.id = ExportClock::monotonic;
			const reader::ClockConverter conv(*first);
			clock.realtime_offset_ns = conv.ns(0);
		}
		return clock;
	}

	int64_t ts_of(const reader::Item &it) const
	{
		return clock_.id == ExportClock::monotonic ? wrapping_sub(it.ns, clock_.realtime_offset_ns) : it.ns;
	}

	ClassPlan plan_for(const reader::Item &it)
	{
		ClassPlan p;
		const std::string &name = it.event->cls->name;
		const reader::EnvValue *domain = it.stream->trace().cls.env_value("domain");
		const bool kernel = domain && std::holds_alternative<std::string>(*domain) &&
		                    std::get<std::string>(*domain) == "kernel";
		p.name = p.slice_name = names_.id(name);
		p.category = kernel ? cat_kernel_ : cat_ust_;
		shown_fields(it, reader::Scope::payload, names_, p.fields);
		shown_fields(it, reader::Scope::event_context, names_, p.fields);
		shown_fields(it, reader::Scope::stream_event_context, names_, p.fields);
		p.cpu = find_field(it, "cpu_id");
		if (kernel) {
			p.kind = ClassPlan::kernel_other;
			p.tid = find_field(it, "tid");
			if (p.tid.scope == reader::Scope::payload) // a payload field, not the context
				p.tid = {};
			if (name == "sched_switch") {
				p.kind = ClassPlan::sched_switch;
				int k = 0;
				for (const char *f : {"prev_comm", "prev_tid", "prev_prio", "prev_state", "next_comm",
				                      "next_tid", "next_prio"})
					p.f[k++] = find_field(it, f);
			} else if (name == "sched_waking" || name == "sched_wakeup" || name == "sched_wakeup_new") {
				p.kind = ClassPlan::sched_wake;
				p.wake = name == "sched_waking"   ? SchedWakeEvent::waking
				         : name == "sched_wakeup" ? SchedWakeEvent::wakeup
				                                  : SchedWakeEvent::wakeup_new;
				int k = 0;
				for (const char *f : {"comm", "tid", "prio", "target_cpu"})
					p.f[k++] = find_field(it, f);
			} else if (const auto call = after_prefix(name, "syscall_entry_"); !call.empty()) {
				p.kind = ClassPlan::syscall_entry;
				p.slice_name = names_.id(call);
				p.category = cat_syscall_;
			} else if (const auto call = after_prefix(name, "syscall_exit_"); !call.empty()) {
				p.kind = ClassPlan::syscall_exit;
				p.slice_name = names_.id(call);
				p.category = cat_syscall_;
			}
			if (name == "lttng_statedump_process_state") {
				p.task = ClassPlan::statedump;
				p.f[0] = find_field(it, "tid");
				p.f[1] = find_field(it, "pid");
			} else if (name == "sched_process_fork") {
				p.task = ClassPlan::fork;
				p.f[0] = find_field(it, "child_tid");
				p.f[1] = find_field(it, "child_pid");
			} else if (name == "sched_process_exec") {
				p.task = ClassPlan::exec;
				p.f[0] = find_field(it, "tid");
				p.f[2] = find_field(it, "filename");
			}
		} else {
			p.vpid = find_field(it, "vpid");
			p.vtid = find_field(it, "vtid");
			p.procname = find_field(it, "procname");
			// a per-process buffer's trace says its process in its env
			const reader::TraceClass &tc = it.stream->trace().cls;
			if (const auto *env = tc.env_value("vpid"); env && std::holds_alternative<int64_t>(*env))
				p.env_pid = std::get<int64_t>(*env);
			if (const auto *env = tc.env_value("procname");
			    env && std::holds_alternative<std::string>(*env))
				p.env_procname = std::get<std::string>(*env);
			if (!p.vpid && !p.vtid) {
				if (p.env_pid) {
					process(*p.env_pid,
					        p.procname ? std::string_view() : std::string_view(p.env_procname));
					p.fixed_track = uuid_of(TrackKind::process, *p.env_pid);
				} else {
					p.fixed_track = trace_track(it.stream->trace());
				}
			}
			for (size_t k = 0; k < options_.spans.size(); ++k) {
				if (options_.spans[k].begin == name || options_.spans[k].end == name) {
					p.span = static_cast<int>(k);
					p.span_begin = options_.spans[k].begin == name;
					p.slice_name = names_.id(options_.spans[k].begin);
					break;
				}
			}
		}
		for (size_t k = 0; k < options_.counters.size(); ++k) {
			const auto &c = options_.counters[k];
			if (c.event != name)
				continue;
			p.counter_field = find_field(it, c.field);
			const Value *v = field_value(it, p.counter_field);
			const Op *op =
				p.counter_field ? &plan_of(it, p.counter_field.scope).ops[p.counter_field.op] : nullptr;
			if (!v || !op ||
			    !(is_integer(op->kind) || op->kind == OpKind::float32 || op->kind == OpKind::float64))
				throw std::invalid_argument("--counter " + c.event + ":" + c.field + ": the event " +
				                            name + " has no integer or floating point field '" +
				                            c.field + "'");
			p.counter = static_cast<int>(k);
			p.counter_double = !is_integer(op->kind);
			break;
		}
		return p;
	}

	// The thread's state; announces its track (and its process's) when new or changed.
	Thread &thread(int64_t tid, int64_t pid, std::string_view name)
	{
		Thread *t = last_thread_ && last_tid_ == tid ? last_thread_ : &threads_[tid];
		last_thread_ = t;
		last_tid_ = tid;
		if (!t->announced || t->pid != pid || (!name.empty() && t->name != name)) {
			if (!name.empty())
				t->name = name;
			t->pid = pid;
			t->announced = true;
			process(pid, pid == tid ? std::string_view(t->name) : std::string_view());
			TrackInfo ti;
			ti.uuid = uuid_of(TrackKind::thread, tid);
			ti.kind = TrackKind::thread;
			ti.pid = pid;
			ti.tid = tid;
			ti.name = t->name;
			sink_.track(ti);
		}
		return *t;
	}

	void process(int64_t pid, std::string_view name)
	{
		Process &p = processes_[pid];
		if (p.announced && (name.empty() || name == p.name))
			return;
		if (!name.empty())
			p.name = name;
		p.announced = true;
		TrackInfo ti;
		ti.uuid = uuid_of(TrackKind::process, pid);
		ti.kind = TrackKind::process;
		ti.pid = ti.tid = pid;
		ti.name = p.name;
		sink_.track(ti);
	}

	uint64_t syscall_track(int64_t tid, Thread &t)
	{
		const uint64_t uuid = uuid_of(TrackKind::syscalls, tid);
		if (!t.syscalls_announced) {
			t.syscalls_announced = true;
			TrackInfo ti;
			ti.uuid = uuid;
			ti.kind = TrackKind::syscalls;
			ti.parent = uuid_of(TrackKind::thread, tid);
			ti.pid = t.pid;
			ti.tid = tid;
			ti.name = "syscalls";
			sink_.track(ti);
		}
		return uuid;
	}

	uint64_t cpu_track(int64_t cpu)
	{
		const uint64_t uuid = uuid_of(TrackKind::cpu, cpu);
		if (cpu_tracks_.insert(cpu).second) {
			TrackInfo ti;
			ti.uuid = uuid;
			ti.kind = TrackKind::cpu;
			ti.cpu = cpu;
			const std::string name = "CPU " + std::to_string(cpu) + " kernel events";
			ti.name = name;
			sink_.track(ti);
		}
		return uuid;
	}

	uint64_t trace_track(const reader::Trace &trace)
	{
		const auto [it, added] = trace_tracks_.try_emplace(&trace, trace_tracks_.size() + 1);
		const uint64_t uuid = uuid_of(TrackKind::trace, static_cast<int64_t>(it->second));
		if (added) {
			TrackInfo ti;
			ti.uuid = uuid;
			ti.kind = TrackKind::trace;
			ti.name = trace.name;
			sink_.track(ti);
		}
		return uuid;
	}

	uint64_t counter_track(int counter, std::optional<int64_t> pid)
	{
		const auto key = std::make_pair(counter, pid ? *pid : INT64_MIN);
		const auto [it, added] = counter_tracks_.try_emplace(key, counter_tracks_.size() + 1);
		const uint64_t uuid = uuid_of(TrackKind::counter, static_cast<int64_t>(it->second));
		if (added) {
			TrackInfo ti;
			ti.uuid = uuid;
			ti.kind = TrackKind::counter;
			if (pid) {
				ti.parent = uuid_of(TrackKind::process, *pid);
				ti.pid = ti.tid = *pid;
			}
			const auto &c = options_.counters[static_cast<size_t>(counter)];
			std::string name = c.event;
			name += '.';
			name += c.field;
			ti.name = name;
			sink_.track(ti);
		}
		return uuid;
	}

	int64_t &current(int64_t cpu) { return running_[cpu]; }

	// The kernel thread tid's track, with what the task table knows of it.
	Thread &kernel_thread(int64_t tid)
	{
		if (last_thread_ && last_tid_ == tid && last_thread_->task_gen == tasks_gen_)
			return *last_thread_;
		if (const auto it = threads_.find(tid); it != threads_.end() && it->second.task_gen == tasks_gen_) {
			last_thread_ = &it->second;
			last_tid_ = tid;
			return it->second;
		}
		const auto pid = tasks_.pid(tid);
		const std::string comm = tasks_.comm(tid);
		Thread &t = thread(tid, pid ? *pid : tid, comm);
		t.task_gen = tasks_gen_;
		return t;
	}

	void one(const reader::Item &it)
	{
		const ClassPlan &p = cache_.get(it, [&] { return plan_for(it); });
		ExportEvent e;
		e.item = &it;
		e.ts = ts_of(it);
		e.name = p.name;
		e.category = p.category;
		e.fields = &p.fields;
		std::optional<int64_t> counter_pid;
		if (p.category == cat_ust_)
			user(it, p, e, counter_pid);
		else if (!kernel(it, p, e, counter_pid))
			return; // a scheduler event, given as such
		if (p.counter >= 0) {
			e.counter_track = counter_track(p.counter, counter_pid);
			if (p.counter_double) {
				const Value *v = field_value(it, p.counter_field);
				e.counter_double = true;
				e.counter_value = v ? v->f : 0;
			} else {
				e.counter_int = int_or(it, p.counter_field, 0);
				e.counter_value = static_cast<double>(e.counter_int);
			}
		}
		sink_.event(e);
	}

	void user(const reader::Item &it, const ClassPlan &p, ExportEvent &e, std::optional<int64_t> &counter_pid)
	{
		if (p.fixed_track) { // neither vpid nor vtid: the trace's process, else the trace
			e.track = p.fixed_track;
			counter_pid = p.env_pid;
			return;
		}
		std::optional<int64_t> pid = int_field(it, p.vpid);
		if (!pid)
			pid = p.env_pid;
		std::string_view procname = text_field(it, p.procname);
		if (procname.empty())
			procname = p.env_procname;
		counter_pid = pid;
		const std::optional<int64_t> tid = int_field(it, p.vtid);
		if (!tid) {
			if (pid) {
				process(*pid, procname);
				e.track = uuid_of(TrackKind::process, *pid);
			} else {
				e.track = trace_track(it.stream->trace());
			}
			return;
		}
		Thread &t = thread(*tid, pid ? *pid : *tid, procname);
		e.track = uuid_of(TrackKind::thread, *tid);
		if (p.span < 0)
			return;
		if (p.span_begin) {
			if (t.spans.size() < 4096) { // deeper: an instant
				t.spans.push_back(p.span);
				e.phase = Phase::begin;
				e.name = p.slice_name;
			}
		} else if (!t.spans.empty() && t.spans.back() == p.span) {
			t.spans.pop_back();
			e.phase = Phase::end;
			e.name = p.slice_name;
		}
	}

	// False when the event went to the sink as a scheduler event.
	bool kernel(const reader::Item &it, const ClassPlan &p, ExportEvent &e, std::optional<int64_t> &counter_pid)
	{
		// the CPU: -1 when unknown (or past any real one)
		int64_t cpu = int_or(it, p.cpu, -1);
		if (cpu < 0 || cpu >= 65536)
			cpu = -1;
		if (p.task != ClassPlan::no_task || p.kind == ClassPlan::sched_switch) {
			tasks_.observe(it);
			++tasks_gen_;
		}
		if (p.task == ClassPlan::exec) {
			if (const auto tid = int_field(it, p.f[0])) {
				std::string_view file = text_field(it, p.f[2]);
				if (const size_t slash = file.rfind('/'); slash != std::string_view::npos)
					file.remove_prefix(slash + 1);
				tasks_.set(*tid, std::nullopt, file.substr(0, 15));
				kernel_thread(*tid);
			}
		} else if (p.task != ClassPlan::no_task) {
			if (const auto tid = int_field(it, p.f[0]))
				kernel_thread(*tid);
		}
		int64_t running = 0;
		if (const auto tid = int_field(it, p.tid))
			running = *tid;
		else if (cpu >= 0)
			running = current(cpu);
		switch (p.kind) {
		case ClassPlan::sched_switch: {
			SchedSwitchEvent s;
			s.item = &it;
			s.ts = e.ts;
			s.cpu = cpu < 0 ? 0 : cpu;
			s.prev_comm = text_field(it, p.f[0]);
			s.prev_tid = int_or(it, p.f[1], 0);
			s.prev_prio = wrapping_add(int_or(it, p.f[2], 20), 100);
			s.prev_state = int_or(it, p.f[3], 0);
			s.next_comm = text_field(it, p.f[4]);
			s.next_tid = int_or(it, p.f[5], 0);
			s.next_prio = wrapping_add(int_or(it, p.f[6], 20), 100);
			if (cpu >= 0)
				current(cpu) = s.next_tid;
			sink_.sched_switch(s);
			return false;
		}
		case ClassPlan::sched_wake: {
			SchedWakeEvent s;
			s.item = &it;
			s.kind = p.wake;
			s.ts = e.ts;
			s.cpu = cpu < 0 ? 0 : cpu;
			s.current_tid = running;
			s.comm = text_field(it, p.f[0]);
			s.tid = int_or(it, p.f[1], 0);
			s.prio = wrapping_add(int_or(it, p.f[2], 20), 100);
			s.target_cpu = int_or(it, p.f[3], s.cpu);
			sink_.sched_wake(s);
			return false;
		}
		default:
			break;
		}
		if (running <= 0) { // no thread known (or the idle task): the CPU's track
			e.track = cpu_track(cpu);
			return true;
		}
		Thread &t = kernel_thread(running);
		counter_pid = t.pid;
		e.track = uuid_of(TrackKind::thread, running);
		if (p.kind == ClassPlan::syscall_entry) {
			e.track = syscall_track(running, t);
			e.name = p.slice_name;
			if (t.in_syscall) { // the last call never returned (exit, execve, a lost exit): ended here
				ExportEvent end = e;
				end.phase = Phase::end;
				end.fields = &no_fields_;
				end.counter_track = 0;
				sink_.event(end);
				++counts_.syscalls_closed;
			}
			t.in_syscall = true;
			e.phase = Phase::begin;
		} else if (p.kind == ClassPlan::syscall_exit && t.in_syscall) {
			e.track = syscall_track(running, t);
			e.name = p.slice_name;
			t.in_syscall = false;
			e.phase = Phase::end;
		}
		return true;
	}

	EventWalk &walk_;
	const ExportOptions &options_;
	ExportSink &sink_;
	ExportClock clock_;
	NameTable names_;
	uint32_t cat_ust_ = 0, cat_kernel_ = 0, cat_syscall_ = 0;
	ClassCache<ClassPlan> cache_;
	TaskTable tasks_;
	uint64_t tasks_gen_ = 1; // changes with what tasks_ knows
	std::unordered_map<int64_t, Thread> threads_;
	Thread *last_thread_ = nullptr;
	int64_t last_tid_ = 0;
	std::unordered_map<int64_t, Process> processes_;
	std::unordered_map<int64_t, int64_t> running_; // CPU -> running tid
	std::set<int64_t> cpu_tracks_;
	std::unordered_map<const reader::Trace *, size_t> trace_tracks_;
	std::map<std::pair<int, int64_t>, size_t> counter_tracks_;
	const std::vector<ShownField> no_fields_;
	ExportCounts counts_;
};

} // namespace

ExportCounts export_events(EventWalk &walk, const ExportOptions &options, ExportSink &sink)
{
	Exporter e(walk, options, sink);
	return e.run();
}

} // namespace tracery::analysis
