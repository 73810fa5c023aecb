// ring_buffer_rseq_test.cpp — tests of the ring buffer's Sync::rseq mode (writes through restartable sequences on
// the buffer's own CPU): (1) discard mode under forced migrations (a "chaos" thread keeps changing the producers'
// CPU affinity), SIGUSR1 handlers that write records from inside the producers' reserve/commit windows and a
// consumer that streams and flushes (pinned) concurrently: every record is read intact exactly once or counted
// lost, lands in the buffer of the CPU it was reserved on, and each slot's committed prefix and out-of-order
// counter add up exactly; (2) overwrite mode under the same load: every snapshot is intact and ordered in time;
// (3) deterministic checks of the retargeting to the caller's CPU, of commits after a migration and out of order,
// and of flush; (4) a stale CPU hint is not dropped because of the hinted buffer's state; (5) when the last two
// commits of a sub-buffer race (one moving the prefix, one out of order), the completion is still seen and the
// consumer woken.
// Every test is skipped when the thread cannot use rseq (ThreadSanitizer builds, valgrind, old glibc).
// RINGBUF_RSEQ_RECORDS=<n per producer> overrides the size of the stress runs.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/cpu.hpp"
#include "base/monotonic.hpp"
#include "ringbuf/ring_buffer.hpp"
#include "ringbuf/test_internals.hpp"
#include "ringbuf/test_records.hpp"
#include "rseq/rseq.hpp"

namespace tracery::ringbuf {
namespace {

using namespace testing;
using Reservation = Channel::Reservation;
using SubbufView = Channel::SubbufView;

constexpr const char *kNoRseq =
	"rseq is not available to this thread (ThreadSanitizer build, valgrind, glibc without rseq or "
	"glibc.pthread.rseq=0): Sync::rseq channels cannot be written";

constexpr uint64_t kDefaultRecords = 200'000; // per producer thread
constexpr uint32_t kProducers = 4;
constexpr uint32_t kIds = 2 * kProducers; // producer threads, then their signal handlers
constexpr uint32_t kM = 4;
constexpr uint32_t kS = 16384;
// The record's seq field carries the CPU of its reservation (r.cpu) in its high bits, checked against the buffer
// it is read from.
constexpr uint32_t kCpuShift = 48;
constexpr uint64_t kSeqMask = (uint64_t{1} << kCpuShift) - 1;

uint64_t records_per_producer()
{
	if (const char *e = std::getenv("RINGBUF_RSEQ_RECORDS"))
		return std::strtoull(e, nullptr, 10);
	return kDefaultRecords;
}

uint32_t config_cpus() { return base::possible_cpus(); }

Config rseq_config(Mode mode, uint32_t num_cpus, uint32_t num_subbuf, uint32_t subbuf_size)
{
	Config c = ctf_config(mode, num_cpus, num_subbuf, subbuf_size);
	c.sync = Sync::rseq;
	return c;
}

std::vector<uint32_t> cpus_of(const cpu_set_t &set)
{
	std::vector<uint32_t> v;
	for (uint32_t c = 0; c < CPU_SETSIZE; ++c)
		if (CPU_ISSET(c, &set))
			v.push_back(c);
	return v;
}

cpu_set_t my_affinity()
{
	cpu_set_t set;
	CPU_ZERO(&set);
	sched_getaffinity(0, sizeof set, &set);
	return set;
}

// Pins the calling thread to `cpu` and waits until its rseq area confirms it runs there.
bool pin_to(uint32_t cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) != 0)
		return false;
	for (int i = 0; i < 10000 && rseq::current_cpu() != static_cast<int32_t>(cpu); ++i)
		sched_yield();
	return rseq::current_cpu() == static_cast<int32_t>(cpu);
}

class AffinityGuard { // restores the calling thread's affinity
public:
	AffinityGuard() : saved_(my_affinity()) {}
	~AffinityGuard() { sched_setaffinity(0, sizeof saved_, &saved_); }
	AffinityGuard(const AffinityGuard &) = delete;
	AffinityGuard &operator=(const AffinityGuard &) = delete;
	const cpu_set_t &saved() const { return saved_; }

private:
	cpu_set_t saved_;
};

// ---------------------------------------------------------------------------------------------------------------
// Stress: producers, their SIGUSR1 handlers and the chaos thread.

// Global state shared with the signal handler (which only touches lock-free atomics and its thread's own data).
Channel *g_channel = nullptr;
uint32_t g_num_cpus = 1;
std::unique_ptr<std::atomic<uint64_t>[]> g_max_end; // per buffer: highest record end offset committed

struct alignas(64) Emitter { // one per id, used by one thread (or, for ids >= kProducers, its signal handler) only
	uint64_t next_seq = 0;
	uint64_t drops = 0;            // reserve() returned false
	uint64_t retargeted = 0;       // r.cpu != the CPU read just before reserve(): migrated in between
	uint64_t wrong_hint = 0;       // reserve() given another CPU than the current one on purpose
	uint64_t wrong_hint_moved = 0; // ... and the record went elsewhere than the hint (as it must, unless migrated)
	uint64_t wrong_hint_kept = 0;  // ... and it went to the hinted buffer (only if migrated there meanwhile)
	uint64_t wrong_hint_dropped = 0;  // ... and it was dropped
	uint64_t moved_before_commit = 0; // on another CPU than r.cpu just before commit (remote commit, nearly always)
	uint64_t bad_cpu = 0;             // rseq::current_cpu() out of range (must stay 0)
};
Emitter g_emitters[kIds];

struct ThreadCtx {
	uint32_t producer = 0;
	volatile sig_atomic_t in_record = 0;
	std::atomic<uint32_t> cpu{0};        // buffer of the last reservation, for the chaos thread
	uint64_t signals = 0;                // SIGUSR1 handled (written by the handler only)
	uint64_t interrupted_mid_record = 0; // ... of which between reserve and commit of the interrupted code
	int64_t kernel_migrations = -1;      // se.nr_migrations of the thread at the end (-1: unknown)
	void reset(uint32_t p)
	{
		producer = p;
		in_record = 0;
		cpu.store(0);
		signals = interrupted_mid_record = 0;
		kernel_migrations = -1;
	}
};
thread_local ThreadCtx *t_ctx = nullptr;

