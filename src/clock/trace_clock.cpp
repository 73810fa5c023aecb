// Trace clock implementation: backend choice, TSC calibration against CLOCK_MONOTONIC,
// resync (slewing) and the latch-seqlock publication of the parameters read by now().
//
// How the TSC clock stays on the CLOCK_MONOTONIC timeline
//  * Bracketed samples: t1 = rdtscp; m = clock_gettime(MONOTONIC); t2 = rdtscp. With the
//    kernel on a TSC-based clocksource (tsc, kvm-clock, Hyper-V TSC page), m was computed
//    from a TSC value in [t1, t2], so each sample bounds CLOCK_MONOTONIC at any TSC value:
//    below by m + s*(t - t2) and above by m + 1 + s*(t - t1) (s = ns per cycle). The tightest bounds over a burst of samples
//    give an anchor (their midpoint) good to a few ns; their width is reported.
//  * init(): least-squares slope over ~2 ms of samples (tens of thousands), then one anchor
//    burst. The first block is published at the anchor's *upper* bound, so values returned
//    by the vDSO fallback before init are never ahead of the first TSC-based values.
//  * resync(): new anchor; TSC rate re-estimated from an anchor >= 0.5 s older (tracks NTP
//    frequency changes within one resync interval); offset error removed by a slew segment
//    (rate change of at most 500 ppm, 10% if the clock is more than 1 ms ahead) lasting
//    half the resync interval, after which the block returns to the plain rate estimate, so
//    a process that stops resyncing (e.g. a forked child without the background thread)
//    only drifts by the rate estimate error.
//
// Why the clock never steps back across a republication
//  A new block changes nothing before its switch point t_sw = now + 10 ms: for t < t_sw it
//  reproduces the old function exactly (same fixed-point value at t_sw, same slope m0).
//  Readers still holding the old block (they loaded it before the new seq was visible) read
//  a TSC below t_sw, where both blocks agree. The writer abandons the publication if the TSC
//  is within 1 ms of t_sw when it makes the new block visible: the check and the seq store
//  are one restartable sequence (rseq/rseq.hpp), so a preemption, migration or signal between
//  them makes the check run again. Without rseq (and under ThreadSanitizer) they are two
//  instructions, and a preemption of ~10 ms between them could let a stale reader pass t_sw.
//  What no guest can prevent, a hypervisor descheduling the vCPU there, has the same effect.
//  That is detected (Stats::late_publishes) and the step back it allows is at
//  most |m0 - m1| * overrun: ~4e-8 * overrun for the usual tens-of-ns corrections, 5e-4 *
//  overrun at the slew cap. Forward corrections that cannot be slewed in time are applied
//  as forward steps (which never go back).
#include "clock/trace_clock.hpp"

#include "base/diagnostics.hpp"
#include "rseq/rseq.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string_view>

