// Event registry and probe lists: the C entry points of tracepoint.h.
//
// Objects (the executable, shared libraries, dlopen'd libraries) register the
// descriptors of their `tracery_events` section from a constructor and
// unregister them from a destructor. Each descriptor carries an RCU-published
// probe array (liburcu-bp): tracery_fire() reads it under rcu_read_lock, which
// never blocks, while attach/detach copy the array, publish the copy and free
// the old one after a grace period.
#define _LGPL_SOURCE
#include "ust/registry.hpp"

#include "filter/jit.hpp"

// The read lock and unlock reach liburcu-bp's per-thread reader pointer. Declare
// it as the C TLS variable it is, in the initial-exec model: an %fs-relative
// load instead of a __tls_get_addr call and C++'s thread_local wrapper check
// per access (11.6 -> 4.2 ns per enabled event). liburcu-bp.so is loaded with
// libtracery.so; when libtracery is dlopen'd, glibc puts its 80 bytes of TLS in
// the static TLS surplus, as for thread_context.cpp's initial-exec variables.
#include <urcu/tls-compat.h>
#undef URCU_TLS_STORAGE_CLASS
#define URCU_TLS_STORAGE_CLASS __thread __attribute__((tls_model("initial-exec")))
#include <urcu-bp.h>

#if defined(__SANITIZE_THREAD__)
#define TRACERY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRACERY_TSAN 1
#endif
#endif
#ifdef TRACERY_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#include <tracery/internal/probe.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <vector>

namespace tracery::ust {
namespace {

// ThreadSanitizer cannot see liburcu's grace periods (membarrier, uninstrumented
// code): tell it that every read-side section that ended before
// synchronize_rcu() returned happens before what the writer does next.
#ifdef TRACERY_TSAN
char grace_period_token;
inline void read_section_done() { __tsan_release(&grace_period_token); }
inline void grace_period_waited() { __tsan_acquire(&grace_period_token); }
#else
inline void read_section_done() {}
inline void grace_period_waited() {}
#endif

void wait_for_readers()
{
	urcu_bp_synchronize_rcu();
	grace_period_waited();
}

struct Probe {
	tracery_probe_fn fn;
	void *priv;
	tracery_gate_fn gate;            // may be installed as the event's gate when alone
	tracery_probe_fn gate_passed_fn; // fn for an event `gate` accepted
};

struct ProbeArray {
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

std::vector<RegistryListener *> &listeners()
{
	static auto *v = new std::vector<RegistryListener *>;
	return *v;
}

ProbeArray *make_array(uint32_t count)
{
	auto *a = static_cast<ProbeArray *>(calloc(1, sizeof(ProbeArray) + count * sizeof(Probe)));
	if (!a)
		throw std::bad_alloc();
	a->count = count;
	return a;
}

// Publishes a new probe array and frees the old one once no reader uses it.
// The event's gate is its only probe's gate, if any. A gate only ever rejects
// on behalf of the probes it was installed for: it is removed before a new
// array is published and installed after.
void publish(tracery_event_desc *desc, ProbeArray *next)
{
	auto &gate = desc->gate;
	const tracery_gate_fn next_gate = next && next->count == 1 ? next->probes[0].gate : nullptr;
	__atomic_store_n(&gate, nullptr, __ATOMIC_RELEASE);
	ProbeArray *prev = static_cast<ProbeArray *>(desc->probes);
	__atomic_store_n(&desc->probes, next, __ATOMIC_RELEASE); // rcu_assign_pointer
	__atomic_store_n(&desc->enabled, next && next->count ? 1 : 0, __ATOMIC_RELAXED);
	if (prev) {
		wait_for_readers();
		free(prev);
	}
	__atomic_store_n(&gate, next_gate, __ATOMIC_RELEASE);
}

// More than one session on the event: kept out of tracery_fire's fast path.
__attribute__((noinline)) void fire_all(const ProbeArray *a, tracery_event_desc *desc, const tracery_arg *args)
{
	for (uint32_t i = 0; i < a->count; i++)
		a->probes[i].fn(a->probes[i].priv, desc, args);
}

// The body of tracery_fire and tracery_fire_gate_passed: call_one(probe)
// when the event has a single probe (the common case), every probe otherwise.
template <typename CallOne>
__attribute__((always_inline)) inline void run_probes(tracery_event_desc *desc, const tracery_arg *args,
                                                      CallOne call_one)
{
	urcu_bp_read_lock();
	auto *a = static_cast<ProbeArray *>(__atomic_load_n(&desc->probes, __ATOMIC_ACQUIRE)); // rcu_dereference
	if (__builtin_expect(a && a->count == 1, 1))
		call_one(a->probes[0]);
	else if (a)
		fire_all(a, desc, args);
	read_section_done();
	urcu_bp_read_unlock();
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
	std::lock_guard lock(registry_mutex());
	auto &v = listeners();
	v.erase(std::remove(v.begin(), v.end(), l), v.end());
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
}

void unlock_after_fork()
{
	filter::codegen_mutex().unlock();
	registry_mutex().unlock();
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
	run_probes(desc, args, [&](const Probe &p) { p.fn(p.priv, desc, args); });
}

// The emitter loaded `gate` before the probes: if they changed since, the
// gate that ran is not their only probe's, and the probes filter as usual.
void tracery_fire_gate_passed(tracery_event_desc *desc, const tracery_arg *args, tracery_gate_fn gate)
{
	run_probes(desc, args, [&](const Probe &p) { (p.gate == gate ? p.gate_passed_fn : p.fn)(p.priv, desc, args); });
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
				registered().push_back(d);
				added.push_back(d);
			}
		}
		to_notify = listeners();
	}
	for (auto *d : added)
		for (auto *l : to_notify)
			l->on_event_registered(d);
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
		for (auto *l : to_notify)
			l->on_event_unregistered(d);
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

void tracery_probe_synchronize(void) { wait_for_readers(); }

} // extern "C"