// Emits one record for `id` on the CPU the thread runs on (now and then deliberately on another one); records
// r.cpu in the seq field. Async-signal-safe.
void emit(ThreadCtx *ctx, uint32_t id, bool flag_window)
{
	Emitter &em = g_emitters[id];
	const int32_t here = rseq::current_cpu();
	if (here < 0 || static_cast<uint32_t>(here) >= g_num_cpus) {
		em.bad_cpu++;
		return;
	}
	const uint64_t seq = em.next_seq++;
	uint32_t filler = static_cast<uint32_t>((seq * 2654435761u) >> 26) & 63;
	if (seq % 509 == 0)
		filler = 1200 + static_cast<uint32_t>(seq % 800); // big records: long windows, switches
	uint32_t want = static_cast<uint32_t>(here);
	const bool wrong = g_num_cpus > 1 && seq % 97 == 5;
	if (wrong) {
		want = (want + 1) % g_num_cpus;
		em.wrong_hint++;
	}
	Reservation r;
	if (!g_channel->reserve(want, kPayloadFixed + filler, seq % 13 != 0, base::monotonic_ns, r)) {
		em.drops++;
		if (wrong)
			em.wrong_hint_dropped++;
		return;
	}
	if (r.cpu != want)
		(wrong ? em.wrong_hint_moved : em.retargeted)++;
	if (wrong && r.cpu == want)
		em.wrong_hint_kept++;
	ctx->cpu.store(r.cpu, std::memory_order_relaxed);
	if (flag_window)
		ctx->in_record = 1;
	write_record(r, id, (uint64_t{r.cpu} << kCpuShift) | seq, filler);
	if (flag_window)
		ctx->in_record = 0;
	if (rseq::current_cpu() != static_cast<int32_t>(r.cpu))
		em.moved_before_commit++;
	g_channel->commit(r);
	std::atomic<uint64_t> &mx = g_max_end[r.cpu];
	uint64_t cur = mx.load(std::memory_order_relaxed);
	while (cur < r.offset + r.size &&
	       !mx.compare_exchange_weak(cur, r.offset + r.size, std::memory_order_relaxed)) {
	}
}

void on_sigusr1(int)
{
	const int saved = errno;
	if (ThreadCtx *t = t_ctx) {
		t->signals++;
		if (t->in_record)
			t->interrupted_mid_record++;
		emit(t, t->producer + kProducers, false);
	}
	errno = saved;
}

// Migrations of the calling thread counted by the scheduler (/proc/thread-self/sched, CONFIG_SCHED_DEBUG); -1 if
// unavailable.
int64_t kernel_migrations()
{
	FILE *f = std::fopen("/proc/thread-self/sched", "r");
	if (!f)
		return -1;
	char line[256];
	int64_t n = -1;
	while (std::fgets(line, sizeof line, f))
		if (std::strncmp(line, "se.nr_migrations", 16) == 0) {
			const char *colon = std::strchr(line, ':');
			if (colon)
				n = std::strtoll(colon + 1, nullptr, 10);
		}
	std::fclose(f);
	return n;
}

void sleep_us(long us)
{
	timespec ts{0, us * 1000};
	nanosleep(&ts, nullptr);
}

// Checks parsed sub-buffers: intact records, a producer id in range, r.cpu (from the seq field) equal to the
// buffer, per (id, buffer) seqs strictly increasing (one thread's records are in buffer order), and with `once`
// every (id, seq) seen at most once.
struct Verifier {
	explicit Verifier(uint32_t num_cpus)
		: num_cpus(num_cpus), last_seq(kIds * num_cpus, 0), has_last(kIds * num_cpus, false)
	{
	}
	uint32_t num_cpus;
	std::vector<uint64_t> last_seq;
	std::vector<bool> has_last;
	std::vector<std::vector<bool>> seen{kIds};
	uint64_t read[kIds] = {};
	uint64_t records = 0, subbufs = 0, extended = 0;
	uint64_t first_ts = 0, last_ts = 0; // of the last sub-buffer checked
	std::string error;

	bool check(const SubbufView &v, bool once)
	{
		bool first = true;
		std::string e = parse_subbuf(v, [&](const ParsedRecord &rec) {
			if (!error.empty())
				return;
			if (first)
				first_ts = rec.ts;
			first = false;
			last_ts = rec.ts;
			auto where = [&] {
				return "cpu " + std::to_string(v.cpu) + " subbuf " + std::to_string(v.seq) + " pos " +
				       std::to_string(rec.pos) + ": ";
			};
			if (rec.producer >= kIds) {
				error = where() + "bad producer " + std::to_string(rec.producer);
				return;
			}
			const uint32_t p = rec.producer;
			const uint64_t tag_cpu = rec.seq >> kCpuShift, seq = rec.seq & kSeqMask;
			if (tag_cpu != v.cpu) {
				error = where() + "record of id " + std::to_string(p) + " seq " + std::to_string(seq) +
				        " was reserved with r.cpu = " + std::to_string(tag_cpu);
				return;
			}
			const std::size_t slot = std::size_t{p} * num_cpus + v.cpu;
			if (has_last[slot] && seq <= last_seq[slot]) {
				error = where() + "id " + std::to_string(p) + " seq " + std::to_string(seq) +
				        " after " + std::to_string(last_seq[slot]);
				return;
			}
			has_last[slot] = true;
			last_seq[slot] = seq;
			if (once) {
				if (seen[p].size() <= seq)
					seen[p].resize(seq + 4096);
				if (seen[p][seq]) {
					error = where() + "id " + std::to_string(p) + " seq " + std::to_string(seq) +
					        " read twice";
					return;
				}
				seen[p][seq] = true;
			}
			read[p]++;
			records++;
			if (rec.header_size == kExtendedHs)
				extended++;
		});
		subbufs++;
		if (error.empty() && !e.empty())
			error = e;
		if (error.empty() && first)
			error = "empty sub-buffer handed out (cpu " + std::to_string(v.cpu) + ")";
		return error.empty();
	}
};