#if TRACERY_CLOCK_HAVE_TSC
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace tracery::clock {

namespace detail {
constinit State g_state{};

uint64_t now_other() noexcept
{
#if TRACERY_CLOCK_HAVE_TSC
	if (g_state.mode.load(std::memory_order_acquire) == uint32_t(Backend::tsc_ordered))
		return now_tsc<true>();
#endif
	return now_vdso();
}
} // namespace detail

namespace {

using detail::g_state;
using detail::kFracBits;
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

constexpr int kAnchorRing = 16; // anchors kept for the rate estimate

struct Params {
	uint64_t t_sw = 0, ns_sw = 0, frac_sw = 0, m0 = 0, m1 = 0;
	int64_t d_min = 0;
	uint64_t t_end = 0, ns_end = 0, frac_end = 0, m2 = 0;
};

struct Anchor {
	uint64_t tsc = 0;  // TSC value the anchor refers to
	uint64_t mono = 0; // CLOCK_MONOTONIC there = mono + off (ns)
	double off = 0;
	double upper = 0; // upper bound, relative to mono
	double width = 0; // upper - lower bound (ns)
};

struct Writer {
	bool initialized = false;
	Params cur;
	double slope = 0; // ns per TSC cycle (current rate estimate)
	Anchor ring[kAnchorRing];
	int ring_n = 0, ring_head = 0; // ring_head: next slot to write
	uint64_t last_publish_tsc = 0;
	Stats st;
};

constinit std::mutex g_mu; // serialises init / resync / stats / test hooks (never taken by now())
constinit Writer g_w;
constinit std::atomic<bool> g_ready{false};
constinit std::atomic<uint64_t> g_init_mono{0}; // CLOCK_MONOTONIC at the end of init()
constinit std::once_flag g_atfork_once;
// detail::disturb_calibration_for_testing(): the next calibrations sleep this
// long after their first sample.
constinit std::atomic<uint64_t> g_test_pause_ns{0};
constinit std::atomic<int> g_test_pauses{0};

#if TRACERY_CLOCK_HAVE_TSC

constexpr double kFracScale = double(uint64_t(1) << kFracBits);

// Tunables.
constexpr uint64_t kInitCalibrationNs = 2'000'000; // regression window at init
// The window is that of the samples kept (at least kMinCalibrationSamples),
// so a thread preempted at its start still calibrates over a whole window, up
// to kMaxCalibrationNs in all; a calibration that still fails (a longer
// preemption, every anchor burst disturbed) is made again, at most
// kCalibrationAttempts times, after yielding the CPU.
constexpr uint64_t kMaxCalibrationNs = 50'000'000;
constexpr long double kMinCalibrationSamples = 100;
constexpr int kCalibrationAttempts = 4;
constexpr int kBurstSamples = 48;                // samples per anchor burst (~3 us)
constexpr double kMaxAnchorUncertaintyNs = 1000; // a burst wider than this is retried
constexpr double kSwitchMarginS = 0.010;         // new parameters take effect 10 ms later
constexpr double kGuardS = 0.001;
constexpr double kMinBaselineS = 0.5; // rate estimate from anchors >= 0.5 s apart
constexpr double kMinUsableBaselineS = 0.05;
constexpr double kSlewCap = 500e-6;        // max rate change to remove an offset error
constexpr double kLargeAheadNs = 1e6;      // ahead by more than this: ...
constexpr double kLargeAheadSlewCap = 0.1; // ... slew at up to 10%
constexpr double kRateJumpLimit = 1e-3;    // rate estimate off by > 1000 ppm: discontinuity
constexpr double kTscMustBeFaster = 0.9;   // auto mode: tsc picked if <= 90% of vdso cost

// ---------------------------------------------------------------------------------------
// Fixed-point helpers (value = F / 2^40 ns).

u128 fix(uint64_t ns, uint64_t frac) { return (u128(ns) << kFracBits) + frac; }

// ns + off as fixed point; off may be negative or large.
u128 fix_add(uint64_t ns, double off)
{
	const double fl = std::floor(off);
	const double fr = off - fl;
	return fix(ns + uint64_t(int64_t(fl)), uint64_t(fr * kFracScale));
}

double fix_diff_ns(u128 a, u128 b)
{ // a - b in ns (small differences)
	const i128 d = i128(a - b);
	return double(d) / kFracScale;
}

uint64_t to_mult(double ns_per_cycle) { return uint64_t(std::llround(ns_per_cycle * kFracScale)); }

u128 eval_fix(const Params &p, uint64_t t)
{
	if (t >= p.t_end)
		return fix(p.ns_end, p.frac_end) + u128(t - p.t_end) * p.m2;
	int64_t d = int64_t(t - p.t_sw);
	uint64_t m = p.m1;
	if (d < 0) {
		m = p.m0;
		if (d < p.d_min)
			d = p.d_min;
	}
	return u128(i128(fix(p.ns_sw, p.frac_sw)) + i128(d) * i128(m));
}

// Slope (fixed point) of p at TSC t.
uint64_t slope_at(const Params &p, uint64_t t)
{
	if (t >= p.t_end)
		return p.m2;
	return int64_t(t - p.t_sw) < 0 ? p.m0 : p.m1;
}

uint64_t rdtscp_ordered()
{
	unsigned aux;
	return __rdtscp(&aux); // executes only after every earlier instruction has completed
}

// Latch-seqlock publication (see trace_clock.hpp). Both copies hold the same block at rest
// (seq even): bump seq so readers use copy 1, rewrite copy 0, bump so they use copy 0,
// rewrite copy 1. The field stores are release stores (plain movs on x86): a reader whose
// acquire load sees a new value also sees the preceding bump of seq and retries.
void store_block(detail::ParamBlock &b, const Params &p)
{
	constexpr auto r = std::memory_order_release;
	b.t_sw.store(p.t_sw, r);
	b.ns_sw.store(p.ns_sw, r);
	b.frac_sw.store(p.frac_sw, r);
	b.m0.store(p.m0, r);
	b.m1.store(p.m1, r);
	b.d_min.store(p.d_min, r);
	b.t_end.store(p.t_end, r);
	b.ns_end.store(p.ns_end, r);
	b.frac_end.store(p.frac_end, r);
	b.m2.store(p.m2, r);
}

// The store that switches readers to copy 0, made only if the TSC is below `deadline` then
// (false: too late, nothing stored). Where the thread has rseq, the check and the store are one
// restartable sequence, so no preemption, migration or signal of this thread comes between them.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
bool switch_to_copy0_before(uint32_t next_seq, uint64_t deadline)
{
	// The sequence stores with a plain mov, a release store on x86 (std::atomic<uint32_t> is a
	// plain uint32_t, static_assert above).
	auto *seq = reinterpret_cast<uint32_t *>(&g_state.seq);
	for (int attempt = 0; attempt < 100; ++attempt) {
		const int rc = rseq::store32_if_tsc_below(seq, next_seq, deadline);
		if (rc >= 0)
			return rc == 1;
		if (!rseq::registered())
			break;
	}
	// No rseq (or interrupted every time): check, then store.
	if (rdtscp_ordered() >= deadline)
		return false;
	g_state.seq.store(next_seq, std::memory_order_release);
	return true;
}

// Publishes p unless the TSC has reached `deadline` by the time copy 0 is written (the
// writer was descheduled): then the old block is put back and false is returned. On success
// *visible is the TSC read just after the new block became visible to every reader.
bool publish(const Params &p, uint64_t deadline, uint64_t *visible)
{
	const uint32_t s = g_state.seq.load(std::memory_order_relaxed); // even (single writer)
	g_state.seq.store(s + 1, std::memory_order_release);            // readers: copy 1 (old block)
	store_block(g_state.block[0], p);
	const bool on_time = switch_to_copy0_before(s + 2, deadline);
	if (!on_time) {
		store_block(g_state.block[0], g_w.cur);
		g_state.seq.store(s + 2, std::memory_order_release); // readers: copy 0, the old block again
	}
	// A full barrier (locked instruction on x86), so that the rdtscp below (which waits for all
	// earlier instructions) reads the TSC after the switch to copy 0 is globally visible.
	g_state.seq.fetch_add(0, std::memory_order_seq_cst);
	if (visible)
		*visible = rdtscp_ordered();
	if (!on_time)
		return false;
	store_block(g_state.block[1], p);
	g_w.cur = p;
	return true;
}

struct Sample {
	uint64_t t1, t2, mono;
};

inline Sample take_sample()
{
	Sample s;
	s.t1 = rdtscp_ordered();
	s.mono = detail::now_vdso();
	s.t2 = rdtscp_ordered();
	return s;
}

// One burst of bracketed samples -> anchor at the last sample's t2, using slope s.
bool measure_anchor(double s, Anchor &out)
{
	for (int attempt = 0; attempt < 4; ++attempt) {
		Sample smp[kBurstSamples];
		for (auto &x : smp)
			x = take_sample();
		const Sample &last = smp[kBurstSamples - 1];
		const uint64_t ref = last.t2;
		double up = std::numeric_limits<double>::infinity();
		double lo = -up;
		for (const auto &x : smp) {
			const double dm = double(int64_t(x.mono - last.mono));
			up = std::min(up, dm + 1.0 + s * double(ref - x.t1));
			lo = std::max(lo, dm + s * double(ref - x.t2));
		}
		const double width = up - lo;
		if (!(width <= kMaxAnchorUncertaintyNs))
			continue; // every sample disturbed: retry
		out.tsc = ref;
		out.mono = last.mono;
		out.off = 0.5 * (up + lo);
		out.upper = up;
		out.width = width;
		return true;
	}
	return false;
}

uint64_t cycles(double seconds) { return uint64_t(seconds * 1e9 / g_w.slope); }

// Least-squares slope (ns per cycle) of CLOCK_MONOTONIC against the TSC over duration_ns.
bool calibrate_slope(uint64_t duration_ns, double &slope, uint64_t &samples)
{
	// Find the typical bracket width first so that disturbed samples can be dropped.
	uint64_t min_w = ~uint64_t(0);
	for (int i = 0; i < 64; ++i) {
		const Sample x = take_sample();
		min_w = std::min(min_w, x.t2 - x.t1);
	}
	const Sample first = take_sample();
	if (g_test_pauses.load(std::memory_order_relaxed) > 0) {
		g_test_pauses.fetch_sub(1, std::memory_order_relaxed);
		const uint64_t pause = g_test_pause_ns.load(std::memory_order_relaxed);
		timespec ts{time_t(pause / 1'000'000'000), long(pause % 1'000'000'000)};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
		}
	}
	long double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
	uint64_t first_kept_mono = 0;
	for (;;) {
		const Sample x = take_sample();
		const uint64_t w = x.t2 - x.t1;
		if (w < min_w)
			min_w = w;
		if (w <= min_w + min_w / 2) {
			if (n == 0)
				first_kept_mono = x.mono;
			const long double xv = 0.5L * ((long double)(x.t1 - first.t1) + (long double)(x.t2 - first.t1));
			const long double yv = (long double)(x.mono - first.mono) + 0.5L;
			n += 1;
			sx += xv;
			sy += yv;
			sxx += xv * xv;
			sxy += xv * yv;
		}
		// Kept samples over the whole window (a preemption before the first
		// one does not shorten it), within a bound.
		const bool spanned = n >= kMinCalibrationSamples && x.mono - first_kept_mono >= duration_ns;
		if (spanned || x.mono - first.mono >= kMaxCalibrationNs)
			break;
	}
	samples = uint64_t(n);
	const long double den = n * sxx - sx * sx;
	if (n < kMinCalibrationSamples || !(den > 0))
		return false;
	slope = double((n * sxy - sx * sy) / den);
	return slope > 1e-3 && slope < 1e3; // 1 MHz .. 1 THz
}

// ---------------------------------------------------------------------------------------
// Environment and cost measurement.

std::string read_small_file(const char *path)
{
	std::string out;
	const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return out;
	char buf[4096];
	for (;;) {
		const ssize_t n = ::read(fd, buf, sizeof buf);
		if (n <= 0)
			break;
		out.append(buf, size_t(n));
		if (out.size() > (1u << 20))
			break;
	}
	::close(fd);
	return out;
}

bool has_word(std::string_view line, std::string_view word)
{
	size_t pos = 0;
	while ((pos = line.find(word, pos)) != std::string_view::npos) {
		const bool left = pos == 0 || line[pos - 1] == ' ' || line[pos - 1] == '\t';
		const size_t end = pos + word.size();
		const bool right = end == line.size() || line[end] == ' ' || line[end] == '\n';
		if (left && right)
			return true;
		pos = end;
	}
	return false;
}

#endif // TRACERY_CLOCK_HAVE_TSC

// Whether the TSC backend may be chosen automatically; *note says why (not).
bool tsc_eligible(const char **note)
{
#if TRACERY_CLOCK_HAVE_TSC
	std::string cs = read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource");
	while (!cs.empty() && (cs.back() == '\n' || cs.back() == ' '))
		cs.pop_back();
	// kvm-clock and Hyper-V's TSC page are the TSC scaled by the hypervisor: the kernel (and
	// its vDSO) compute CLOCK_MONOTONIC from an rdtsc, as with the tsc clocksource, so the
	// bracketed samples of the calibration bound it just as well.
	const bool tsc_based = cs == "tsc" || cs == "kvm-clock" || cs == "hyperv_clocksource_tsc_page";
	if (!tsc_based) {
		*note = "kernel clocksource is not derived from the TSC";
		return false;
	}
	const std::string cpuinfo = read_small_file("/proc/cpuinfo");
	const size_t p = cpuinfo.find("\nflags");
	const size_t e = p == std::string::npos ? p : cpuinfo.find('\n', p + 1);
	const std::string_view flags =
		p == std::string::npos ? std::string_view()
				       : std::string_view(cpuinfo.data() + p + 1,
	                                                  (e == std::string::npos ? cpuinfo.size() : e) - p - 1);
	if (!has_word(flags, "constant_tsc") || !has_word(flags, "nonstop_tsc")) {
		*note = "TSC lacks constant_tsc/nonstop_tsc";
		return false;
	}
	*note = cs == "tsc" ? "clocksource tsc, constant+nonstop TSC" : "TSC-based clocksource, constant+nonstop TSC";
	return true;
#else
	*note = "no TSC support in this build";
	return false;
#endif
}

// Whether lfence orders rdtsc after every earlier instruction (what tsc-ordered relies on):
// always on Intel, on AMD/Hygon from family 17h (Zen) on. Older AMD parts depend on an MSR
// we cannot check from here.
bool lfence_serializing()
{
#if TRACERY_CLOCK_HAVE_TSC
	unsigned a, b, c, d;
	__cpuid(0, a, b, c, d);
	char vendor[13];
	std::memcpy(vendor, &b, 4);
	std::memcpy(vendor + 4, &d, 4);
	std::memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	__cpuid(1, a, b, c, d);
	unsigned family = (a >> 8) & 0xf;
	if (family == 0xf)
		family += (a >> 20) & 0xff;
	const std::string_view v(vendor);
	return v == "GenuineIntel" || ((v == "AuthenticAMD" || v == "HygonGenuine") && family >= 0x17);
#else
	return false;
#endif
}

template <class F>
double median_ns_per_call(F f)
{
	constexpr int kIters = 256, kReps = 31;
	double v[kReps];
	for (int r = 0; r < kReps; ++r) {
		uint64_t acc = 0;
		const uint64_t a = detail::now_vdso();
		for (int i = 0; i < kIters; ++i)
			acc += f();
		const uint64_t b = detail::now_vdso();
		asm volatile("" : : "r"(acc));
		v[r] = double(b - a) / kIters;
	}
	std::nth_element(v, v + kReps / 2, v + kReps);
	return v[kReps / 2];
}

double cost_vdso()
{
	return median_ns_per_call([] { return detail::now_vdso(); });
}
#if TRACERY_CLOCK_HAVE_TSC
double cost_tsc(Backend b)
{
	if (b == Backend::tsc_ordered)
		return median_ns_per_call([] { return detail::now_tsc<true>(); });
	return median_ns_per_call([] { return detail::now_tsc<false>(); });
}
#endif

void atfork_prepare() { g_mu.lock(); }
void atfork_release() { g_mu.unlock(); }

// ---------------------------------------------------------------------------------------

enum class Want { automatic, tsc, tsc_ordered, vdso };

// The backend TRACERY_CLOCK asks for; a value it does not know is reported
// (base::diagnostic) and means the automatic choice.
Want requested_backend()
{
	const char *env = std::getenv("TRACERY_CLOCK");
	if (!env || !*env)
		return Want::automatic;
	const std::string_view v(env);
	if (v == "tsc")
		return Want::tsc;
	if (v == "tsc-ordered")
		return Want::tsc_ordered;
	if (v == "vdso")
		return Want::vdso;
	if (v != "auto")
		base::diagnostic("ignoring TRACERY_CLOCK='%s' (expected 'tsc', 'tsc-ordered' or 'vdso'); using "
		                 "the automatic clock choice",
		                 env);
	return Want::automatic;
}

void init_locked()
{
	Writer &w = g_w;
	w = Writer{};
	Stats &st = w.st;

	const Want want = requested_backend();
	st.forced = want != Want::automatic;
	st.tsc_eligible = tsc_eligible(&st.tsc_note);
	const Backend tsc_kind = want == Want::tsc_ordered ? Backend::tsc_ordered : Backend::tsc;
	const bool forced_tsc = want == Want::tsc || want == Want::tsc_ordered;

	bool use_tsc = false;
#if TRACERY_CLOCK_HAVE_TSC
	if (forced_tsc || (want == Want::automatic && st.tsc_eligible)) {
		const uint64_t t0 = detail::now_vdso();
		double slope = 0;
		Anchor a;
		bool ok = false;
		for (int attempt = 0; attempt < kCalibrationAttempts && !ok; ++attempt) {
			if (attempt > 0)
				sched_yield(); // (a fresh time slice: the last attempt was preempted)
			st.calibration_attempts = uint64_t(attempt) + 1;
			ok = calibrate_slope(kInitCalibrationNs, slope, st.calibration_samples);
			if (!ok) {
				st.calibration_failure = "a preemption left too few undisturbed samples";
				continue;
			}
			w.slope = slope;
			ok = measure_anchor(slope, a);
			if (!ok)
				st.calibration_failure = "every anchor burst was disturbed";
		}
		if (ok)
			st.calibration_failure = "";
		st.calibration_ns = detail::now_vdso() - t0;
		if (ok) {
			// First block: a single line through the anchor's upper bound.
			Params p;
			const u128 f = fix_add(a.mono, a.upper);
			p.t_sw = p.t_end = a.tsc;
			p.ns_sw = p.ns_end = uint64_t(f >> kFracBits);
			p.frac_sw = p.frac_end = uint64_t(f & ((u128(1) << kFracBits) - 1));
			p.m0 = p.m1 = p.m2 = to_mult(slope);
			p.d_min = -int64_t(cycles(kGuardS));
			publish(p, ~uint64_t(0), nullptr); // mode is still vdso: nobody reads the TSC clock
			w.ring[0] = a;
			w.ring_n = 1;
			w.ring_head = 1;
			w.last_publish_tsc = a.tsc;
			st.anchor_uncertainty_ns = a.width;
			st.tsc_hz = 1e9 / slope;
			st.init_cost_vdso_ns = cost_vdso();
			st.init_cost_tsc_ns = cost_tsc(tsc_kind);
			use_tsc = forced_tsc || st.init_cost_tsc_ns <= kTscMustBeFaster * st.init_cost_vdso_ns;
		} else {
			// The vdso clock is as exact, only slower to read: nothing
			// the program or its trace needs to be told unless asked.
			base::diagnostic("TSC calibration failed %llu times (%s); using the vdso clock",
			                 (unsigned long long)st.calibration_attempts, st.calibration_failure);
		}
		if (forced_tsc && ok && !st.tsc_eligible)
			base::diagnostic("TRACERY_CLOCK=%s forced although the kernel clocksource is not an invariant "
			                 "TSC; timestamps may drift between resyncs",
			                 backend_name(tsc_kind));
		if (want == Want::tsc_ordered && ok && !lfence_serializing())
			base::diagnostic(
				"TRACERY_CLOCK=tsc-ordered: lfence is not known to be serializing on this CPU, "
				"so reads may not be ordered");
	}
#else
	if (forced_tsc)
		base::diagnostic("TRACERY_CLOCK=%s is not available on this CPU; using the vdso clock",
		                 backend_name(tsc_kind));
#endif
	st.backend = use_tsc ? tsc_kind : Backend::vdso;
	st.initialized = true;
	w.initialized = true;
	g_state.mode.store(uint32_t(st.backend), std::memory_order_release);
	g_init_mono.store(detail::now_vdso(), std::memory_order_relaxed);
}

#if TRACERY_CLOCK_HAVE_TSC
void resync_locked()
{
	Writer &w = g_w;
	Stats &st = w.st;
	const Params old = w.cur;

	Anchor a;
	if (!measure_anchor(w.slope, a)) {
		++st.resyncs_skipped;
		return;
	}
	const uint64_t t_now = detail::read_tsc<true>();
	const uint64_t margin = cycles(kSwitchMarginS), guard = cycles(kGuardS);
	// The new block must reproduce the old one on [t_now - guard, t_sw]: only possible where
	// the old one is a single line there (not across its own switch points).
	const bool linear_ahead =
		t_now >= old.t_end + guard || (t_now >= old.t_sw + guard && t_now + margin + guard < old.t_end);
	if (!linear_ahead) {
		++st.resyncs_skipped;
		return;
	}

	// Error of the current clock at the anchor.
	const double err_now = fix_diff_ns(eval_fix(old, a.tsc), fix_add(a.mono, a.off));
	st.last_error_ns = err_now;
	st.max_abs_error_ns = std::max(st.max_abs_error_ns, std::fabs(err_now));
	st.anchor_uncertainty_ns = a.width;

	// Rate: from the newest anchor at least kMinBaselineS older (else the oldest one if
	// usable). A jump of more than 1000 ppm means a discontinuity (suspend, TSC reset):
	// keep the old rate and restart the baseline.
	double slope = w.slope;
	const Anchor *base = nullptr;
	for (int i = 1; i <= w.ring_n; ++i) {
		const Anchor &c = w.ring[(w.ring_head - i + kAnchorRing) % kAnchorRing];
		const double span_s = double(a.tsc - c.tsc) * w.slope * 1e-9;
		if (span_s >= kMinUsableBaselineS)
			base = &c;
		if (span_s >= kMinBaselineS)
			break;
	}
	if (base && a.tsc > base->tsc) {
		const double dmono = double(int64_t(a.mono - base->mono)) + (a.off - base->off);
		const double est = dmono / double(a.tsc - base->tsc);
		if (std::fabs(est / w.slope - 1) <= kRateJumpLimit) {
			slope = est;
		} else {
			w.ring_n = 0;
		}
	}
	w.ring[w.ring_head] = a;
	w.ring_head = (w.ring_head + 1) % kAnchorRing;
	w.ring_n = std::min(w.ring_n + 1, kAnchorRing);
	w.slope = slope;
	st.tsc_hz = 1e9 / slope;

	// New block.
	Params p;
	p.t_sw = t_now + margin;
	p.m0 = slope_at(old, t_now);
	p.d_min = -int64_t(margin + guard);
	p.m2 = to_mult(slope);
	const u128 f_old = eval_fix(old, p.t_sw);
	const u128 f_target = fix_add(a.mono, a.off + slope * double(p.t_sw - a.tsc));
	const double err = fix_diff_ns(f_old, f_target); // > 0: we are ahead
	const double interval_s = double(t_now - w.last_publish_tsc) * slope * 1e-9;
	const double horizon_s = std::clamp(0.5 * interval_s, 0.02, 1.0);
	const uint64_t horizon = uint64_t(horizon_s * 1e9 / slope);
	const u128 mask = (u128(1) << kFracBits) - 1;
	u128 f_sw = f_old;
	if (err < 0 && -err > kSlewCap * horizon_s * 1e9) {
		// Behind by more than a slew can recover in time: step forward.
		f_sw = f_target;
		p.m1 = p.m2;
		p.t_end = p.t_sw;
		++st.steps_forward;
	} else {
		const double cap = err > kLargeAheadNs ? kLargeAheadSlewCap : kSlewCap;
		const double rel = std::clamp(-err / (horizon_s * 1e9), -cap, cap);
		p.m1 = to_mult(slope * (1 + rel));
		p.t_end = p.t_sw + horizon;
	}
	const u128 fe = (p.t_end == p.t_sw) ? f_sw : f_sw + u128(p.t_end - p.t_sw) * p.m1;
	p.ns_sw = uint64_t(f_sw >> kFracBits);
	p.frac_sw = uint64_t(f_sw & mask);
	p.ns_end = uint64_t(fe >> kFracBits);
	p.frac_end = uint64_t(fe & mask);

	// Abandon if the writer was held up until 1 ms before the switch point; count it as late
	// if the block only became visible after the switch point anyway (see top of file).
	uint64_t visible = 0;
	if (!publish(p, p.t_sw - guard, &visible)) {
		++st.resyncs_skipped;
		++st.late_publishes;
		return;
	}
	if (visible >= p.t_sw) {
		++st.late_publishes;
		st.max_overrun_ns = std::max(st.max_overrun_ns, double(visible - p.t_sw) * w.slope);
	}
	w.last_publish_tsc = t_now;
	++st.resyncs;
}
#endif

} // namespace

