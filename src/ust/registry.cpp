// Event registry and probe lists: the C entry points of tracepoint.h.
//
// Objects (the executable, shared libraries, dlopen'd libraries) register the
// descriptors of their `tracery_events` section from a constructor and
// unregister them from a destructor. Each descriptor carries an RCU-published
// probe array (rcu.hpp): tracery_fire() reads it inside a read section, which
// never blocks, while attach/detach copy the array, publish the copy and free
// the old one after a grace period.
#include "ust/registry.hpp"

#include "filter/jit.hpp"
#include "ust/rcu.hpp"
#include "ust/user_context.hpp"

#include <tracery/internal/probe.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <vector>

namespace tracery::ust {
namespace {

struct Probe {
	tracery_probe_fn fn;
	void *priv;
	tracery_gate_fn gate;            // may be installed as the event's gate when alone
	tracery_probe_fn gate_passed_fn; // fn for an event `gate` accepted
};

// `first` is what tracery_fire calls: the only probe, or fire_all over the
// array, so that the common case of one session costs no count and no loop.
struct ProbeArray {
	Probe first;
	uint32_t count;
	Probe probes[];
};

// Per-descriptor bookkeeping, hung on desc->runtime.
struct Registration {
	uint32_t refs = 0;
};

// Never destroyed: objects unregister their events from destructors that
// run after static destruction has begun (exit, late dlclose).
std::mutex &registry_mutex()
{
	static auto *m = new std::mutex;
	return *m;
}

std::vector<tracery_event_desc *> &registered()
{
	static auto *v = new std::vector<tracery_event_desc *>;
	return *v;
}

// Listeners are called outside the registry's lock (they attach probes,
// which take it). remove_listener() returns only once no call into the
// listener runs, so that it may be destroyed right after (a session the
// daemon ended while another thread dlopens a library); a call after the
// removal is not made. Under the registry's lock.
struct Calls {
	std::multiset<RegistryListener *> running;
	std::condition_variable ended; // made anew in a forked child
};

Calls &calls()
{
	static auto *c = new Calls;
	return *c;
}

std::vector<RegistryListener *> &listeners()
{
	static auto *v = new std::vector<RegistryListener *>;
	return *v;
}

// Calls fn(l) for each listener of `snapshot` still listening, outside the
// registry's lock (not held by the caller), each call counted as running.
template <typename Fn>
void call_listeners(const std::vector<RegistryListener *> &snapshot, Fn fn)
{
	for (RegistryListener *l : snapshot) {
		{
			std::lock_guard lock(registry_mutex());
			const auto &now = listeners();
			if (std::find(now.begin(), now.end(), l) == now.end())
				continue;
			calls().running.insert(l);
		}
		fn(l);
		std::lock_guard lock(registry_mutex());
		calls().running.erase(calls().running.find(l));
		calls().ended.notify_all();
	}
}

ProbeArray *make_array(uint32_t count)
{
	auto *a = static_cast<ProbeArray *>(calloc(1, sizeof(ProbeArray) + count * sizeof(Probe)));
	if (!a)
		throw std::bad_alloc();
	a->count = count;
	return a;
}

// The probe array of an event from its registration on, and again once its
// probes were all detached (or its object unregisters it): an emitter that read
// `enabled` before that calls a probe that does nothing, so tracery_fire needs
// no test for a null array. Never freed.
void no_probe(void *, const tracery_event_desc *, const tracery_arg *) {}

ProbeArray *no_probes()
{
	static ProbeArray *const a = [] {
		ProbeArray *empty = make_array(0);
		empty->first = Probe{no_probe, nullptr, nullptr, no_probe};
		return empty;
	}();
	return a;
}

// More than one session on the event: the array's `first`, its priv the array.
void fire_all(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	const auto *a = static_cast<const ProbeArray *>(priv);
	for (uint32_t i = 0; i < a->count; i++)
		a->probes[i].fn(a->probes[i].priv, desc, args);
}

// Publishes a new probe array and frees the old one once no reader uses it.
// The event's gate is its only probe's gate, if any. A gate only ever rejects
// on behalf of the probes it was installed for: it is removed before a new
// array is published and installed after.
void publish(tracery_event_desc *desc, ProbeArray *next)
{
	rcu::init();
	if (!next)
		next = no_probes();
	else
		next->first = next->count == 1 ? next->probes[0] : Probe{fire_all, next, nullptr, fire_all};
	auto &gate = desc->gate;
	const tracery_gate_fn next_gate = next->first.gate;
	__atomic_store_n(&gate, nullptr, __ATOMIC_RELEASE);
	ProbeArray *prev = static_cast<ProbeArray *>(desc->probes);
	__atomic_store_n(&desc->probes, next, __ATOMIC_RELEASE); // rcu_assign_pointer
	__atomic_store_n(&desc->enabled, next->count ? 1 : 0, __ATOMIC_RELEASE);
	if (prev && prev != no_probes()) {
		rcu::synchronize();
		free(prev);
	}
	__atomic_store_n(&gate, next_gate, __ATOMIC_RELEASE);
}

// The rest of run_probes, inside the read section. An event the gate
// accepted (kGatePassed) goes to the probe's gate_passed_fn if the probe's gate
// is the one that ran: the emitter loaded it before the probes, which may have
// changed since (then the probes filter as usual).
template <bool kGatePassed>
__attribute__((always_inline)) inline void call_in_section(tracery_event_desc *desc, const tracery_arg *args,
                                                           tracery_gate_fn gate)
{
	// Never null: no_probes() from the event's registration on, which happened
	// before any thread could reach its emitter (the object's constructor).
	const Probe &p = static_cast<const ProbeArray *>(__atomic_load_n(&desc->probes, __ATOMIC_ACQUIRE))->first;
	if (kGatePassed && __builtin_expect(p.gate == gate, 1))
		p.gate_passed_fn(p.priv, desc, args);
	else
		p.fn(p.priv, desc, args);
	rcu::read_unlock();
}

// A thread's first event, a nested one (a signal handler's, a probe's own) or
// one whose reader fences: out of line, so that run_probes keeps no register
// and no stack frame across the read lock.
template <bool kGatePassed>
__attribute__((noinline)) void run_probes_slow(tracery_event_desc *desc, const tracery_arg *args, tracery_gate_fn gate)
{
	if (rcu::read_lock_slow())
		call_in_section<kGatePassed>(desc, args, gate);
}

// The body of tracery_fire and tracery_fire_gate_passed.
template <bool kGatePassed>
__attribute__((always_inline)) inline void run_probes(tracery_event_desc *desc, const tracery_arg *args,
                                                      tracery_gate_fn gate)
{
	if (__builtin_expect(!rcu::read_lock_fast(), 0))
		return run_probes_slow<kGatePassed>(desc, args, gate);
	call_in_section<kGatePassed>(desc, args, gate);
}

// An entry point's body while a session records the ip context: the event's
// emitting address (the entry point's return address) in a thread-local for
// the session's probe; an event of a signal handler nests in the thread's.
template <bool kGatePassed>
__attribute__((noinline)) void run_probes_recording_ip(tracery_event_desc *desc, const tracery_arg *args,
                                                       tracery_gate_fn gate, const void *emit_address)
{
	const void *outer = tls_emit_address;
	tls_emit_address = emit_address;
	run_probes<kGatePassed>(desc, args, gate);
	tls_emit_address = outer;
}

} // namespace

void add_listener(RegistryListener *l)
{
	std::vector<tracery_event_desc *> existing;
	{
		std::lock_guard lock(registry_mutex());
		listeners().push_back(l);
		existing = registered();
	}
	for (auto *d : existing)
		l->on_event_registered(d);
}

void remove_listener(RegistryListener *l)
{
	std::unique_lock lock(registry_mutex());
	auto &v = listeners();
	v.erase(std::remove(v.begin(), v.end(), l), v.end());
	calls().ended.wait(lock, [&] { return calls().running.count(l) == 0; });
}

std::vector<tracery_event_desc *> registered_events()
{
	std::lock_guard lock(registry_mutex());
	return registered();
}

void lock_for_fork()
{
	registry_mutex().lock();
	filter::codegen_mutex().lock();
	rcu::lock_for_fork();
}

void unlock_after_fork()
{
	rcu::unlock_after_fork();
	filter::codegen_mutex().unlock();
	registry_mutex().unlock();
}

void after_fork_in_child()
{
	rcu::after_fork_child();
	// The calls of the parent's other threads never end here; a waiter's
	// state in the old condition variable is the parent's.
	calls().running.clear();
	new (&calls().ended) std::condition_variable;
}

int attach_probe(tracery_event_desc *desc, tracery_probe_fn fn, void *priv, tracery_gate_fn gate,
                 tracery_probe_fn gate_passed_fn)
{
	std::lock_guard lock(registry_mutex());
	if (!desc || !desc->runtime)
		return -1;
	auto *cur = static_cast<ProbeArray *>(desc->probes);
	uint32_t n = cur ? cur->count : 0;
	for (uint32_t i = 0; i < n; i++)
		if (cur->probes[i].fn == fn && cur->probes[i].priv == priv)
			return -1;
	ProbeArray *next = make_array(n + 1);
	if (n)
		memcpy(next->probes, cur->probes, n * sizeof(Probe));
	next->probes[n] = Probe{fn, priv, gate, gate_passed_fn ? gate_passed_fn : fn};
	publish(desc, next);
	return 0;
}

} // namespace tracery::ust

