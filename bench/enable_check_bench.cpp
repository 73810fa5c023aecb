// Micro-benchmarks of the tracepoint itself, without any ring buffer:
//  - a disabled event: TRACERY_EMIT is one relaxed byte load and one branch;
//  - an enabled event whose only probe does nothing: the noinline emitter packs
//    the arguments, tracery_fire() enters a read section (src/ust/rcu.hpp), dereferences the
//    probe array and calls the probe: the fixed cost every session pays per event
//    before it reserves any space;
//  - the same with a probe that rejects the event on a comparison of one
//    argument (`b == 0`): the path of an event a session's filter drops;
//  - the same with a string field (strlen in the emitter), and with two probes;
//  - attach + detach + grace period, the cost a session pays to enable an event.
// Run it untraced (TRACERY_OUTPUT unset): a daemonless session would attach its
// own probes to these events.
#include <benchmark/benchmark.h>

#include <tracery/internal/probe.h>
#include <tracery/tracepoint.h>

#include <atomic>
#include <cstdint>

TRACERY_EVENT(ecb, disabled, TRACERY_U64(a), TRACERY_U32(b))
TRACERY_EVENT(ecb, noop, TRACERY_U64(a), TRACERY_U32(b))
TRACERY_EVENT(ecb, noop_str, TRACERY_STRING(s), TRACERY_U32(b))
TRACERY_EVENT(ecb, toggled, TRACERY_U64(a), TRACERY_U32(b))

namespace {

// The probe: does nothing, but is an opaque call so the fire path is complete.
void noop_probe(void *, const tracery_event_desc *, const tracery_arg *) {}

std::atomic<uint64_t> probe_hits{0};
void counting_probe(void *, const tracery_event_desc *, const tracery_arg *)
{
	probe_hits.fetch_add(1, std::memory_order_relaxed);
}

// A filter `b == 0` that rejects every event of the benchmarks (b is 42).
std::atomic<uint64_t> filter_hits{0};
void filter_probe(void *, const tracery_event_desc *, const tracery_arg *args)
{
	if (__builtin_expect(*static_cast<const uint32_t *>(args[1].ptr) != 0, 1))
		return;
	filter_hits.fetch_add(1, std::memory_order_relaxed);
}

bool untraced(benchmark::State &state, const tracery_event_desc &desc)
{
	if (__atomic_load_n(&desc.enabled, __ATOMIC_RELAXED)) {
		state.SkipWithError("event already enabled: run without TRACERY_OUTPUT");
		return false;
	}
	return true;
}

// Attaches a probe for the lifetime of one benchmark run (thread 0 only; the
// other threads start their timed loop after thread 0 is past setup).
struct Attached {
	tracery_event_desc *desc;
	tracery_probe_fn fn;
	bool ok;
	Attached(tracery_event_desc *d, tracery_probe_fn f)
		: desc(d), fn(f), ok(tracery_probe_attach(d, f, nullptr) == 0)
	{
	}
	~Attached()
	{
		if (ok) {
			tracery_probe_detach(desc, fn, nullptr);
			tracery_probe_synchronize();
		}
	}
};

void BM_empty_loop(benchmark::State &state)
{
	uint64_t i = 0;
	for (auto _ : state) {
		benchmark::DoNotOptimize(i);
		++i;
	}
}
BENCHMARK(BM_empty_loop);

void BM_disabled_emit(benchmark::State &state)
{
	if (!untraced(state, tracery_event__ecb__disabled))
		return;
	uint64_t i = 0;
	for (auto _ : state) {
		TRACERY_EMIT(ecb, disabled, i, 42);
		benchmark::DoNotOptimize(i);
		++i;
	}
}
BENCHMARK(BM_disabled_emit);
BENCHMARK(BM_disabled_emit)->Threads(2);

void BM_disabled_enabled_check(benchmark::State &state) // TRACERY_ENABLED() guard alone
{
	if (!untraced(state, tracery_event__ecb__disabled))
		return;
	uint64_t n = 0;
	for (auto _ : state) {
		if (TRACERY_ENABLED(ecb, disabled))
			++n;
		benchmark::DoNotOptimize(n);
	}
}
BENCHMARK(BM_disabled_enabled_check);

// One probe attached to ecb:noop from thread 0 for the whole run; the other
// threads start their timed loop after thread 0 is past setup.
void enabled_single_probe(benchmark::State &state, tracery_probe_fn probe)
{
	static Attached *attached;
	if (state.thread_index() == 0) {
		if (!untraced(state, tracery_event__ecb__noop))
			return;
		attached = new Attached(&tracery_event__ecb__noop, probe);
		if (!attached->ok) {
			state.SkipWithError("tracery_probe_attach failed");
			delete attached;
			attached = nullptr;
			return;
		}
	}
	uint64_t i = 0;
	for (auto _ : state) {
		TRACERY_EMIT(ecb, noop, i, 42);
		benchmark::DoNotOptimize(i);
		++i;
	}
	if (state.thread_index() == 0 && attached) {
		delete attached;
		attached = nullptr;
	}
}

void BM_enabled_noop_probe(benchmark::State &state) { enabled_single_probe(state, noop_probe); }
BENCHMARK(BM_enabled_noop_probe);
BENCHMARK(BM_enabled_noop_probe)->Threads(2);

void BM_enabled_filter_rejects(benchmark::State &state) // probe = filter `b == 0`, always false
{
	enabled_single_probe(state, filter_probe);
	if (state.thread_index() == 0 && filter_hits.load(std::memory_order_relaxed) != 0)
		state.SkipWithError("the filter accepted an event");
}
BENCHMARK(BM_enabled_filter_rejects);
BENCHMARK(BM_enabled_filter_rejects)->Threads(2);

void BM_enabled_noop_probe_string(benchmark::State &state)
{
	if (!untraced(state, tracery_event__ecb__noop_str))
		return;
	Attached attached(&tracery_event__ecb__noop_str, noop_probe);
	if (!attached.ok) {
		state.SkipWithError("tracery_probe_attach failed");
		return;
	}
	for (auto _ : state)
		TRACERY_EMIT(ecb, noop_str, "hello tracer", 42);
}
BENCHMARK(BM_enabled_noop_probe_string);

void BM_enabled_two_probes(benchmark::State &state) // two sessions enabling one event
{
	if (!untraced(state, tracery_event__ecb__noop))
		return;
	Attached first(&tracery_event__ecb__noop, noop_probe);
	Attached second(&tracery_event__ecb__noop, counting_probe);
	if (!first.ok || !second.ok) {
		state.SkipWithError("tracery_probe_attach failed");
		return;
	}
	uint64_t i = 0;
	for (auto _ : state) {
		TRACERY_EMIT(ecb, noop, i, 42);
		benchmark::DoNotOptimize(i);
		++i;
	}
	benchmark::DoNotOptimize(probe_hits.load(std::memory_order_relaxed));
}
BENCHMARK(BM_enabled_two_probes);

void BM_attach_detach(benchmark::State &state) // enable then disable one event, grace period included
{
	if (!untraced(state, tracery_event__ecb__toggled))
		return;
	for (auto _ : state) {
		if (tracery_probe_attach(&tracery_event__ecb__toggled, noop_probe, nullptr) != 0 ||
		    tracery_probe_detach(&tracery_event__ecb__toggled, noop_probe, nullptr) != 0) {
			state.SkipWithError("tracery_probe_attach/detach failed");
			return;
		}
		tracery_probe_synchronize();
	}
}
BENCHMARK(BM_attach_detach)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