void init()
{
	if (g_ready.load(std::memory_order_acquire))
		return;
	std::call_once(g_atfork_once, [] { pthread_atfork(atfork_prepare, atfork_release, atfork_release); });
	std::lock_guard<std::mutex> lk(g_mu);
	if (g_ready.load(std::memory_order_relaxed))
		return;
	init_locked();
	g_ready.store(true, std::memory_order_release);
}

void resync() noexcept
{
#if TRACERY_CLOCK_HAVE_TSC
	if (!g_ready.load(std::memory_order_acquire))
		return;
	std::lock_guard<std::mutex> lk(g_mu);
	if (!g_w.initialized || !is_tsc(g_w.st.backend))
		return;
	resync_locked();
#endif
}

uint64_t resync_interval_ns() noexcept
{
	constexpr uint64_t kMin = 50'000'000, kMax = 1'000'000'000;
	if (!g_ready.load(std::memory_order_acquire) || !is_tsc(backend()))
		return kMax;
	const uint64_t age = detail::now_vdso() - g_init_mono.load(std::memory_order_relaxed);
	return std::clamp(age, kMin, kMax); // next resync when the age has about doubled
}

Backend backend() noexcept { return Backend(g_state.mode.load(std::memory_order_acquire)); }

const char *backend_name(Backend b) noexcept
{
	switch (b) {
	case Backend::tsc:
		return "tsc";
	case Backend::tsc_ordered:
		return "tsc-ordered";
	default:
		return "vdso";
	}
}