using namespace tracery::ust;

extern "C" {

void tracery_fire(tracery_event_desc *desc, const tracery_arg *args)
{
	if (__builtin_expect(recording_emit_address(), 0))
		return run_probes_recording_ip<false>(desc, args, nullptr, __builtin_return_address(0));
	run_probes<false>(desc, args, nullptr);
}

void tracery_fire_gate_passed(tracery_event_desc *desc, const tracery_arg *args, tracery_gate_fn gate)
{
	if (__builtin_expect(recording_emit_address(), 0))
		return run_probes_recording_ip<true>(desc, args, gate, __builtin_return_address(0));
	run_probes<true>(desc, args, gate);
}

void tracery_fire_at(tracery_event_desc *desc, const tracery_arg *args, const void *ip)
{
	if (__builtin_expect(recording_emit_address(), 0))
		return run_probes_recording_ip<false>(desc, args, nullptr, ip ? ip : __builtin_return_address(0));
	run_probes<false>(desc, args, nullptr);
}

void tracery_fire_gate_passed_at(tracery_event_desc *desc, const tracery_arg *args, tracery_gate_fn gate,
                                 const void *ip)
{
	if (__builtin_expect(recording_emit_address(), 0))
		return run_probes_recording_ip<true>(desc, args, gate, ip ? ip : __builtin_return_address(0));
	run_probes<true>(desc, args, gate);
}

void tracery_register_events(tracery_event_desc *const *begin, tracery_event_desc *const *end)
{
	if (!begin || !end)
		return;
	std::vector<tracery_event_desc *> added;
	std::vector<RegistryListener *> to_notify;
	{
		std::lock_guard lock(registry_mutex());
		for (auto *it = begin; it < end; ++it) {
			tracery_event_desc *d = *it;
			if (!d)
				continue;
			auto *reg = static_cast<Registration *>(d->runtime);
			if (!reg) {
				reg = new Registration;
				d->runtime = reg;
			}
			if (reg->refs++ == 0) {
				if (!d->probes)
					__atomic_store_n(&d->probes, no_probes(), __ATOMIC_RELEASE);
				registered().push_back(d);
				added.push_back(d);
			}
		}
		to_notify = listeners();
	}
	for (auto *d : added)
		call_listeners(to_notify, [d](RegistryListener *l) { l->on_event_registered(d); });
}

void tracery_unregister_events(tracery_event_desc *const *begin, tracery_event_desc *const *end)
{
	if (!begin || !end)
		return;
	std::vector<tracery_event_desc *> removed;
	std::vector<RegistryListener *> to_notify;
	{
		std::lock_guard lock(registry_mutex());
		for (auto *it = begin; it < end; ++it) {
			tracery_event_desc *d = *it;
			auto *reg = d ? static_cast<Registration *>(d->runtime) : nullptr;
			if (!reg || reg->refs == 0)
				continue;
			if (--reg->refs == 0) {
				auto &v = registered();
				v.erase(std::remove(v.begin(), v.end(), d), v.end());
				removed.push_back(d);
			}
		}
		to_notify = listeners();
	}
	// Listeners detach their probes; the descriptor memory goes away with
	// the object right after this returns, so nothing may run a probe on it.
	for (auto *d : removed) {
		call_listeners(to_notify, [d](RegistryListener *l) { l->on_event_unregistered(d); });
		std::lock_guard lock(registry_mutex());
		publish(d, nullptr);
		delete static_cast<Registration *>(d->runtime);
		d->runtime = nullptr;
	}
}

void tracery_list_events(void (*fn)(const tracery_event_desc *, void *), void *arg)
{
	for (auto *d : registered_events())
		fn(d, arg);
}

int tracery_probe_attach(tracery_event_desc *desc, tracery_probe_fn fn, void *priv)
{
	return tracery::ust::attach_probe(desc, fn, priv, nullptr);
}

int tracery_probe_detach(tracery_event_desc *desc, tracery_probe_fn fn, void *priv)
{
	std::lock_guard lock(registry_mutex());
	auto *cur = desc ? static_cast<ProbeArray *>(desc->probes) : nullptr;
	if (!cur)
		return -1;
	uint32_t keep = 0;
	ProbeArray *next = make_array(cur->count);
	for (uint32_t i = 0; i < cur->count; i++)
		if (!(cur->probes[i].fn == fn && cur->probes[i].priv == priv))
			next->probes[keep++] = cur->probes[i];
	if (keep == cur->count) {
		free(next);
		return -1;
	}
	next->count = keep;
	if (keep == 0) {
		free(next);
		next = nullptr;
	}
	publish(desc, next);
	return 0;
}

void tracery_probe_synchronize(void) { rcu::synchronize(); }

} // extern "C"
