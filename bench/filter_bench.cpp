// Micro-benchmarks of filters: the per-event cost of Filter::accepts() with
// the JIT against the interpreter, for a rejecting and an accepting
// one-comparison filter and a five-comparison expression, on an event like
// bench:ev (uint64 a, uint32 b).
#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "filter/compiler.hpp"
#include "filter/filter.hpp"

namespace tf = tracery::filter;

namespace {

const tracery_field_desc kFields[] = {
	{"a", TRACERY_TYPE_U64, 0, 0, nullptr},
	{"b", TRACERY_TYPE_U32, 0, 0, nullptr},
};
const tracery_event_desc kEvent = {"bench", "ev", kFields, 2, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

std::unique_ptr<tf::Filter> load(const char *expression, tf::Engine engine)
{
	tf::Error error;
	const std::optional<tf::Compiled> c = tf::compile_filter(expression, kEvent, &error);
	std::string why;
	std::unique_ptr<tf::Filter> f = c ? tf::Filter::load(c->program, kEvent, engine, &why) : nullptr;
	if (!f || f->engine() != engine) {
		std::fprintf(stderr, "filter_bench: cannot load %s: %s%s\n", expression, error.message.c_str(),
		             why.c_str());
		std::exit(1);
	}
	return f;
}

// Runs `expression` on payloads cycling through the (a, b) pairs given.
void run(benchmark::State &state, const char *expression, tf::Engine engine,
         std::initializer_list<std::pair<uint64_t, uint32_t>> values)
{
	const std::unique_ptr<tf::Filter> filter = load(expression, engine);
	std::vector<std::pair<uint64_t, uint32_t>> storage(values);
	std::vector<std::array<tracery_arg, 2>> payloads;
	for (auto &[a, b] : storage)
		payloads.push_back({tracery_arg{&a, 0}, tracery_arg{&b, 0}});
	size_t i = 0, accepted = 0;
	for (auto _ : state) {
		accepted += filter->accepts(payloads[i].data(), nullptr);
		if (++i == payloads.size())
			i = 0;
	}
	benchmark::DoNotOptimize(accepted);
	state.counters["accepted"] = benchmark::Counter(double(accepted), benchmark::Counter::kAvgIterations);
}

constexpr const char *kFive = "a > 10 && b == 42 && a < 1000000000 && b != 7 && a % 2 == 0";

void BM_reject_one(benchmark::State &state, tf::Engine engine) { run(state, "b != 42", engine, {{1, 42}}); }
void BM_accept_one(benchmark::State &state, tf::Engine engine) { run(state, "b != 42", engine, {{1, 43}}); }
void BM_five(benchmark::State &state, tf::Engine engine)
{
	// Accepted, rejected at each of the five comparisons, accepted again.
	run(state, kFive, engine, {{100, 42}, {5, 42}, {100, 41}, {2000000000, 42}, {1000, 7}, {101, 42}, {4242, 42}});
}

void BM_sample(benchmark::State &state, tf::Engine engine)
{
	// One event in 100 by its counter: a constant divisor that is not a power of two, so the JIT keeps idiv.
	run(state, "a % 100 == 0", engine, {{100, 0}, {101, 0}, {12345, 0}, {7, 0}});
}

BENCHMARK_CAPTURE(BM_reject_one, interpreter, tf::Engine::interpreter);
BENCHMARK_CAPTURE(BM_reject_one, jit, tf::Engine::jit);
BENCHMARK_CAPTURE(BM_accept_one, interpreter, tf::Engine::interpreter);
BENCHMARK_CAPTURE(BM_accept_one, jit, tf::Engine::jit);
BENCHMARK_CAPTURE(BM_five, interpreter, tf::Engine::interpreter);
BENCHMARK_CAPTURE(BM_five, jit, tf::Engine::jit);
BENCHMARK_CAPTURE(BM_sample, interpreter, tf::Engine::interpreter);
BENCHMARK_CAPTURE(BM_sample, jit, tf::Engine::jit);

} // namespace

BENCHMARK_MAIN();
