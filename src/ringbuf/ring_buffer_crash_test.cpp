// ring_buffer_crash_test.cpp — multi-process crash recovery test: a forked child writes numbered records as fast
// as it can and publishes its progress in shared memory; the parent SIGKILLs it mid-stream, maps the channel again
// from the fd (as another process would), runs recovery and reads everything: every record the child committed is
// there exactly once, in order, or was counted lost; nothing torn; a single writer thread loses nothing committed.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/monotonic.hpp"
#include "ringbuf/ring_buffer.hpp"
#include "ringbuf/test_records.hpp"

namespace tracery::ringbuf {
namespace {

using namespace testing;

constexpr int kIterations = 25; // about 1 s, also under sanitizers
constexpr uint64_t kNone = ~uint64_t{0};

struct Progress { // in a MAP_SHARED anonymous page
	std::atomic<int> started;
	std::atomic<uint64_t> last_done;      // seq of the last attempt that returned (committed or dropped)
	std::atomic<uint64_t> last_committed; // seq of the last committed record
};

[[noreturn]] void child_main(Channel &ch, Progress &prog, uint32_t cpus)
{
	prog.started.store(1, std::memory_order_release);
	for (uint64_t seq = 0;; ++seq) {
		const uint32_t cpu = static_cast<uint32_t>((seq >> 10) % cpus); // blocks of 1024 records per buffer
		uint32_t filler = static_cast<uint32_t>((seq * 2654435761u) >> 25) & 127;
		if (seq % 331 == 0)
			filler = 3000; // big records: frequent sub-buffer switches
		Channel::Reservation r;
		if (ch.reserve(cpu, kPayloadFixed + filler, seq % 13 != 0, base::monotonic_ns, r)) {
			write_record(r, 0, seq, filler);
			ch.commit(r);
			prog.last_committed.store(seq, std::memory_order_release);
		}
		prog.last_done.store(seq, std::memory_order_release);
	}
}

struct Reader {
	std::vector<bool> seen;
	std::vector<uint64_t> last; // per cpu
	uint64_t records = 0, max_seq = 0;
	std::string error;
	explicit Reader(uint32_t cpus) : last(cpus, kNone) {}