class RingBufferRseqStress : public ::testing::Test {
protected:
	void SetUp() override
	{
		num_cpus_ = config_cpus();
		g_num_cpus = num_cpus_;
		full_ = my_affinity();
		allowed_ = cpus_of(full_);
		g_max_end.reset(new std::atomic<uint64_t>[num_cpus_]());
		for (auto &em : g_emitters)
			em = Emitter{};
		seed_ = std::random_device{}();
		// Only producer threads take SIGUSR1 (each unblocks it for itself).
		ASSERT_TRUE(install_producer_signal(SIGUSR1, on_sigusr1, &old_action_, &old_mask_));
	}
	void TearDown() override
	{
		stop_chaos();
		release_producers();
		sigaction(SIGUSR1, &old_action_, nullptr);
		pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
		g_channel = nullptr;
		g_max_end.reset();
	}

	// Starts the producers (each emits n records from its main loop) and the chaos thread.
	void start(uint64_t n)
	{
		t0_ = std::chrono::steady_clock::now();
		std::atomic<uint32_t> ready{0};
		for (uint32_t p = 0; p < kProducers; ++p) {
			ctx_[p].reset(p);
			producers_.emplace_back([this, p, n, &ready] { producer_main(&ctx_[p], n, &ready); });
		}
		while (ready.load() < kProducers)
			std::this_thread::yield();
		chaos_ = std::thread([this] { chaos_main(); });
	}

