// ring_buffer_benchmark.cpp — Google Benchmark of the ring buffer hot path: reserve + write + commit, one thread
// and several, with a free counter clock (buffer cost alone) and with the vDSO CLOCK_MONOTONIC, for both ways of
// advancing the write position (Sync::atomic: 16-byte CAS; Sync::rseq: restartable sequence on the caller's CPU).
#include <benchmark/benchmark.h>
#include <time.h>

#include <cstring>
#include <memory>

#include "base/cpu.hpp"
#include "base/monotonic.hpp"
#include "ringbuf/ring_buffer.hpp"

namespace {

using tracery::ringbuf::Channel;
using tracery::ringbuf::Config;
using tracery::ringbuf::Mode;
using tracery::ringbuf::Sync;
namespace rseq = tracery::rseq;

std::unique_ptr<Channel> make_channel(Sync sync)
{
	Config c;
	c.num_cpus = tracery::base::possible_cpus();
	c.num_subbuf = 8;
	c.subbuf_size = 1 << 18;
	c.mode = Mode::overwrite; // never full: measures the write path, not drops
	c.sync = sync;
	return Channel::create(c, "bench");
}

Channel &channel(Sync sync)
{
	static std::unique_ptr<Channel> atomic = make_channel(Sync::atomic);
	static std::unique_ptr<Channel> rs = Channel::rseq_available() ? make_channel(Sync::rseq) : nullptr;
	return sync == Sync::rseq ? *rs : *atomic;
}

struct CounterClock {
	uint64_t t = 0;
	uint64_t operator()() { return t += 3; }
};

// Arg: payload bytes. Sync::atomic: thread i writes buffer i (per-CPU use) unless kSameBuffer. Sync::rseq: each
// thread writes the buffer of the CPU it runs on, as the tracer does.
template <Sync kSync, bool kRealClock, bool kSameBuffer>
void BM_ReserveCommit(benchmark::State &state)
{
	if (kSync == Sync::rseq && !Channel::rseq_available()) {
		state.SkipWithError("no rseq in this thread");
		return;
	}
	Channel &ch = channel(kSync);
	const auto payload = static_cast<uint32_t>(state.range(0));
	const uint32_t fixed_cpu = kSameBuffer ? 0 : static_cast<uint32_t>(state.thread_index()) % ch.config().num_cpus;
	uint8_t src[256] = {1, 2, 3};
	CounterClock counter;
	uint64_t dropped = 0;
	for (auto _ : state) {
		Channel::Reservation r;
		const uint32_t cpu = kSync == Sync::rseq ? static_cast<uint32_t>(rseq::current_cpu()) : fixed_cpu;
		bool ok;
		if constexpr (kRealClock) {
			ok = ch.reserve(cpu, payload, true, tracery::base::monotonic_ns, r);
		} else {
			ok = ch.reserve(cpu, payload, true, counter, r);
		}
		if (__builtin_expect(ok, 1)) {
			std::memcpy(r.slot + r.header_size, src, payload);
			ch.commit(r);
		} else {
			++dropped;
		}
	}
	state.SetItemsProcessed(state.iterations());
	state.counters["dropped"] = static_cast<double>(dropped);
}

BENCHMARK_TEMPLATE(BM_ReserveCommit, Sync::atomic, false, false)->Arg(8)->Arg(64)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_ReserveCommit, Sync::atomic, true, false)->Arg(8)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_ReserveCommit, Sync::atomic, false, true)->Arg(8)->Threads(2);
BENCHMARK_TEMPLATE(BM_ReserveCommit, Sync::rseq, false, false)->Arg(8)->Arg(64)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_ReserveCommit, Sync::rseq, true, false)->Arg(8)->Threads(1)->Threads(2);

// The clock alone, for reference.
void BM_MonotonicClock(benchmark::State &state)
{
	for (auto _ : state)
		benchmark::DoNotOptimize(tracery::base::monotonic_ns());
}
BENCHMARK(BM_MonotonicClock);

} // namespace

BENCHMARK_MAIN();