const char *backend_name() noexcept { return backend_name(backend()); }

int64_t realtime_offset_ns() noexcept
{
	uint64_t best = ~uint64_t(0);
	int64_t off = 0;
	for (int i = 0; i < 16; ++i) {
		const uint64_t a = now();
		timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		const uint64_t b = now();
		const int64_t rt = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
		if (b - a < best) {
			best = b - a;
			off = rt - int64_t(a + (b - a) / 2);
		}
	}
	return off;
}

TickUnit preferred_tick_unit() noexcept { return is_tsc(backend()) ? TickUnit::tsc : TickUnit::ns; }

namespace {

bool clock_env_is(std::string_view name)
{
	const char *env = std::getenv("TRACERY_CLOCK");
	return env && name == env;
}

} // namespace

TickSource tick_source(TickUnit unit) noexcept
{
#if TRACERY_CLOCK_HAVE_TSC
	if (unit == TickUnit::tsc) {
		// Before init(), what it would choose without calibrating: only
		// TRACERY_CLOCK makes the backend tsc-ordered (a value it does not
		// know is reported once, as init() would).
		static std::atomic<bool> reported{false};
		bool ordered;
		if (g_ready.load(std::memory_order_acquire))
			ordered = backend() == Backend::tsc_ordered;
		else if (!reported.exchange(true, std::memory_order_relaxed))
			ordered = requested_backend() == Want::tsc_ordered;
		else
			ordered = clock_env_is("tsc-ordered");
		return ordered ? TickSource::tsc_ordered : TickSource::tsc;
	}
#else
	(void)unit;
#endif
	return TickSource::ns;
}

