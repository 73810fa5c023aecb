// analysis/export/timeline.cpp — the events of traces as tracks, slices,
// instants, counters and scheduler events for the exports (see
// timeline.hpp).
#include "analysis/export/timeline.hpp"

#include <map>
#include <set>
#include <stdexcept>

#include "analysis/model/address_names.hpp"
#include "analysis/model/kernel_events.hpp"
#include "analysis/model/preload_events.hpp"
#include "analysis/model/scheduling.hpp"
#include "analysis/model/spans.hpp"
#include "analysis/model/syscalls.hpp"
#include "analysis/model/tasks.hpp"
#include "analysis/model/trace_env.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

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

constexpr uint64_t kIdMask = (uint64_t{1} << 48) - 1;
uint64_t uuid_of(TrackKind kind, int64_t id)
{
	return (uint64_t{static_cast<uint8_t>(kind)} << 56) | (static_cast<uint64_t>(id) & kIdMask);
}

// What to do with the events of one class.
struct ClassPlan {
	bool kernel = false;
	KernelEvent k; // kernel: its kind and fields
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
	uint64_t fixed_track = 0;              // the track of every event of the class, when it has no vpid or vtid
	FieldRef cpu, tid;                     // kernel: the CPU it is about, a tid context
	PreloadEvent preload;                  // user: a preload helper's lock or function event
	uint32_t wait_name = 0, held_name = 0; // its slices' names, for a lock event
};

// A slice open on a thread's track: a --span's (its index), a function call's, a wait's.
struct OpenSlice {
	static constexpr int kFunction = -1, kWait = -2;
	int span;
	uint32_t name;
};

// Bounds on what the preload helpers' events add: names of functions, tracks of locks held.
constexpr size_t kMaxFunctionNames = 65536;
constexpr size_t kMaxLockTracks = 65536;

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
		if (options.symbols)
			symbols_.emplace(*options.symbols);
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
			if (symbols_)
				symbols_->observe(*it);
			one(*it);
		}
		sink_.finish();
		if (symbols_)
			symbols_->resolver().report(stderr);
		return counts_;
	}