	void read(const Channel::SubbufView &v)
	{
		const std::string e = parse_subbuf(v, [&](const ParsedRecord &rec) {
			if (!error.empty())
				return;
			if (last[v.cpu] != kNone && rec.seq <= last[v.cpu]) {
				error = "seq " + std::to_string(rec.seq) + " after " + std::to_string(last[v.cpu]);
				return;
			}
			last[v.cpu] = rec.seq;
			if (seen.size() <= rec.seq)
				seen.resize(rec.seq + 4096);
			if (seen[rec.seq])
				error = "seq " + std::to_string(rec.seq) + " read twice";
			seen[rec.seq] = true;
			++records;
			max_seq = std::max(max_seq, rec.seq);
		});
		if (error.empty() && !e.empty())
			error = e;
	}
	void drain(Channel &ch)
	{
		for (uint32_t cpu = 0; cpu < ch.config().num_cpus; ++cpu) {
			Channel::SubbufView v;
			while (ch.get_subbuf(cpu, v)) {
				read(v);
				ASSERT_TRUE(ch.put_subbuf(cpu, v));
			}
		}
	}
};

struct Totals {
	int iterations = 0, with_inflight = 0;
	uint64_t records = 0, lost = 0;
};

// Forks a writer, lets it run `run_us` (the parent consuming meanwhile in discard mode), kills it.
// Returns the progress the child published.
pid_t run_child(Channel &ch, Progress *&prog, uint32_t cpus)
{
	void *page = mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(page, MAP_FAILED);
	prog = new (page) Progress{};
	prog->last_done.store(kNone);
	prog->last_committed.store(kNone);
	const pid_t pid = fork();
	if (pid == 0)
		child_main(ch, *prog, cpus);
	EXPECT_GT(pid, 0);
	while (prog->started.load(std::memory_order_acquire) == 0)
		sched_yield();
	return pid;
}

void kill_child(pid_t pid)
{
	ASSERT_EQ(kill(pid, SIGKILL), 0);
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

// Everything up to last_done is read or counted lost; beyond it at most the one record the child committed but
// had not yet published.
void check_accounting(const Reader &rd, const Progress &prog, uint64_t lost, Totals &tot)
{
	ASSERT_EQ(rd.error, "");
	const uint64_t done = prog.last_done.load();
	const uint64_t committed = prog.last_committed.load();
	if (done == kNone) {
		EXPECT_LE(rd.records, 1u);
		return;
	}
	uint64_t gaps = 0;
	for (uint64_t s = 0; s <= done; ++s)
		if (s >= rd.seen.size() || !rd.seen[s])
			++gaps;
	// lost() may also hold the drop of the attempt in progress (done + 1).
	EXPECT_TRUE(lost == gaps || lost == gaps + 1) << "gaps " << gaps << " lost " << lost << " done " << done;
	if (committed != kNone) {
		EXPECT_GE(rd.max_seq, committed) << "the last published committed record is missing";
	}
	EXPECT_LE(rd.records, done + 2 - gaps) << "more records than the child wrote";
	if (rd.records > 0 && rd.max_seq > done) {
		EXPECT_EQ(rd.max_seq, done + 1);
	}
	tot.records += rd.records;
	tot.lost += lost;
}

TEST(RingBufferCrash, DiscardModeStreamingConsumerRecoversAfterSigkill)
{
	std::mt19937 rng(12345);
	Totals tot;
	for (int it = 0; it < kIterations; ++it) {
		const uint32_t cpus = 2;
		auto ch = Channel::create(ctf_config(Mode::discard, cpus, 4, 8192), "crash-discard");
		Progress *prog = nullptr;
		const pid_t pid = run_child(*ch, prog, cpus);
		// The consumer maps the channel itself and streams while the child writes.
		auto consumer = Channel::attach(::dup(ch->fd()));
		Reader rd(cpus);
		const uint64_t stop = base::monotonic_ns() + (2 + rng() % 40) * 1000000ull;
		while (base::monotonic_ns() < stop) {
			rd.drain(*consumer);
			consumer->wait_for_data(1);
		}
		kill_child(pid);
		// A fresh mapping from the fd, as a daemon that lost its state would do.
		auto rescuer = Channel::attach(::dup(ch->fd()));
		ch.reset();
		const auto st = rescuer->recover_after_producer_death();
		EXPECT_EQ(st.unreadable_bytes, 0u) << "a single writer thread must not lose committed records";
		if (st.uncommitted_bytes > 0)
			++tot.with_inflight;
		rd.drain(*rescuer);
		uint64_t lost = 0;
		for (uint32_t c = 0; c < cpus; ++c)
			lost += rescuer->lost(c);
		check_accounting(rd, *prog, lost, tot);
		for (uint32_t c = 0; c < cpus; ++c)
			EXPECT_FALSE(rescuer->data_ready(c));
		munmap(prog, sizeof(Progress));
		++tot.iterations;
		if (::testing::Test::HasFailure())
			break;
	}
	std::printf("discard crash: %d kills, %d with a record in flight, %llu records recovered, %llu lost\n",
	            tot.iterations, tot.with_inflight, (unsigned long long)tot.records, (unsigned long long)tot.lost);
	EXPECT_GT(tot.with_inflight, 0) << "no kill ever hit a reservation in flight: the test did not test much";
}

TEST(RingBufferCrash, OverwriteModeFlightRecorderAfterSigkill)
{
	std::mt19937 rng(777);
	Totals tot;
	for (int it = 0; it < kIterations; ++it) {
		const uint32_t cpus = 1;
		constexpr uint32_t kM = 4, kS = 8192;
		auto ch = Channel::create(ctf_config(Mode::overwrite, cpus, kM, kS), "crash-overwrite");
		Progress *prog = nullptr;
		const pid_t pid = run_child(*ch, prog, cpus);
		// A slow start (sanitizers, a loaded machine) must not leave the recorder empty.
		const uint64_t give_up = base::monotonic_ns() + 10'000'000'000ull;
		while (prog->last_done.load() == kNone && base::monotonic_ns() < give_up)
			sched_yield();
		struct timespec d {
			0, static_cast<long>((1 + rng() % 20) * 1000000)
		};
		nanosleep(&d, nullptr);
		kill_child(pid);
		auto rescuer = Channel::attach(::dup(ch->fd()));
		ch.reset();
		const auto st = rescuer->recover_after_producer_death();
		EXPECT_EQ(st.unreadable_bytes, 0u);
		if (st.uncommitted_bytes > 0)
			++tot.with_inflight;
		EXPECT_EQ(rescuer->lost(0), 0u) << "a single writer never finds its own sub-buffer still being written";
		auto snap = rescuer->snapshot(0);
		ASSERT_FALSE(snap.empty());
		EXPECT_LE(snap.size(), kM);
		Reader rd(cpus);
		for (const auto &o : snap)
			rd.read(o.view());
		ASSERT_EQ(rd.error, "");
		// The newest records form one contiguous run ending with the last one committed.
		const uint64_t done = prog->last_done.load();
		ASSERT_NE(done, kNone);
		EXPECT_TRUE(rd.max_seq == done || rd.max_seq == done + 1) << rd.max_seq << " vs " << done;
		const uint64_t first = rd.max_seq + 1 - rd.records;
		for (uint64_t s = first; s <= rd.max_seq; ++s)
			ASSERT_TRUE(rd.seen[s]) << "gap at " << s;
		// Nearly M sub-buffers of history are kept (the oldest slot may be the one being reused).
		EXPECT_GE(snap.size(), std::min<uint64_t>(kM - 1, snap.back().seq + 1));
		tot.records += rd.records;
		munmap(prog, sizeof(Progress));
		++tot.iterations;
		if (::testing::Test::HasFailure())
			break;
	}
	std::printf("overwrite crash: %d kills, %d with a record in flight, %llu records in snapshots\n",
	            tot.iterations, tot.with_inflight, (unsigned long long)tot.records);
	EXPECT_GT(tot.with_inflight, 0);
}

} // namespace
} // namespace tracery::ringbuf