const char *tick_unit_name(TickUnit unit) noexcept { return unit == TickUnit::tsc ? "tsc" : "ns"; }

bool parse_tick_unit(std::string_view name, TickUnit &unit) noexcept
{
	for (TickUnit u : {TickUnit::ns, TickUnit::tsc}) {
		if (name == tick_unit_name(u)) {
			unit = u;
			return true;
		}
	}
	return false;
}

TickScale tick_scale(TickUnit unit)
{
	if (unit == TickUnit::ns)
		return ns_tick_scale(realtime_offset_ns());
#if TRACERY_CLOCK_HAVE_TSC
	const double hz = stats().tsc_hz;
	if (!(hz > 0))
		throw std::logic_error("tracery clock: tick_scale(tsc) in a process whose TSC was never calibrated");
	TickScale s;
	s.freq_hz = uint64_t(std::llround(hz));
	s.description = "TSC cycles (time of day measured at trace start)";
	// CLOCK_REALTIME at the middle of the narrowest bracket of TSC reads.
	uint64_t best = ~uint64_t(0), t_mid = 0;
	int64_t rt_ns = 0;
	for (int i = 0; i < 16; ++i) {
		const uint64_t a = detail::read_tsc<true>();
		timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		const uint64_t b = detail::read_tsc<true>();
		if (b - a < best) {
			best = b - a;
			t_mid = a + (b - a) / 2;
			rt_ns = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
		}
	}
	// CLOCK_REALTIME of tick 0 in ns, then split into whole seconds and ticks.
	constexpr i128 kNs = 1000000000;
	const i128 t0 = i128(rt_ns) - i128(t_mid) * kNs / i128(s.freq_hz);
	i128 sec = t0 / kNs, rem = t0 % kNs;
	if (rem < 0) {
		rem += kNs;
		sec -= 1;
	}
	s.offset_s = int64_t(sec);
	s.offset_ticks = uint64_t(rem * i128(s.freq_hz) / kNs);
	return s;
#else
	throw std::logic_error("tracery clock: tick_scale(tsc) in a build without TSC support");
#endif
}