private:
	struct Thread {
		bool announced = false, syscalls_announced = false;
		int64_t pid = 0;
		std::string name;
		uint64_t task_gen = 0; // tasks_gen_ when its pid and name were last taken from tasks_
	};
	struct Process {
		bool announced = false;
		std::string name;
	};
	// a lock's track of holds by one thread, and how deep the thread holds it
	struct LockTrack {
		uint64_t uuid;
		uint32_t depth;
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
		p.kernel = is_kernel_trace(it.stream->trace().cls);
		p.name = p.slice_name = names_.id(name);
		p.category = p.kernel ? cat_kernel_ : cat_ust_;
		shown_fields(it, names_, p.fields, symbols_ ? &*symbols_ : nullptr);
		if (p.kernel) {
			p.k = KernelEvent::of(it);
			p.cpu = find_event_cpu(it);
			p.tid = find_tid_context(it);
			if (p.k.kind == KernelEvent::syscall_entry || p.k.kind == KernelEvent::syscall_exit) {
				p.slice_name = names_.id(p.k.call);
				p.category = cat_syscall_;
			}
		} else {
			p.vpid = find_field(it, "vpid");
			p.vtid = find_field(it, "vtid");
			p.procname = find_field(it, "procname");
			// a per-process buffer's trace says its process in its env
			const EnvProcess env = env_process(it.stream->trace().cls);
			p.env_pid = env.pid;
			p.env_procname = env.procname;
			if (!p.vpid && !p.vtid) {
				if (p.env_pid) {
					process(*p.env_pid,
					        p.procname ? std::string_view() : std::string_view(p.env_procname));
					p.fixed_track = uuid_of(TrackKind::process, *p.env_pid);
				} else {
					p.fixed_track = trace_track(it.stream->trace());
				}
			}
			p.preload = PreloadEvent::of(it);
			if (p.preload.is_lock()) {
				const bool rw = p.preload.is_rwlock();
				p.wait_name = names_.id(rw ? "rwlock wait" : "mutex wait");
				p.held_name = names_.id(rw ? "rwlock held" : "mutex held");
				if (p.preload.kind == PreloadEvent::cond_wait_begin ||
				    p.preload.kind == PreloadEvent::cond_wait_end) {
					p.wait_name = names_.id("condition wait");
					p.held_name = names_.id("mutex held");
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
			bool integer = false;
			if (!counter_field(it, p.counter_field, integer))
				throw std::invalid_argument("--counter " + c.event + ":" + c.field + ": the event " +
				                            name + " has no integer or floating point field '" +
				                            c.field + "'");
			p.counter = static_cast<int>(k);
			p.counter_double = !integer;
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
		if (!p.kernel)
			user(it, p, e, counter_pid);
		else if (!kernel(it, p, e, counter_pid))
			return; // a scheduler event, given as such
		if (p.counter >= 0) {
			e.counter_track = counter_track(p.counter, counter_pid);
			if (p.counter_double) {
				const reader::Field f = reader::field_at(it, p.counter_field);
				e.counter_double = true;
				e.counter_value = f ? f.as_double() : 0;
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
		thread(*tid, pid ? *pid : *tid, procname);
		e.track = uuid_of(TrackKind::thread, *tid);
		if (p.preload.kind != PreloadEvent::other) {
			preload_event(it, p, e, pid ? *pid : -1, *tid);
			return;
		}
		if (p.span < 0)
			return;
		if (p.span_begin)
			begin_slice(*tid, {p.span, p.slice_name}, e);
		else
			end_slice(*tid, p.span, e);
	}

	// Begins a slice on the thread's track (deeper than 4096: an instant).
	void begin_slice(int64_t tid, OpenSlice slice, ExportEvent &e)
	{
		if (spans_.depth(tid) >= 4096)
			return;
		spans_.begin(tid, slice);
		e.phase = Phase::begin;
		e.name = slice.name;
	}

	// Ends the innermost slice of the thread's track if it is of that kind (else the event is an instant).
	bool end_slice(int64_t tid, int span, ExportEvent &e)
	{
		const OpenSlice *open = spans_.innermost(tid);
		if (!open || open->span != span)
			return false;
		e.phase = Phase::end;
		e.name = open->name;
		spans_.end(tid);
		return true;
	}

	// A function's slice name: its address named (hex, or its function as at this event), up to
	// kMaxFunctionNames of them.
	uint32_t function_name(uint64_t addr, int64_t pid)
	{
		if (const auto f = function_names_.find({pid, addr}); f != function_names_.end())
			return f->second;
		if (function_names_.size() >= kMaxFunctionNames)
			return names_.id("function");
		const uint32_t id = names_.id(
			symbols_ ? address_name(symbols_->resolver().resolve(pid, addr), addr, AddressNames::function)
				 : hex_address(addr));
		function_names_.emplace(std::pair{pid, addr}, id);
		return id;
	}

	// The track of the holds of a lock by a thread, announced when new; 0 beyond kMaxLockTracks.
	LockTrack *lock_track(int64_t pid, int64_t tid, uint64_t lock, bool rwlock)
	{
		const auto key = std::make_tuple(pid, tid, lock);
		if (const auto l = lock_tracks_.find(key); l != lock_tracks_.end())
			return &l->second;
		if (lock_tracks_.size() >= kMaxLockTracks)
			return nullptr;
		LockTrack &l = lock_tracks_[key];
		l = {uuid_of(TrackKind::lock, static_cast<int64_t>(lock_tracks_.size())), 0};
		TrackInfo ti;
		ti.uuid = l.uuid;
		ti.kind = TrackKind::lock;
		ti.parent = uuid_of(TrackKind::thread, tid);
		ti.pid = pid;
		ti.tid = tid;
		const std::string name = std::string(rwlock ? "rwlock " : "mutex ") + hex_address(lock);
		ti.name = name;
		sink_.track(ti);
		return &l;
	}

	// A lock taken (begins a hold slice on the lock's track: e becomes it) or released (ends it).
	void hold(int64_t pid, int64_t tid, uint64_t lock, bool rwlock, bool taken, uint32_t name, ExportEvent &e)
	{
		LockTrack *l = lock_track(pid, tid, lock, rwlock);
		if (!l)
			return;
		if (taken) {
			if (l->depth++ == 0) {
				e.track = l->uuid;
				e.phase = Phase::begin;
				e.name = name;
			}
		} else if (l->depth && --l->depth == 0) {
			e.track = l->uuid;
			e.phase = Phase::end;
			e.name = name;
		}
	}

	// A preload helper's event: a function's entry or exit begins or ends its slice on the thread's track; a
	// lock request begins a wait there, its acquisition ends it and begins a hold on the lock's track (the
	// event given twice), its release ends that; a condition wait ends the hold of its mutex and begins a
	// wait, its end the reverse.
	void preload_event(const reader::Item &it, const ClassPlan &p, ExportEvent &e, int64_t pid, int64_t tid)
	{
		using K = PreloadEvent;
		const bool rw = p.preload.is_rwlock();
		const uint64_t lock = PreloadEvent::address(it, p.preload.lock);
		const bool ok = int_field(it, p.preload.status).value_or(0) == 0;
		switch (p.preload.kind) {
		case K::func_entry:
			begin_slice(
				tid,
				{OpenSlice::kFunction, function_name(PreloadEvent::address(it, p.preload.addr), pid)},
				e);
			break;
		case K::func_exit:
			end_slice(tid, OpenSlice::kFunction, e);
			break;
		case K::mutex_lock_req:
		case K::rwlock_rdlock_req:
		case K::rwlock_wrlock_req:
			begin_slice(tid, {OpenSlice::kWait, p.wait_name}, e);
			break;
		case K::mutex_lock_acq:
		case K::rwlock_rdlock_acq:
		case K::rwlock_wrlock_acq:
		case K::cond_wait_end: {
			ExportEvent first = e;
			if (end_slice(tid, OpenSlice::kWait, first) && ok) {
				sink_.event(first);
				hold(pid, tid, lock, rw, true, p.held_name, e);
			} else if (ok) {
				hold(pid, tid, lock, rw, true, p.held_name, e);
			} else {
				e = first;
			}
			break;
		}
		case K::mutex_trylock:
		case K::rwlock_tryrdlock:
		case K::rwlock_trywrlock:
			if (ok)
				hold(pid, tid, lock, rw, true, p.held_name, e);
			break;
		case K::mutex_unlock:
		case K::rwlock_unlock:
			hold(pid, tid, lock, rw, false, p.held_name, e);
			break;
		case K::cond_wait_begin: {
			ExportEvent first = e;
			hold(pid, tid, lock, false, false, p.held_name, first);
			if (first.phase == Phase::end)
				sink_.event(first);
			begin_slice(tid, {OpenSlice::kWait, p.wait_name}, e);
			break;
		}
		default:
			break;
		}
	}

	// False when the event went to the sink as a scheduler event.
	bool kernel(const reader::Item &it, const ClassPlan &p, ExportEvent &e, std::optional<int64_t> &counter_pid)
	{
		// the CPU: -1 when unknown (or past any real one)
		int64_t cpu = int_or(it, p.cpu, -1);
		if (cpu < 0 || cpu >= 65536)
			cpu = -1;
		const KernelEvent &k = p.k;
		if (k.kind == KernelEvent::sched_switch || k.kind == KernelEvent::process_statedump ||
		    k.kind == KernelEvent::process_fork || k.kind == KernelEvent::process_exec) {
			tasks_.observe(it, k);
			++tasks_gen_;
			if (k.kind != KernelEvent::sched_switch)
				if (const auto tid = int_field(it, k.tid))
					kernel_thread(*tid);
		}
		int64_t running = 0;
		if (const auto tid = int_field(it, p.tid))
			running = *tid;
		else if (cpu >= 0)
			running = running_.running(cpu).value_or(0);
		switch (k.kind) {
		case KernelEvent::sched_switch: {
			SchedSwitchEvent s;
			s.item = &it;
			s.ts = e.ts;
			s.cpu = cpu < 0 ? 0 : cpu;
			s.prev_comm = text_field(it, k.prev_comm);
			s.prev_tid = int_or(it, k.prev_tid, 0);
			s.prev_prio = wrapping_add(int_or(it, k.prev_prio, 20), 100);
			s.prev_state = int_or(it, k.prev_state, 0);
			s.next_comm = text_field(it, k.next_comm);
			s.next_tid = int_or(it, k.next_tid, 0);
			s.next_prio = wrapping_add(int_or(it, k.next_prio, 20), 100);
			if (cpu >= 0)
				running_.on_switch(cpu, s.next_tid);
			sink_.sched_switch(s);
			return false;
		}
		case KernelEvent::sched_wake: {
			SchedWakeEvent s;
			s.item = &it;
			s.kind = k.wake == KernelEvent::waking   ? SchedWakeEvent::waking
			         : k.wake == KernelEvent::wakeup ? SchedWakeEvent::wakeup
			                                         : SchedWakeEvent::wakeup_new;
			s.ts = e.ts;
			s.cpu = cpu < 0 ? 0 : cpu;
			s.current_tid = running;
			s.comm = text_field(it, k.comm);
			s.tid = int_or(it, k.tid, 0);
			s.prio = wrapping_add(int_or(it, k.prio, 20), 100);
			s.target_cpu = int_or(it, k.target_cpu, s.cpu);
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
		// system calls paired per thread (model/syscalls.hpp): a call the
		// thread never returned from (exit, execve, a lost exit) ends at its
		// next entry; an exit without its entry stays an instant
		if (k.kind == KernelEvent::syscall_entry) {
			e.track = syscall_track(running, t);
			e.name = p.slice_name;
			if (syscalls_.enter(running, it.ns, cpu, k.call)) {
				ExportEvent end = e;
				end.phase = Phase::end;
				end.fields = &no_fields_;
				end.counter_track = 0;
				sink_.event(end);
				++counts_.syscalls_closed;
			}
			e.phase = Phase::begin;
		} else if (k.kind == KernelEvent::syscall_exit && syscalls_.exit(running)) {
			e.track = syscall_track(running, t);
			e.name = p.slice_name;
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
	RunningTasks running_;
	SyscallTracker syscalls_;
	OpenSpans<int64_t, OpenSlice> spans_; // per thread: the open slices of its track
	// per thread and lock (process, thread, lock): its track of holds
	std::map<std::tuple<int64_t, int64_t, uint64_t>, LockTrack> lock_tracks_;
	std::map<std::pair<int64_t, uint64_t>, uint32_t> function_names_; // per process and address
	std::set<int64_t> cpu_tracks_;
	std::unordered_map<const reader::Trace *, size_t> trace_tracks_;
	std::map<std::pair<int, int64_t>, size_t> counter_tracks_;
	const std::vector<ShownField> no_fields_;
	ExportCounts counts_;
	std::optional<SymbolEvents> symbols_; // --symbols
};

} // namespace

ExportCounts export_events(EventWalk &walk, const ExportOptions &options, ExportSink &sink)
{
	Exporter e(walk, options, sink);
	return e.run();
}

} // namespace tracery::analysis
