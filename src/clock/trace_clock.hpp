// Trace clock: the timestamp source of every traced event. now() returns monotonic
// nanoseconds on the CLOCK_MONOTONIC timeline (the one ftrace's "mono" clock uses), read
// either from a calibrated TSC (rdtsc scaled by a fixed-point multiplier) or from
// clock_gettime(CLOCK_MONOTONIC) through the vDSO. Three backends:
//   tsc          bare rdtsc (the default where the TSC is usable): ~10 ns, and it overlaps
//                with the work around it;
//   tsc-ordered  lfence; rdtsc: ~7-16 ns more, because the fence waits for every earlier
//                instruction (in the event path: the previous event's locked instructions);
//   vdso         clock_gettime(CLOCK_MONOTONIC), ordered like tsc-ordered.
//
// Design notes (the details are in trace_clock.cpp):
//  * The TSC backend evaluates a piecewise-linear function of the TSC published in a
//    "latch" seqlock: two copies of the parameter block, readers pick the copy selected by
//    the sequence number and retry only if it changed while they read. A reader that
//    interrupts the writer (signal handler on the same thread) always finds a stable copy,
//    so now() never spins on a half-written block: no locks, no syscalls, async-signal-safe.
//  * resync() (called about once a second by a background thread of the runtime) measures
//    the offset to CLOCK_MONOTONIC and publishes a new block whose slope change only takes
//    effect 10 ms in the future; up to that point the new block reproduces the
//    old function exactly, so readers holding either block agree and the clock never
//    steps back. Errors are removed by slewing (changing the slope), never by stepping back.
//  * What ordering buys: with tsc-ordered (and vdso) a timestamp taken after observing
//    another thread's (or process's) store is never earlier than the timestamp that thread
//    took before the store. A bare rdtsc may be sampled before an earlier load completes, so
//    with the tsc backend such a pair can come out inverted by up to ~100 ns (measured here:
//    about 1 handoff in 1000 in a tight two-thread ping-pong). Per thread, and within one
//    ring buffer (which clamps to its last timestamp), time never goes back with any
//    backend; the inversion is only between threads that hand work to each other within
//    ~100 ns. ftrace's default "local" clock and perf make the same choice.
//  * Before init() (and with the vdso backend) now() is clock_gettime(CLOCK_MONOTONIC).
//  * Traces need not pay for the scaling: ticks() gives what a trace's timestamps count, TSC
//    cycles or now()'s nanoseconds, and tick_scale() the rate and offset its metadata declares
//    (see "Trace ticks" below).
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "base/monotonic.hpp"
#include "base/tick_scale.hpp"

#ifndef TRACERY_CLOCK_HAVE_TSC // -DTRACERY_CLOCK_HAVE_TSC=0 builds the vdso-only variant
#if defined(__x86_64__)
#define TRACERY_CLOCK_HAVE_TSC 1
#else
#define TRACERY_CLOCK_HAVE_TSC 0
#endif
#endif

