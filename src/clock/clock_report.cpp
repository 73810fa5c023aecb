// tracery-clock-report: prints the trace clock's backend and the measured cost of now()
// for each backend (used by the docs), and optionally measures agreement with
// CLOCK_MONOTONIC over time and between two independently calibrated processes.
//
//   tracery-clock-report                      backend + ns per now() for each backend
//   tracery-clock-report --seconds N          + error vs CLOCK_MONOTONIC for N s, resyncing
//   tracery-clock-report --seconds N --cross-process
//                                             + offset between two processes (ping-pong)
//   --resync-1hz: resync at a plain 1 Hz instead of following resync_interval_ns()
//   TRACERY_CLOCK_REPORT_VERBOSE=1: print every ping-pong burst
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "clock/trace_clock.hpp"

namespace tc = tracery::clock;

namespace {

uint64_t mono() { return tc::detail::now_vdso(); }

void sleep_ns(uint64_t ns)
{
	timespec ts{time_t(ns / 1000000000u), long(ns % 1000000000u)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

bool g_fixed_1hz = false;

// The runtime's background thread, simulated: resync() after resync_interval_ns(), or at a
// plain 1 Hz with --resync-1hz.
struct Resyncer {
	std::atomic<bool> stop{false};
	std::thread th;
	Resyncer()
	{
		th = std::thread([this] {
			while (!stop.load()) {
				const uint64_t end = mono() + (g_fixed_1hz ? 1'000'000'000u : tc::resync_interval_ns());
				while (!stop.load() && mono() < end)
					sleep_ns(std::min<uint64_t>(end - mono(), 10'000'000));
				if (!stop.load())
					tc::resync();
			}
		});
	}
	~Resyncer()
	{
		stop = true;
		th.join();
	}
};

double percentile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	const size_t k = std::min(v.size() - 1, size_t(q * double(v.size())));
	std::nth_element(v.begin(), v.begin() + long(k), v.end());
	return v[k];
}

// now() - CLOCK_MONOTONIC, from the tightest of a few brackets; returns half the bracket.
double error_sample(double &half_bracket)
{
	double best_w = 1e18, err = 0;
	for (int i = 0; i < 8; ++i) {
		const uint64_t b = mono();
		const uint64_t o = tc::now();
		const uint64_t a = mono();
		const double w = double(a - b);
		if (w < best_w) {
			best_w = w;
			err = double(int64_t(o - b)) - w / 2;
		}
	}
	half_bracket = best_w / 2;
	return err;
}

void agreement(int seconds)
{
	std::printf("\nagreement with CLOCK_MONOTONIC (%s backend), 1 sample/ms, resync %s:\n", tc::backend_name(),
	            g_fixed_1hz ? "at 1 Hz" : "per resync_interval_ns()");
	std::printf("  second   max|err| ns   median err ns\n");
	Resyncer r;
	std::vector<double> all;
	double worst_half = 0;
	for (int s = 0; s < seconds; ++s) {
		std::vector<double> sec;
		const uint64_t end = mono() + 1'000'000'000u;
		while (mono() < end) {
			double half;
			sec.push_back(error_sample(half));
			worst_half = std::max(worst_half, half);
			sleep_ns(1'000'000);
		}
		double mx = 0;
		for (double e : sec)
			mx = std::max(mx, std::fabs(e));
		std::printf("  %6d   %11.1f   %13.1f\n", s + 1, mx, percentile(sec, 0.5));
		all.insert(all.end(), sec.begin(), sec.end());
	}
	std::vector<double> absv;
	for (double e : all)
		absv.push_back(std::fabs(e));
	std::printf("  overall: %zu samples, |err| median %.1f ns, p99 %.1f ns, max %.1f ns "
	            "(each +/- at most %.1f ns of bracket)\n",
	            all.size(), percentile(absv, 0.5), percentile(absv, 0.99), percentile(absv, 1.0), worst_half);
}

struct Shared {
	std::atomic<uint32_t> turn; // 0 idle, 1 child's move, 2 parent's move, 3 stop
	std::atomic<uint32_t> child_ready;
	std::atomic<uint32_t> burst; // 1 while the parent runs a burst: the child spins
	std::atomic<uint64_t> val;
	std::atomic<int64_t> fwd;
};

// Offset between two independently calibrated processes, bounded by ping-pong: the parent
// reads A and hands it over, the child reads B after seeing it (B - A >= child - parent),
// then the reverse. delta = child - parent lies in [-min(rev), min(fwd)]; the midpoint is
// the estimate (exact if both directions have the same latency). Bursts whose interval is
// wider than 400 ns (a process was descheduled) are not used for the estimate. A negative
// fwd or rev is a causality violation: a read that happened after another process's read
// returned an earlier time.
void cross_process(int seconds)
{
	void *mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		std::perror("mmap");
		return;
	}
	auto *sh = new (mem) Shared{};
	std::fflush(stdout);
	const pid_t pid = fork();
	if (pid == 0) {
		tc::detail::reset_for_testing(); // calibrate independently, like a separate process
		tc::init();
		Resyncer r;
		sh->child_ready.store(1);
		for (;;) {
			uint32_t t;
			int spins = 0;
			while ((t = sh->turn.load(std::memory_order_acquire)) != 1 && t != 3)
				if (++spins > 2000 && !sh->burst.load(std::memory_order_relaxed))
					sleep_ns(20'000);
			if (t == 3)
				break;
			const uint64_t b = tc::now();
			sh->fwd.store(int64_t(b - sh->val.load(std::memory_order_relaxed)), std::memory_order_relaxed);
			sh->val.store(tc::now(), std::memory_order_relaxed);
			sh->turn.store(2, std::memory_order_release);
		}
		_exit(0);
	}
	while (!sh->child_ready.load())
		sleep_ns(1'000'000);
	const bool verbose = std::getenv("TRACERY_CLOCK_REPORT_VERBOSE") != nullptr;
	std::printf("\ncross-process offset delta = child - parent (child calibrated at t=0, both resyncing),\n"
	            "10 bursts of 1000 round trips per second:\n");
	std::printf("  second   tight bursts   delta interval envelope (ns)   max |estimate| ns\n");
	int64_t violations = 0, rounds = 0;
	double worst_overall = 0;
	for (int s = 0; s < seconds; ++s) {
		int64_t lo_all = INT64_MAX, hi_all = INT64_MIN;
		double worst_est = 0;
		int tight = 0;
		for (int burst = 0; burst < 10; ++burst) {
			sh->burst.store(1);
			sleep_ns(200'000); // let the child notice and start spinning
			int64_t min_fwd = INT64_MAX, min_rev = INT64_MAX;
			for (int i = 0; i < 1000; ++i) {
				sh->val.store(tc::now(), std::memory_order_relaxed);
				sh->turn.store(1, std::memory_order_release);
				while (sh->turn.load(std::memory_order_acquire) != 2) {
				}
				const uint64_t a2 = tc::now();
				const int64_t rev = int64_t(a2 - sh->val.load(std::memory_order_relaxed));
				const int64_t fwd = sh->fwd.load(std::memory_order_relaxed);
				violations += (fwd < 0) + (rev < 0);
				++rounds;
				min_fwd = std::min(min_fwd, fwd);
				min_rev = std::min(min_rev, rev);
			}
			sh->burst.store(0);
			const double est = 0.5 * double(min_fwd - min_rev);
			if (verbose)
				std::printf("    burst: [%lld, %lld] est %.1f\n", (long long)-min_rev,
				            (long long)min_fwd, est);
			if (min_fwd + min_rev <= 400) {
				++tight;
				lo_all = std::min(lo_all, -min_rev);
				hi_all = std::max(hi_all, min_fwd);
				worst_est = std::max(worst_est, std::fabs(est));
			}
			sleep_ns(80'000'000);
		}
		worst_overall = std::max(worst_overall, worst_est);
		if (tight)
			std::printf("  %6d   %12d   [%6lld, %6lld]               %8.1f\n", s + 1, tight,
			            (long long)lo_all, (long long)hi_all, worst_est);
		else
			std::printf("  %6d   %12d\n", s + 1, tight);
	}
	sh->turn.store(3, std::memory_order_release);
	waitpid(pid, nullptr, 0);
	std::printf("  worst |offset estimate| %.1f ns; causality violations: %lld of %lld handoffs\n", worst_overall,
	            (long long)violations, (long long)(2 * rounds));
	munmap(mem, sizeof(Shared));
}

} // namespace

int main(int argc, char **argv)
{
	int seconds = 0;
	bool cross = false;
	for (int i = 1; i < argc; ++i) {
		if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = std::atoi(argv[++i]);
		} else if (!std::strcmp(argv[i], "--cross-process")) {
			cross = true;
		} else if (!std::strcmp(argv[i], "--resync-1hz")) {
			g_fixed_1hz = true;
		} else {
			std::fprintf(stderr, "usage: %s [--seconds N [--cross-process] [--resync-1hz]]\n", argv[0]);
			return 2;
		}
	}
	tc::init();
	std::fputs(tc::report().c_str(), stdout);
	if (seconds > 0)
		agreement(seconds);
	if (seconds > 0 && cross)
		cross_process(seconds);
	if (seconds > 0)
		std::fputs(('\n' + tc::report()).c_str(), stdout);
	return 0;
}
