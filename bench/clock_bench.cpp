// Micro-benchmarks of the trace clock: the raw time sources (clock_gettime through the
// vDSO, bare and ordered rdtsc) against tracery::clock::now() with each backend.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <ctime>

#include "clock/trace_clock.hpp"

#if TRACERY_CLOCK_HAVE_TSC
#include <x86intrin.h>
#endif

namespace tc = tracery::clock;

namespace {

// Switches the clock to the given backend (re-initialising as a fresh process would).
// Called by thread 0 only; the other threads wait at the start of the timed loop.
bool use_backend(const char *name)
{
	if (tc::stats().initialized && std::strcmp(tc::backend_name(), name) == 0)
		return true;
	tc::detail::reset_for_testing();
	setenv("TRACERY_CLOCK", name, 1);
	tc::init();
	unsetenv("TRACERY_CLOCK");
	return std::strcmp(tc::backend_name(), name) == 0;
}

void BM_clock_gettime_monotonic(benchmark::State &state)
{
	timespec ts;
	for (auto _ : state) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		benchmark::DoNotOptimize(ts);
	}
}
BENCHMARK(BM_clock_gettime_monotonic);

#if TRACERY_CLOCK_HAVE_TSC
void BM_rdtsc(benchmark::State &state)
{
	for (auto _ : state)
		benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_rdtsc);

void BM_lfence_rdtsc(benchmark::State &state)
{ // what the tsc-ordered backend reads
	for (auto _ : state) {
		_mm_lfence();
		benchmark::DoNotOptimize(__rdtsc());
	}
}
BENCHMARK(BM_lfence_rdtsc);

void BM_rdtscp(benchmark::State &state)
{
	unsigned aux;
	for (auto _ : state)
		benchmark::DoNotOptimize(__rdtscp(&aux));
}
BENCHMARK(BM_rdtscp);

void BM_now_tsc(benchmark::State &state)
{
	if (state.thread_index() == 0 && !use_backend("tsc")) {
		state.SkipWithError("tsc backend unavailable");
		return;
	}
	for (auto _ : state)
		benchmark::DoNotOptimize(tc::now());
}
BENCHMARK(BM_now_tsc);
BENCHMARK(BM_now_tsc)->Threads(2);

void BM_now_tsc_ordered(benchmark::State &state)
{
	if (state.thread_index() == 0 && !use_backend("tsc-ordered")) {
		state.SkipWithError("tsc-ordered backend unavailable");
		return;
	}
	for (auto _ : state)
		benchmark::DoNotOptimize(tc::now());
}
BENCHMARK(BM_now_tsc_ordered);
#endif

void BM_now_vdso(benchmark::State &state)
{
	if (state.thread_index() == 0 && !use_backend("vdso")) {
		state.SkipWithError("vdso backend unavailable");
		return;
	}
	for (auto _ : state)
		benchmark::DoNotOptimize(tc::now());
}
BENCHMARK(BM_now_vdso);
BENCHMARK(BM_now_vdso)->Threads(2);

void BM_now_auto(benchmark::State &state)
{ // whatever init() picks on this machine
	if (state.thread_index() == 0) {
		tc::detail::reset_for_testing();
		unsetenv("TRACERY_CLOCK");
		tc::init();
		state.SetLabel(tc::backend_name());
	}
	for (auto _ : state)
		benchmark::DoNotOptimize(tc::now());
}
BENCHMARK(BM_now_auto);

} // namespace

BENCHMARK_MAIN();
