// floor_bench.cpp — floor-bench: the floor of a recorded event on this machine, with the harness, arguments and
// report of tracery-bench (bench/bench_main.h), so that bench/compare-lttng runs it beside both tracers.
//
//   floor-bench <events_per_thread> <threads> <ev|str|none> [<events_per_second_per_thread>]
//
// Each event does what no per-CPU ring-buffer tracer can avoid, and nothing else:
//  * the trace clock read as a Tracery trace reads it (clock::ticks with the tick source of the unit Tracery
//    would choose here: rdtsc on a TSC machine, else the vDSO's CLOCK_MONOTONIC);
//  * the CPU from the thread's rseq area (sched_getcpu() without one), to pick that CPU's buffer;
//  * a reservation as a restartable sequence makes it: load the buffer's write offset, check that the record
//    fits in the open sub-buffer, store the new offset (no locked instruction; the sub-buffer switch is out of
//    line, as in the tracer);
//  * the record written: a 4-byte compact CTF header (event id and low timestamp bits, ctf/event_header.hpp)
//    and the payload of bench:ev (a = the loop counter as a u64, b = 42 as a u32: 16 bytes in all) or of
//    bench:str (s = "hello tracer" measured and copied with its NUL, then b: 21 bytes);
//  * a commit: a release store of the committed offset.
// It is not a tracer: two threads on one CPU would race on a buffer (each thread is meant to run on a CPU of its
// own), nothing reads the buffers, which wrap around like overwrite mode. Each CPU's buffer has the size of a
// Tracery channel's default buffer (sub-buffers x sub-buffer size, base/sizes.hpp), touched once before the
// timed loop. The difference between a tracer's row and this one (its excess) is what the tracer adds.
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/sizes.hpp"
#include "clock/trace_clock.hpp"
#include "ctf/event_header.hpp"
#include "rseq/rseq.hpp"

namespace {

using namespace tracery;

constexpr uint64_t kSubbufSize = base::kDefaultSubbufSize;
constexpr uint64_t kBufferSize = base::kDefaultSubbufSize * base::kDefaultNumSubbuf;
constexpr uint32_t kEventId = 0; // a compact header, as bench:ev and bench:str get in a Tracery trace

struct alignas(64) FloorBuffer {
	uint64_t write = 0;     // free-running write offset
	uint64_t committed = 0; // the end of the last committed record
	uint8_t *data = nullptr;
};

FloorBuffer *g_buffers;
uint32_t g_num_buffers;
clock::TickSource g_ticks;

void setup()
{
	clock::init();
	g_ticks = clock::tick_source(clock::preferred_tick_unit());
	const long cpus = sysconf(_SC_NPROCESSORS_CONF);
	g_num_buffers = cpus > 0 ? static_cast<uint32_t>(cpus) : 1;
	g_buffers = new FloorBuffer[g_num_buffers];
	for (uint32_t i = 0; i < g_num_buffers; i++) {
		void *p = mmap(nullptr, kBufferSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("floor-bench: mmap");
			exit(1);
		}
		memset(p, 0, kBufferSize);
		g_buffers[i].data = static_cast<uint8_t *>(p);
	}
}

[[gnu::always_inline]] inline FloorBuffer &this_cpu_buffer()
{
	int cpu = tracery::rseq::current_cpu(); // (glibc's struct rseq shares the name)
	if (cpu < 0) [[unlikely]]
		cpu = sched_getcpu();
	return g_buffers[static_cast<uint32_t>(cpu < 0 ? 0 : cpu) % g_num_buffers];
}

// The record does not fit in the open sub-buffer: the rest of it is left as padding and the record starts the
// next one (the buffer wraps around).
[[gnu::noinline]] uint64_t next_subbuf(FloorBuffer &b)
{
	const uint64_t start = (b.write + kSubbufSize) & ~(kSubbufSize - 1);
	std::atomic_ref<uint64_t>(b.committed).store(start, std::memory_order_release);
	return start;
}

// Reserves `size` bytes: where the record goes, and its end in *end.
[[gnu::always_inline]] inline uint8_t *reserve(FloorBuffer &b, uint32_t size, uint64_t *end)
{
	uint64_t offset = b.write;
	if (((offset & (kSubbufSize - 1)) + size) > kSubbufSize) [[unlikely]]
		offset = next_subbuf(b);
	*end = offset + size;
	b.write = *end;
	return b.data + (offset & (kBufferSize - 1));
}

[[gnu::always_inline]] inline void commit(FloorBuffer &b, uint64_t end)
{
	std::atomic_ref<uint64_t>(b.committed).store(end, std::memory_order_release);
}

[[gnu::always_inline]] inline void record_ev(uint64_t a, uint32_t value_b)
{
	const uint64_t ts = clock::ticks(g_ticks);
	FloorBuffer &b = this_cpu_buffer();
	uint64_t end;
	uint8_t *p = reserve(b, ctf::kCompactHeaderSize + 12, &end);
	ctf::write_event_header(p, kEventId, ts, true);
	memcpy(p + 4, &a, 8);
	memcpy(p + 12, &value_b, 4);
	commit(b, end);
}

[[gnu::always_inline]] inline void record_str(const char *s, uint32_t value_b)
{
	const uint64_t ts = clock::ticks(g_ticks);
	const uint32_t len = static_cast<uint32_t>(strlen(s)) + 1;
	FloorBuffer &b = this_cpu_buffer();
	uint64_t end;
	uint8_t *p = reserve(b, ctf::kCompactHeaderSize + len + 4, &end);
	ctf::write_event_header(p, kEventId, ts, true);
	memcpy(p + 4, s, len);
	memcpy(p + 4 + len, &value_b, 4);
	commit(b, end);
}

} // namespace

#include "bench_main.h"

static inline __attribute__((always_inline)) void bench_loop(enum bench_kind kind, uint64_t events)
{
	if (kind == BENCH_EV) {
		for (uint64_t i = 0; i < events; i++)
			record_ev(i, 42);
	} else {
		// The string reaches each event as a tracepoint's argument does: its length is not known to the compiler,
		// which must measure it every time.
		const char *s = "hello tracer";
		for (uint64_t i = 0; i < events; i++) {
			asm("" : "+r"(s));
			record_str(s, 42);
		}
	}
}

int main(int argc, char **argv)
{
	setup();
	return bench_main("floor-bench", argc, argv);
}