std::vector<BackendCost> measure_backends()
{
	std::vector<BackendCost> out;
	out.push_back({Backend::vdso, "vdso", true, cost_vdso()});
	for (Backend b : {Backend::tsc, Backend::tsc_ordered}) {
#if TRACERY_CLOCK_HAVE_TSC
		out.push_back({b, backend_name(b), true, cost_tsc(b)});
#else
		out.push_back({b, backend_name(b), false, 0});
#endif
	}
	return out;
}

Stats stats()
{
	std::lock_guard<std::mutex> lk(g_mu);
	Stats s = g_w.st;
	s.backend = backend();
	return s;
}

std::string report()
{
	init();
	const Stats s = stats();
	const auto costs = measure_backends();
	char buf[512];
	std::string out;
	std::snprintf(buf, sizeof buf, "tracery clock: backend %s (%s; tsc %s: %s)\n", backend_name(),
	              s.forced ? "forced by TRACERY_CLOCK" : "automatic", s.tsc_eligible ? "eligible" : "not eligible",
	              s.tsc_note);
	out += buf;
	for (const auto &c : costs) {
		if (c.available)
			std::snprintf(buf, sizeof buf, "  %-11s %6.1f ns per now() (median)\n", c.name, c.ns_per_read);
		else
			std::snprintf(buf, sizeof buf, "  %-11s unavailable on this CPU\n", c.name);
		out += buf;
	}
	if (*s.calibration_failure) {
		std::snprintf(buf, sizeof buf, "  TSC calibration failed %llu times: %s\n",
		              (unsigned long long)s.calibration_attempts, s.calibration_failure);
		out += buf;
	}
	if (s.tsc_hz > 0) {
		std::snprintf(
			buf, sizeof buf,
			"  tsc %.6f MHz; init calibration %.2f ms (%llu attempts), %llu samples; anchor bracket %.1f ns\n"
			"  resyncs %llu (skipped %llu, forward steps %llu, late %llu); last error %.1f ns, max %.1f ns\n",
			s.tsc_hz * 1e-6, double(s.calibration_ns) * 1e-6, (unsigned long long)s.calibration_attempts,
			(unsigned long long)s.calibration_samples, s.anchor_uncertainty_ns,
			(unsigned long long)s.resyncs, (unsigned long long)s.resyncs_skipped,
			(unsigned long long)s.steps_forward, (unsigned long long)s.late_publishes, s.last_error_ns,
			s.max_abs_error_ns);
		out += buf;
	}
	return out;
}