namespace tracery::clock {

enum class Backend : uint32_t { vdso = 0, tsc = 1, tsc_ordered = 2 };

inline constexpr bool is_tsc(Backend b) noexcept { return b != Backend::vdso; }

// Chooses and calibrates the backend (a few ms the first time). Idempotent and thread-safe.
// TRACERY_CLOCK=tsc|tsc-ordered|vdso forces a backend; any other non-empty value is reported
// (base::diagnostic) and keeps the automatic choice (tsc where eligible and cheaper than the
// vDSO, else vdso). A TSC calibration that fails (kCalibrationAttempts attempts, each
// disturbed) falls back to vdso, reported likewise, its reason in stats(). Not
// async-signal-safe.
void init();

// Monotonic nanoseconds on the CLOCK_MONOTONIC timeline. Hot path; defined inline below.
inline uint64_t now() noexcept;

// ---- Trace ticks: what the timestamps of a trace count.
// A trace counts either nanoseconds of now() or raw TSC cycles. Cycles skip now()'s scaling,
// which is most of the cost of a timestamp in the event path (docs/performance.md), and they
// are the same counter in every process, whatever each process's calibration. The trace's
// CTF clock then declares the TSC rate and the CLOCK_REALTIME time of cycle 0, measured when
// the trace starts (tick_scale()), so readers show the same times as with nanoseconds. The
// unit is chosen once per trace by whoever writes its metadata (the session daemon, or the
// traced program without one), and every process writing into the trace follows it.
enum class TickUnit : uint32_t { ns = 0, tsc = 1 };

// How one process reads a unit: tsc_ordered is tsc after an lfence (see Backend).
enum class TickSource : uint32_t { ns = 0, tsc = 1, tsc_ordered = 2 };

// tsc when this process's backend is a TSC one (after init()), else ns.
TickUnit preferred_tick_unit() noexcept;
// How this process reads `unit`. tsc reads the TSC whatever this process's own backend (the
// trace decided; the TSC is one counter for the whole machine), with the lfence of the
// tsc-ordered backend when that is this process's backend (before init(): when TRACERY_CLOCK
// asks for it). Needs no init(): a program traced by
// the daemon in cycles never calibrates (now() before init() is the vdso clock, as exact).
// A build without TSC support reads ns for both units: its traces are then wrong, which a
// daemon of the same build never asks.
TickSource tick_source(TickUnit unit) noexcept;
const char *tick_unit_name(TickUnit unit) noexcept; // "ns" or "tsc"
// The unit tick_unit_name() names; false for any other name.
bool parse_tick_unit(std::string_view name, TickUnit &unit) noexcept;

// A timestamp of the trace: now() or the TSC. Hot path; defined inline below.
inline uint64_t ticks(TickSource source) noexcept;

// How readers turn ticks into time (base/tick_scale.hpp).
using base::TickScale;
// Measured at the call. tsc: the rate is the current estimate of the TSC rate against
// CLOCK_MONOTONIC (rounded to whole Hz), the offset comes from the narrowest of several
// CLOCK_REALTIME reads between two TSC reads. Throws std::logic_error for tsc in a process
// whose TSC was never calibrated (preferred_tick_unit() was not tsc).
TickScale tick_scale(TickUnit unit);
// The ns scale of an offset CLOCK_REALTIME - now() (realtime_offset_ns()).
using base::ns_tick_scale;

// Re-measures the offset to CLOCK_MONOTONIC and the TSC rate, and republishes the
// parameters (slewing, never stepping back). Meant to be called about once a second from
// a background thread. Cheap (a few microseconds). No-op with the vdso backend or before
// init(). Calls closer than ~11 ms apart may be skipped. Not async-signal-safe.
void resync() noexcept;

// How long the background thread should wait before its next resync(): grows from 50 ms
// right after init() (the first TSC rate comes from a 2 ms calibration and is only good to
// a few 1e-7) to 1 s in steady state. Calling resync() at a plain 1 Hz also works; the
// clock is then less accurate during the first second (see report()).
uint64_t resync_interval_ns() noexcept;

Backend backend() noexcept;          // vdso before init()
const char *backend_name() noexcept; // "tsc", "tsc-ordered" or "vdso"
const char *backend_name(Backend b) noexcept;

// CLOCK_REALTIME - now(), in ns, measured at the time of the call (for the CTF clock offset).
int64_t realtime_offset_ns() noexcept;

// Cost of one read with each backend (median over repeated timed loops of now()).
struct BackendCost {
	Backend backend;
	const char *name;
	bool available;     // false: tsc backends on a non-x86-64 build
	double ns_per_read; // 0 when unavailable
};
std::vector<BackendCost> measure_backends();

// Human-readable summary: active backend and why, ns per read for each backend,
// calibration and resync figures. Used by tracery-clock-report and the docs.
std::string report();

struct Stats {
	Backend backend = Backend::vdso;
	bool initialized = false;
	bool forced = false;                  // chosen through TRACERY_CLOCK
	bool tsc_eligible = false;            // clocksource tsc, constant+nonstop TSC, serializing lfence
	const char *tsc_note = "";            // why (not) eligible
	double tsc_hz = 0;                    // current estimate of the TSC rate (CLOCK_MONOTONIC Hz)
	double init_cost_vdso_ns = 0;         // per-read costs measured at init (0: not measured)
	double init_cost_tsc_ns = 0;          // of the tsc backend init() chose or was asked for
	uint64_t calibration_ns = 0;          // duration of the initial calibration
	uint64_t calibration_samples = 0;     // samples kept for the regression
	uint64_t calibration_attempts = 0;    // calibrations made (more than 1: the first ones were disturbed)
	const char *calibration_failure = ""; // why the last attempt failed ("" if one succeeded)
	double anchor_uncertainty_ns = 0;     // width of the last CLOCK_MONOTONIC bracket
	uint64_t resyncs = 0;                 // parameter blocks published by resync()
	uint64_t resyncs_skipped = 0;         // too close to the previous one, or noisy measurement
	uint64_t steps_forward = 0;           // corrections too large to slew (clock behind)
	uint64_t late_publishes = 0;          // writer descheduled near the switch point (see .cpp)
	double max_overrun_ns = 0;            // longest a block became visible after its switch point: a reader
					      // may then have stepped back by |m0 - m1| times this (see .cpp)
	double last_error_ns = 0;             // now() - CLOCK_MONOTONIC measured by the last resync
	double max_abs_error_ns = 0;          // largest |error| seen by any resync
};
Stats stats();

namespace detail {

inline constexpr unsigned kFracBits = 40; // fixed-point ns per cycle: m = ns/cycle * 2^40

// Piecewise-linear map TSC -> ns (fixed point, value = ns + frac / 2^40):
//   t <  t_sw : F(t_sw) + max(t - t_sw, d_min) * m0   (continuation of the previous block)
//   t_sw <= t < t_end : F(t_sw) + (t - t_sw) * m1     (slew segment)
//   t >= t_end : F(t_end) + (t - t_end) * m2          (steady rate)
struct ParamBlock {
	std::atomic<uint64_t> t_sw, ns_sw, frac_sw, m0, m1;
	std::atomic<int64_t> d_min;
	std::atomic<uint64_t> t_end, ns_end, frac_end, m2;
};

struct alignas(64) State {
	std::atomic<uint32_t> mode; // Backend; vdso (0) until init() picks tsc
	std::atomic<uint32_t> seq;  // latch sequence: readers use block[seq & 1]
	ParamBlock block[2];
};
extern State g_state;

inline uint64_t now_vdso() noexcept { return base::monotonic_ns(); }

#if TRACERY_CLOCK_HAVE_TSC
// lfence makes rdtsc wait until every earlier instruction (in particular the caller's loads)
// has completed. Without it the TSC can be sampled before an earlier load returns: a thread
// that sees another thread's published timestamp could then read an *earlier* time (measured
// on this machine: inversions of up to ~115 ns in a two-thread handoff). The tsc-ordered
// backend is only chosen on CPUs where lfence is dispatch-serializing (Intel, AMD Zen+).
template <bool kOrdered>
inline uint64_t read_tsc() noexcept
{
	if constexpr (kOrdered)
		__builtin_ia32_lfence();
	return __builtin_ia32_rdtsc();
}

// A TSC backend regardless of the active mode (benchmarks; meaningless before init()).
// Seqlock read without fences: the block is read with acquire loads, so the re-check of seq
// cannot be performed before them, and each acquire load that sees a value being rewritten
// synchronises with the writer's release store, which follows its bump of seq (plain movs
// on x86; also keeps the header usable under -fsanitize=thread, which rejects fences).
template <bool kOrdered>
inline uint64_t now_tsc() noexcept
{
	__extension__ typedef __int128 i128;
	__extension__ typedef unsigned __int128 u128;
	constexpr auto acq = std::memory_order_acquire;
	State &st = g_state;
	for (;;) {
		const uint32_t s1 = st.seq.load(acq);
		const ParamBlock &b = st.block[s1 & 1];
		const uint64_t t = read_tsc<kOrdered>();
		const uint64_t t_end = b.t_end.load(acq);
		uint64_t r;
		if (__builtin_expect(t >= t_end, 1)) {
			const u128 p = u128(t - t_end) * b.m2.load(acq) + b.frac_end.load(acq);
			r = b.ns_end.load(acq) + uint64_t(p >> kFracBits);
		} else {
			int64_t d = int64_t(t - b.t_sw.load(acq));
			uint64_t m;
			if (d < 0) {
				m = b.m0.load(acq);
				const int64_t d_min = b.d_min.load(acq);
				if (d < d_min)
					d = d_min;
			} else {
				m = b.m1.load(acq);
			}
			const i128 p = i128(d) * i128(m) + i128(b.frac_sw.load(acq));
			r = b.ns_sw.load(acq) + uint64_t(int64_t(p >> kFracBits));
		}
		if (__builtin_expect(st.seq.load(std::memory_order_relaxed) == s1, 1))
			return r;
	}
}
#endif

// Test hooks (not thread-safe against concurrent init/resync callers; tests only).
// reset_for_testing: back to the uninitialised state (now() falls back to the vDSO);
// the next init() recalibrates from scratch. The clock may step back across a reset.
void reset_for_testing();
// Steps the TSC clock forward by ahead_ns (>= 0), so that it runs ahead of CLOCK_MONOTONIC
// and later resync() calls must slew it back. Returns false (and does nothing) with the vdso
// backend or while a previous block's switch point is less than ~1 ms away.
bool perturb_for_testing(int64_t ahead_ns);
// The next `calibrations` TSC calibrations sleep pause_ns after their first sample, as a
// thread preempted there would be.
void disturb_calibration_for_testing(uint64_t pause_ns, int calibrations);

} // namespace detail

namespace detail {
// now() with any backend but tsc: out of line, so that the common case inlines to rdtsc and the
// scaling alone (no call, no stack frame of its own in the caller).
[[gnu::noinline]] uint64_t now_other() noexcept;
} // namespace detail

inline uint64_t now() noexcept
{
#if TRACERY_CLOCK_HAVE_TSC
	const uint32_t mode = detail::g_state.mode.load(std::memory_order_acquire);
	if (__builtin_expect(mode == uint32_t(Backend::tsc), 1))
		return detail::now_tsc<false>();
#endif
	return detail::now_other();
}

inline uint64_t ticks(TickSource source) noexcept
{
#if TRACERY_CLOCK_HAVE_TSC
	if (__builtin_expect(source == TickSource::tsc, 1))
		return detail::read_tsc<false>();
	if (source == TickSource::tsc_ordered)
		return detail::read_tsc<true>();
#endif
	return now();
}

} // namespace tracery::clock