	void producer_main(ThreadCtx *ctx, uint64_t n, std::atomic<uint32_t> *ready)
	{
		t_ctx = ctx;
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
		// Below the chaos thread and the consumer: their short sleeps must end on time on a machine with fewer cores
		// than busy threads.
		setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
		ready->fetch_add(1);
		for (uint64_t i = 0; i < n; ++i) {
			// Blocks of 4096 records: a burst of 2048 that overflows the buffers (drops), then 2048 in small bursts
			// that the consumer keeps up with; the run lasts long enough for many migrations and signals.
			if ((i & 4095) >= 2048 && (i & 31) == 31)
				sleep_through_signals(200'000);
			emit(ctx, ctx->producer, true);
		}
		pthread_sigmask(SIG_BLOCK, &set, nullptr);
		t_ctx = nullptr;
		ctx->kernel_migrations = kernel_migrations();
		finished_.fetch_add(1);
		// Stay alive until the chaos thread is done with our handle (pthread_setaffinity_np on an exited thread would
		// act on the caller).
		while (!release_.load())
			sleep_us(1000);
	}

	// Keeps moving the producers between CPUs (alternating, per producer, a single CPU other than the one it last
	// wrote on and the full mask) and sends SIGUSR1 to two of them, every ~20 us.
	void chaos_main()
	{
		prctl(PR_SET_TIMERSLACK, 1000UL); // 1 us: the short sleeps below really are short
		std::mt19937_64 rng(seed_);
		bool single[kProducers] = {};
		while (!stop_chaos_.load()) {
			const uint32_t p = static_cast<uint32_t>(rng() % kProducers);
			cpu_set_t set = full_;
			if (!single[p]) {
				uint32_t target = allowed_[rng() % allowed_.size()];
				if (allowed_.size() > 1)
					while (target == ctx_[p].cpu.load(std::memory_order_relaxed))
						target = allowed_[rng() % allowed_.size()];
				CPU_ZERO(&set);
				CPU_SET(target, &set);
			}
			single[p] = !single[p];
			if (pthread_setaffinity_np(producers_[p].native_handle(), sizeof set, &set) == 0)
				affinity_changes_++;
			else
				affinity_failures_++;
			for (int k = 0; k < 2; ++k) {
				const uint32_t q = static_cast<uint32_t>(rng() % kProducers);
				if (pthread_kill(producers_[q].native_handle(), SIGUSR1) == 0)
					signals_sent_++;
			}
			sleep_us(20);
		}
		for (auto &t : producers_)
			pthread_setaffinity_np(t.native_handle(), sizeof full_, &full_);
	}

	void wait_producers_finished()
	{
		while (finished_.load() < kProducers)
			sleep_us(1000);
		elapsed_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
	}
	void stop_chaos()
	{
		stop_chaos_.store(true);
		if (chaos_.joinable())
			chaos_.join();
	}
	void release_producers()
	{
		release_.store(true);
		for (auto &t : producers_)
			t.join();
		producers_.clear();
	}

	struct Totals {
		uint64_t emitted = 0, drops = 0, signal_records = 0, retargeted = 0, wrong_hint = 0,
			 wrong_hint_moved = 0, wrong_hint_kept = 0, wrong_hint_dropped = 0, moved_before_commit = 0,
			 bad_cpu = 0, signals = 0, interrupted_mid_record = 0;
		int64_t kernel_migrations = 0; // -1 if unknown
	};
	Totals totals() const
	{
		Totals t;
		for (uint32_t id = 0; id < kIds; ++id) {
			const Emitter &em = g_emitters[id];
			t.emitted += em.next_seq;
			t.drops += em.drops;
			if (id >= kProducers)
				t.signal_records += em.next_seq;
			t.retargeted += em.retargeted;
			t.wrong_hint += em.wrong_hint;
			t.wrong_hint_moved += em.wrong_hint_moved;
			t.wrong_hint_kept += em.wrong_hint_kept;
			t.wrong_hint_dropped += em.wrong_hint_dropped;
			t.moved_before_commit += em.moved_before_commit;
			t.bad_cpu += em.bad_cpu;
		}
		for (const auto &c : ctx_) {
			t.signals += c.signals;
			t.interrupted_mid_record += c.interrupted_mid_record;
			const bool known = c.kernel_migrations >= 0 && t.kernel_migrations >= 0;
			t.kernel_migrations = known ? t.kernel_migrations + c.kernel_migrations : -1;
		}
		return t;
	}

	// Checks common to both modes, once everything is joined.
	void check_producer_side(const Totals &t, Channel &ch)
	{
		EXPECT_EQ(t.bad_cpu, 0u) << "rseq::current_cpu() returned a CPU without a buffer";
		EXPECT_EQ(affinity_failures_, 0u);
		EXPECT_GT(affinity_changes_, 0u);
		EXPECT_GT(t.signals, 0u) << "no SIGUSR1 was handled";
		EXPECT_GT(t.signal_records, 0u);
		EXPECT_GT(t.interrupted_mid_record, 0u) << "no signal landed between a reserve and its commit";
		if (num_cpus_ > 1) {
			EXPECT_GT(t.wrong_hint, 0u);
			EXPECT_GT(t.wrong_hint_moved, 0u)
				<< "a reservation given another CPU than the caller's never moved";
		}
		if (allowed_.size() > 1) {
			EXPECT_GT(t.moved_before_commit, 0u) << "no producer was migrated between reserve and commit";
		}
		uint64_t lost = 0;
		for (uint32_t c = 0; c < num_cpus_; ++c)
			lost += ch.lost(c);
		EXPECT_EQ(lost, t.drops) << "sum of lost(cpu) must count every failed reserve exactly once";
	}

	void report(const char *what, const Totals &t, uint64_t read, const char *read_what, uint64_t flushes,
	            uint64_t in_order_bytes, uint64_t ooo_bytes, const char *extra) const
	{
		std::printf(
			"%s (seed %u, %u buffers, %zu usable CPUs): %.2f s; %llu records emitted (%llu by signal handlers), %llu "
			"%s, %llu lost; %llu affinity changes, %lld producer migrations, %llu SIGUSR1 sent / %llu handled (%llu "
			"between reserve and commit); reservations moved by a migration: %llu, wrong CPU hints %llu (%llu went to "
			"the current CPU, %llu to the hinted one after a migration there, %llu dropped); on another CPU at commit: "
			"%llu; bytes of the last sub-buffers committed in order %llu / out of order %llu; %llu flushes during the "
			"run%s\n",
			what, seed_, num_cpus_, allowed_.size(), elapsed_s_, (unsigned long long)t.emitted,
			(unsigned long long)t.signal_records, (unsigned long long)read, read_what,
			(unsigned long long)t.drops, (unsigned long long)affinity_changes_,
			(long long)t.kernel_migrations, (unsigned long long)signals_sent_,
			(unsigned long long)t.signals, (unsigned long long)t.interrupted_mid_record,
			(unsigned long long)t.retargeted, (unsigned long long)t.wrong_hint,
			(unsigned long long)t.wrong_hint_moved, (unsigned long long)t.wrong_hint_kept,
			(unsigned long long)t.wrong_hint_dropped, (unsigned long long)t.moved_before_commit,
			(unsigned long long)in_order_bytes, (unsigned long long)ooo_bytes, (unsigned long long)flushes,
			extra);
	}

	uint32_t num_cpus_ = 1;
	cpu_set_t full_{};
	std::vector<uint32_t> allowed_;
	unsigned seed_ = 0;
	ThreadCtx ctx_[kProducers];
	std::vector<std::thread> producers_;
	std::thread chaos_;
	std::atomic<uint32_t> finished_{0};
	std::atomic<bool> release_{false}, stop_chaos_{false};
	uint64_t affinity_changes_ = 0, affinity_failures_ = 0, signals_sent_ = 0; // chaos thread only
	std::chrono::steady_clock::time_point t0_;
	double elapsed_s_ = 0;
	struct sigaction old_action_ {};
	sigset_t old_mask_{};
};

TEST_F(RingBufferRseqStress, DiscardModeMigrationsSignalsAndPinnedFlushes)
{
	if (!Channel::rseq_available())
		GTEST_SKIP() << kNoRseq;
	auto ch = Channel::create(rseq_config(Mode::discard, num_cpus_, kM, kS), "rseq-discard");
	g_channel = ch.get();
	Internals in(*ch);
	ASSERT_TRUE(in.ok());
	const uint64_t n = records_per_producer();
	std::atomic<bool> done{false};
	Verifier ver(num_cpus_);
	std::string consumer_error;
	uint64_t flushes = 0, flush_failures = 0, final_flush_failures = 0;
	bool affinity_restored = true;
	std::thread consumer([&] {
		Channel &c = *ch;
		std::mt19937 rng(seed_ + 1);
		std::vector<uint64_t> next_seq(num_cpus_, 0), last_lost_before(num_cpus_, 0), last_end(num_cpus_, 0);
		const cpu_set_t mine = my_affinity();
		for (uint64_t iter = 0;; ++iter) {
			const bool finished = done.load(std::memory_order_acquire);
			if (finished)
				for (uint32_t cpu = 0; cpu < num_cpus_; ++cpu)
					if (!c.flush(cpu, base::monotonic_ns()))
						final_flush_failures++;
			bool got = false;
			for (uint32_t cpu = 0; cpu < num_cpus_; ++cpu) {
				SubbufView v;
				while (c.get_subbuf(cpu, v)) {
					got = true;
					if (consumer_error.empty()) {
						if (v.cpu != cpu)
							consumer_error = "get_subbuf(" + std::to_string(cpu) +
							                 ") returned cpu " + std::to_string(v.cpu);
						if (v.seq != next_seq[cpu])
							consumer_error = "cpu " + std::to_string(cpu) +
							                 ": sub-buffer seq " + std::to_string(v.seq) +
							                 " expected " + std::to_string(next_seq[cpu]);
						if (v.lost_before < last_lost_before[cpu])
							consumer_error = "lost_before decreased";
						if (v.timestamp_begin < last_end[cpu])
							consumer_error = "sub-buffers overlap in time";
						if (!ver.check(v, true) && consumer_error.empty())
							consumer_error = ver.error;
					}
					next_seq[cpu] = v.seq + 1;
					last_lost_before[cpu] = v.lost_before;
					last_end[cpu] = v.timestamp_end;
					if (!c.put_subbuf(cpu, v))
						consumer_error = "put_subbuf failed in discard mode";
				}
			}
			if (finished && !got)
				break;
			if (!finished && iter % 4 == 0) { // a pinned flush of a random buffer, racing with its writers
				const uint32_t cpu = allowed_[rng() % allowed_.size()] % num_cpus_;
				if (!c.flush(cpu, base::monotonic_ns()))
					flush_failures++;
				flushes++;
				const cpu_set_t now = my_affinity();
				if (!CPU_EQUAL(&mine, &now))
					affinity_restored = false;
			}
			if (!got && !finished)
				c.wait_for_data(1);
		}
	});
	start(n);
	wait_producers_finished();
	stop_chaos();
	done.store(true, std::memory_order_release);
	consumer.join();
	release_producers();

	ASSERT_EQ(consumer_error, "");
	EXPECT_EQ(flush_failures, 0u) << "flush() could not run on a CPU the consumer may use";
	EXPECT_EQ(final_flush_failures, 0u);
	EXPECT_TRUE(affinity_restored) << "flush() did not restore the caller's affinity";
	EXPECT_GT(flushes, 0u);
	for (uint32_t cpu = 0; cpu < num_cpus_; ++cpu)
		EXPECT_FALSE(ch->data_ready(cpu)) << "cpu " << cpu;

	const Totals t = totals();
	check_producer_side(t, *ch);
	for (uint32_t id = 0; id < kIds; ++id) {
		const Emitter &em = g_emitters[id];
		EXPECT_EQ(ver.read[id] + em.drops, em.next_seq) << "id " << id;
		uint64_t unseen = 0;
		for (uint64_t s = 0; s < em.next_seq; ++s)
			if (s >= ver.seen[id].size() || !ver.seen[id][s])
				++unseen;
		EXPECT_EQ(unseen, em.drops) << "id " << id << ": records neither read nor dropped";
	}
	uint64_t lost = 0;
	for (uint32_t c = 0; c < num_cpus_; ++c)
		lost += ch->lost(c);
	EXPECT_EQ(ver.records + lost, t.emitted) << "records read + sum of lost(cpu) must be every record emitted";
	EXPECT_FALSE(ch->quarantined()) << "an honest buffer was found inconsistent: " << ch->fault();
	EXPECT_EQ(g_emitters[0].next_seq, n);
	EXPECT_GT(ver.records, t.emitted / 10) << "the consumer read almost nothing: the checks above are weak";
	uint64_t handler_read = 0;
	for (uint32_t id = kProducers; id < kIds; ++id)
		handler_read += ver.read[id];
	EXPECT_GT(handler_read, 0u) << "no signal handler record was read";
	uint64_t in_order_bytes = 0, ooo_bytes = 0;
	EXPECT_EQ(in.check_counters(num_cpus_, kS, in_order_bytes, ooo_bytes), "");
	EXPECT_GT(in_order_bytes, 0u);
	char extra[128];
	std::snprintf(extra, sizeof extra, "; %llu sub-buffers read, %llu extended headers",
	              (unsigned long long)ver.subbufs, (unsigned long long)ver.extended);
	report("rseq discard", t, ver.records, "read", flushes, in_order_bytes, ooo_bytes, extra);
}

TEST_F(RingBufferRseqStress, OverwriteModeSnapshotsUnderMigrations)
{
	if (!Channel::rseq_available())
		GTEST_SKIP() << kNoRseq;
	auto ch = Channel::create(rseq_config(Mode::overwrite, num_cpus_, kM, kS), "rseq-overwrite");
	g_channel = ch.get();
	Internals in(*ch);
	ASSERT_TRUE(in.ok());
	const uint64_t n = records_per_producer();
	std::atomic<bool> done{false};
	std::string error;
	uint64_t snapshots = 0, snap_subbufs = 0, snap_records = 0, flushes = 0, flush_failures = 0;
	std::thread reader([&] {
		std::mt19937 rng(seed_ + 2);
		while (!done.load(std::memory_order_acquire) && error.empty()) {
			for (uint32_t cpu = 0; cpu < num_cpus_ && error.empty(); ++cpu) {
				if (rng() % 4 == 0) {
					if (!ch->flush(cpu, base::monotonic_ns()))
						flush_failures++;
					flushes++;
				}
				const auto snap = ch->snapshot(cpu);
				++snapshots;
				Verifier ver(
					num_cpus_); // per snapshot: per (id, buffer) seqs strictly increasing, nothing torn
				for (std::size_t i = 0; i < snap.size() && error.empty(); ++i) {
					const auto &o = snap[i];
					auto where = [&] {
						return "snapshot of cpu " + std::to_string(cpu) + ", sub-buffer " +
						       std::to_string(o.seq);
					};
					if (o.cpu != cpu)
						error = where() + ": wrong cpu " + std::to_string(o.cpu);
					if (i > 0 && o.seq <= snap[i - 1].seq)
						error = where() + ": not oldest first";
					if (o.seq + kM <= snap.back().seq)
						error = where() + ": older than the last M sub-buffers";
					if (i > 0 && o.lost_before < snap[i - 1].lost_before)
						error = where() + ": lost_before decreased";
					if (i > 0 && o.timestamp_begin < snap[i - 1].timestamp_end)
						error = where() + ": timestamp_begin " +
						        std::to_string(o.timestamp_begin) +
						        " < previous timestamp_end " +
						        std::to_string(snap[i - 1].timestamp_end);
					if (!error.empty())
						break;
					const uint64_t prev_last_ts = ver.last_ts;
					if (!ver.check(o.view(), false)) {
						error = where() + ": " + ver.error;
						break;
					}
					if (i > 0 && ver.first_ts < prev_last_ts)
						error = where() + ": first record at " + std::to_string(ver.first_ts) +
						        " is older than the previous sub-buffer's last record at " +
						        std::to_string(prev_last_ts);
					++snap_subbufs;
				}
				snap_records += ver.records;
			}
			sleep_us(100);
		}
	});
	start(n);
	wait_producers_finished();
	stop_chaos();
	done.store(true, std::memory_order_release);
	reader.join();
	release_producers();
	ASSERT_EQ(error, "");
	EXPECT_EQ(flush_failures, 0u);
	EXPECT_FALSE(ch->quarantined()) << "an honest buffer was found inconsistent: " << ch->fault();
	EXPECT_GT(snap_subbufs, 0u);

	const Totals t = totals();
	check_producer_side(t, *ch);
	// Producers are done: after a flush, the snapshot of each buffer is exactly its newest min(M, written)
	// sub-buffers, ending with the newest record written, each record once.
	Verifier final_ver(num_cpus_);
	uint32_t written_cpus = 0;
	for (uint32_t c = 0; c < num_cpus_; ++c) {
		ASSERT_TRUE(ch->flush(c, base::monotonic_ns())) << "cpu " << c;
		const uint64_t max_end = g_max_end[c].load();
		const auto snap = ch->snapshot(c);
		if (max_end == 0) {
			EXPECT_TRUE(snap.empty()) << "cpu " << c;
			continue;
		}
		++written_cpus;
		const uint64_t newest = (max_end - 1) / kS;
		ASSERT_EQ(snap.size(), std::min<uint64_t>(kM, newest + 1)) << "cpu " << c;
		EXPECT_EQ(snap.back().seq, newest) << "cpu " << c;
		EXPECT_EQ(snap.back().bytes.size(), max_end - newest * kS) << "cpu " << c;
		EXPECT_EQ(snap.front().seq, newest + 1 - snap.size()) << "cpu " << c;
		for (const auto &o : snap)
			ASSERT_TRUE(final_ver.check(o.view(), true)) << final_ver.error;
	}
	EXPECT_GT(written_cpus, 0u);
	uint64_t in_order_bytes = 0, ooo_bytes = 0;
	EXPECT_EQ(in.check_counters(num_cpus_, kS, in_order_bytes, ooo_bytes), "");
	EXPECT_GT(in_order_bytes, 0u);
	char extra[160];
	std::snprintf(extra, sizeof extra, "; %llu snapshots, %llu sub-buffers / %llu records checked in them",
	              (unsigned long long)snapshots, (unsigned long long)snap_subbufs,
	              (unsigned long long)snap_records);
	report("rseq overwrite", t, final_ver.records, "in the final snapshots", flushes, in_order_bytes, ooo_bytes,
	       extra);
}

// ---------------------------------------------------------------------------------------------------------------
// Deterministic checks.

struct Written {
	Reservation r;
	uint32_t id;
	uint64_t seq;
};

bool reserve_and_write(Channel &ch, uint32_t cpu, uint32_t id, uint64_t seq, Written &w)
{
	if (!ch.reserve(cpu, kPayloadFixed + 16, true, base::monotonic_ns, w.r))
		return false;
	w.id = id;
	w.seq = seq;
	write_record(w.r, id, seq, 16);
	return true;
}

// Reads the next sub-buffer of `cpu` and returns its records as (id, seq) pairs; empty if there is none.
std::vector<std::pair<uint32_t, uint64_t>> read_subbuf(Channel &ch, uint32_t cpu, uint32_t *content_size = nullptr)
{
	std::vector<std::pair<uint32_t, uint64_t>> out;
	SubbufView v{};
	if (!ch.get_subbuf(cpu, v))
		return out;
	const std::string e =
		parse_subbuf(v, [&](const ParsedRecord &rec) { out.emplace_back(rec.producer, rec.seq); });
	EXPECT_EQ(e, "");
	if (content_size)
		*content_size = v.content_size;
	EXPECT_TRUE(ch.put_subbuf(cpu, v));
	return out;
}

using Records = std::vector<std::pair<uint32_t, uint64_t>>;

TEST(RingBufferRseq, ReservationGoesToTheBufferOfTheCpuTheThreadRunsOn)
{
	if (!Channel::rseq_available())
		GTEST_SKIP() << kNoRseq;
	AffinityGuard guard;
	const std::vector<uint32_t> allowed = cpus_of(guard.saved());
	const uint32_t ncpus = config_cpus();
	ASSERT_FALSE(allowed.empty());
	const uint32_t a = allowed[0];
	auto ch = Channel::create(rseq_config(Mode::discard, ncpus, 4, 4096), "rseq-retarget");
	Internals in(*ch);
	ASSERT_TRUE(in.ok());

	ASSERT_TRUE(pin_to(a));
	Written w1;
	ASSERT_TRUE(reserve_and_write(*ch, a, 1, 100, w1));
	EXPECT_EQ(w1.r.cpu, a);
	EXPECT_EQ(w1.r.offset, 0u);
	ch->commit(w1.r);
	EXPECT_EQ(in.write_offset(a), w1.r.size);
	EXPECT_EQ(in.prefix(a, 0), w1.r.size) << "the only record in flight moves the prefix";
	EXPECT_EQ(in.ooo(a, 0), 0u);
	if (allowed.size() < 2)
		GTEST_SKIP() << "the retargeting part needs two usable CPUs";
	const uint32_t b = allowed[1];

	ASSERT_TRUE(pin_to(b));
	Written w2;
	ASSERT_TRUE(reserve_and_write(*ch, a, 2, 200, w2)) << "reserve given a CPU the thread is not on";
	EXPECT_EQ(w2.r.cpu, b) << "the record must go to the buffer of the CPU the thread runs on";
	EXPECT_EQ(w2.r.offset, 0u);
	ch->commit(w2.r);
	EXPECT_EQ(in.write_offset(a), w1.r.size) << "buffer a must be untouched";
	EXPECT_EQ(in.write_offset(b), w2.r.size);
	EXPECT_EQ(in.prefix(b, 0), w2.r.size);
	EXPECT_EQ(in.ooo(b, 0), 0u);
	EXPECT_EQ(ch->lost(a) + ch->lost(b), 0u);

	// Flushed from CPU b: flush(a) must run on a meanwhile and leave the caller pinned to b as before.
	EXPECT_TRUE(ch->flush(a, base::monotonic_ns()));
	EXPECT_TRUE(ch->flush(b, base::monotonic_ns()));
	const cpu_set_t after = my_affinity();
	EXPECT_EQ(cpus_of(after), std::vector<uint32_t>{b}) << "flush() must restore the caller's affinity";
	EXPECT_EQ(in.write_offset(a), 4096u);
	EXPECT_EQ(in.write_offset(b), 4096u);
	EXPECT_EQ(in.prefix(a, 0), 4096u) << "the flush's padding follows the record in order";
	EXPECT_EQ(in.prefix(b, 0), 4096u);
	EXPECT_EQ(in.ooo(a, 0) + in.ooo(b, 0), 0u);
	EXPECT_EQ(read_subbuf(*ch, a), (Records{{1, 100}}));
	EXPECT_EQ(read_subbuf(*ch, b), (Records{{2, 200}}));
	EXPECT_TRUE(read_subbuf(*ch, a).empty());
	EXPECT_TRUE(read_subbuf(*ch, b).empty());
}

TEST(RingBufferRseq, CommitAfterMigrationCompletesTheSubbuf)
{
	if (!Channel::rseq_available())
		GTEST_SKIP() << kNoRseq;
	AffinityGuard guard;
	const std::vector<uint32_t> allowed = cpus_of(guard.saved());
	if (allowed.size() < 2)
		GTEST_SKIP() << "needs two usable CPUs";
	const uint32_t a = allowed[0], b = allowed[1];
	auto ch = Channel::create(rseq_config(Mode::discard, config_cpus(), 4, 4096), "rseq-remote-commit");
	Internals in(*ch);
	ASSERT_TRUE(in.ok());

	// Reserved on a, committed after moving to b: still the oldest record in flight, so it moves the prefix (a plain
	// store, whichever CPU makes it).
	ASSERT_TRUE(pin_to(a));
	Written w1;
	ASSERT_TRUE(reserve_and_write(*ch, a, 1, 10, w1));
	ASSERT_EQ(w1.r.cpu, a);
	ASSERT_TRUE(pin_to(b));
	ch->commit(w1.r);
	EXPECT_EQ(in.prefix(a, 0), w1.r.size);
	EXPECT_EQ(in.ooo(a, 0), 0u);
	EXPECT_TRUE(ch->flush(a, base::monotonic_ns()));
	EXPECT_EQ(cpus_of(my_affinity()), std::vector<uint32_t>{b});
	EXPECT_EQ(in.committed(a, 0, 4096), 4096u);
	uint32_t size = 0;
	EXPECT_EQ(read_subbuf(*ch, a, &size), (Records{{1, 10}})) << "the sub-buffer of a must complete after flush(a)";
	EXPECT_EQ(size, w1.r.size);

	// A record in flight when the flush closes its sub-buffer: complete only once it is committed, from b. The
	// record after it and the flush's padding commit first, out of order.
	ASSERT_TRUE(pin_to(a));
	Written w2, w3;
	ASSERT_TRUE(reserve_and_write(*ch, a, 1, 11, w2));
	ASSERT_TRUE(reserve_and_write(*ch, a, 1, 12, w3));
	ASSERT_EQ(w2.r.cpu, a);
	ASSERT_EQ(w3.r.cpu, a);
	EXPECT_EQ(w2.r.offset, 4096u);
	ch->commit(w3.r); // while w2 is in flight
	EXPECT_EQ(in.prefix(a, 1), 4096u) << "w2, in flight, holds the prefix at its start";
	EXPECT_EQ(in.ooo(a, 1), w3.r.size);
	ASSERT_TRUE(pin_to(b));
	EXPECT_TRUE(ch->flush(a, base::monotonic_ns()));
	EXPECT_FALSE(ch->data_ready(a)) << "a record of the flushed sub-buffer is still in flight";
	EXPECT_TRUE(read_subbuf(*ch, a).empty());
	EXPECT_EQ(in.committed(a, 1, 4096), 4096u - w2.r.size);
	ch->commit(w2.r); // from b
	EXPECT_EQ(in.prefix(a, 1), 4096u + w2.r.size);
	EXPECT_EQ(in.committed(a, 1, 4096), 4096u);
	EXPECT_TRUE(ch->data_ready(a));
	EXPECT_EQ(read_subbuf(*ch, a, &size), (Records{{1, 11}, {1, 12}}));
	EXPECT_EQ(size, w2.r.size + w3.r.size);
	EXPECT_EQ(ch->lost(a), 0u);
	EXPECT_TRUE(ch->flush(a, base::monotonic_ns())) << "nothing open: a no-op";
	EXPECT_EQ(in.write_offset(a), 8192u);
}

// The thread read its CPU (a), then was moved to b before reserve(a): the record must go to b's buffer, even when
// a's buffer is full (discard mode) and could not take it.
TEST(RingBufferRseq, StaleCpuHintIsNotDroppedBecauseThatBufferIsFull)
{
	if (!Channel::rseq_available())
		GTEST_SKIP() << kNoRseq;
	AffinityGuard guard;
	const std::vector<uint32_t> allowed = cpus_of(guard.saved());
	if (allowed.size() < 2)
		GTEST_SKIP() << "needs two usable CPUs";
	const uint32_t a = allowed[0], b = allowed[1];
	auto ch = Channel::create(rseq_config(Mode::discard, config_cpus(), 2, 4096), "rseq-stale-hint");
	ASSERT_TRUE(pin_to(a));
	constexpr uint32_t kPayload = 200;
	uint64_t written = 0;
	for (;;) { // fill a's buffer (no consumer) until a record is dropped
		Reservation r;
		if (!ch->reserve(a, kPayload, true, base::monotonic_ns, r))
			break;
		ASSERT_EQ(r.cpu, a);
		ch->commit(r);
		ASSERT_LT(++written, 1000u);
	}
	ASSERT_EQ(ch->lost(a), 1u);
	ASSERT_TRUE(pin_to(b));
	Reservation r{};
	r.cpu = ~0u;
	EXPECT_TRUE(ch->reserve(a, kPayload, true, base::monotonic_ns, r))
		<< "a thread on CPU " << b << " with a stale hint (CPU " << a << ") had its record dropped because CPU "
		<< a << "'s buffer is full, although its own buffer is empty";
	if (r.cpu == b)
		ch->commit(r);
	EXPECT_EQ(r.cpu, b);
	EXPECT_EQ(ch->lost(a), 1u) << "the drop was counted in lost(" << a << ")";
	EXPECT_EQ(ch->lost(b), 0u);
}

// The last two commits of a sub-buffer race: the record that opened it (moving the prefix: a plain store), from
// another CPU, and the one that fills it (out of order when it comes first: a locked add). Whichever comes second
// must see the sub-buffer complete and wake the consumer. White box: the test announces a waiting consumer in the channel header (as
// wait_for_data does) and counts the wakeups in futex_word instead of blocking a thread in the futex.
TEST(RingBufferRseq, RacingInOrderAndOutOfOrderFinalCommitsWakeTheConsumer)
{
	if (!Channel::rseq_available())
		GTEST_SKIP() << kNoRseq;
	AffinityGuard guard;
	const std::vector<uint32_t> allowed = cpus_of(guard.saved());
	if (allowed.size() < 2)
		GTEST_SKIP() << "needs two usable CPUs";
	const uint32_t a = allowed[0], b = allowed[1];
	constexpr uint32_t kSize = 4096;
	auto ch = Channel::create(rseq_config(Mode::overwrite, config_cpus(), 4, kSize), "rseq-completion-race");
	void *m = mmap(nullptr, ch->mapping_size(), PROT_READ | PROT_WRITE, MAP_SHARED, ch->fd(), 0);
	ASSERT_NE(m, MAP_FAILED);
	auto *hdr = static_cast<detail::ChannelHeader *>(m);
	std::atomic_ref<uint32_t> waiters(hdr->waiters), futex_word(hdr->futex_word);
	waiters.fetch_add(1);
	Internals in(*ch);
	ASSERT_TRUE(in.ok());

	constexpr uint64_t kRounds = 300'000; // about 0.3 s
	std::atomic<uint64_t> go{~uint64_t{0}}, done{~uint64_t{0}};
	Reservation remote_r{};
	bool remote_pinned = true;
	std::thread remote([&] {
		remote_pinned = pin_to(b);
		for (uint64_t i = 0; i < kRounds; ++i) {
			while (go.load(std::memory_order_acquire) != i) {
			}
			ch->commit(remote_r); // from b: moves the prefix (it is the oldest record)
			done.store(i, std::memory_order_release);
		}
	});
	ASSERT_TRUE(pin_to(a));
	uint64_t missed = 0, seen_twice = 0, rounds = 0;
	std::string error;
	for (uint64_t i = 0; i < kRounds; ++i) {
		Reservation r1{}, r2{};
		// r1 opens a sub-buffer of a, r2 fills it exactly (no padding): their two commits complete it.
		const bool ok1 = ch->reserve(a, 100, false, base::monotonic_ns, r1);
		const bool ok2 =
			ok1 && ch->reserve(a, kSize - (100 + kExtendedHs) - kExtendedHs, false, base::monotonic_ns, r2);
		if (error.empty() && (!ok1 || !ok2 || r1.cpu != a || r2.cpu != a || r1.offset % kSize != 0 ||
		                      r2.offset + r2.size != r1.offset + kSize))
			error = "round " + std::to_string(i) + ": unexpected reservations";
		remote_r = r1;
		const uint32_t before = futex_word.load();
		go.store(i, std::memory_order_release);
		for (uint32_t k = static_cast<uint32_t>(i * 2654435761u) % 24; k; --k)
			__builtin_ia32_pause();
		if (ok2)
			ch->commit(r2); // on a: out of order if r1 is not committed yet, else moves the prefix
		while (done.load(std::memory_order_acquire) != i) {
		}
		if (!error.empty())
			break;
		const uint32_t wakeups = futex_word.load() - before;
		if (wakeups == 0)
			++missed;
		if (wakeups > 1)
			++seen_twice;
		++rounds;
	}
	if (!error.empty()) { // let the other thread finish its rounds
		for (uint64_t i = rounds + 1; i < kRounds; ++i) {
			go.store(i, std::memory_order_release);
			while (done.load(std::memory_order_acquire) != i) {
			}
		}
	}
	remote.join();
	waiters.fetch_sub(1);
	munmap(m, ch->mapping_size());
	ASSERT_TRUE(remote_pinned);
	ASSERT_EQ(error, "");
	uint64_t in_order_bytes = 0, ooo_bytes = 0;
	EXPECT_EQ(in.check_counters(config_cpus(), kSize, in_order_bytes, ooo_bytes), "");
	EXPECT_GT(in_order_bytes, 0u);
	std::printf("%llu rounds: completion seen by neither committer %llu times, by both %llu times\n",
	            (unsigned long long)rounds, (unsigned long long)missed, (unsigned long long)seen_twice);
	EXPECT_EQ(missed, 0u)
		<< "sub-buffers completed without any wakeup: the prefix's store and the out-of-order add "
		   "each read the other before seeing it";
}

} // namespace
} // namespace tracery::ringbuf