namespace detail {

void reset_for_testing()
{
	std::lock_guard<std::mutex> lk(g_mu);
	g_state.mode.store(uint32_t(Backend::vdso), std::memory_order_release);
	g_w = Writer{};
	g_ready.store(false, std::memory_order_release);
}

void disturb_calibration_for_testing(uint64_t pause_ns, int calibrations)
{
	g_test_pause_ns.store(pause_ns, std::memory_order_relaxed);
	g_test_pauses.store(calibrations, std::memory_order_relaxed);
}

bool perturb_for_testing(int64_t ahead_ns)
{
#if TRACERY_CLOCK_HAVE_TSC
	std::lock_guard<std::mutex> lk(g_mu);
	if (!g_w.initialized || !is_tsc(g_w.st.backend) || ahead_ns < 0)
		return false;
	const Params old = g_w.cur;
	const uint64_t t = detail::read_tsc<true>();
	const uint64_t guard = cycles(kGuardS);
	// As in resync(): the old block must be a single line around t (readers still holding
	// it then never get ahead of the new one, which is the old line plus ahead_ns).
	const bool linear = t >= old.t_end + guard || (t >= old.t_sw + guard && t + guard < old.t_end);
	if (!linear)
		return false;
	const uint64_t m = slope_at(old, t);
	const u128 f = eval_fix(old, t) + (u128(uint64_t(ahead_ns)) << kFracBits);
	Params p;
	p.t_sw = p.t_end = t;
	p.ns_sw = p.ns_end = uint64_t(f >> kFracBits);
	p.frac_sw = p.frac_end = uint64_t(f & ((u128(1) << kFracBits) - 1));
	p.m0 = p.m1 = p.m2 = m;
	p.d_min = -int64_t(guard);
	// A forward step with the old slope: readers of either block never see it go back.
	publish(p, ~uint64_t(0), nullptr);
	return true;
#else
	(void)ahead_ns;
	return false;
#endif
}

} // namespace detail

} // namespace tracery::clock
