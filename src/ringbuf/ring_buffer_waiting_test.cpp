// ring_buffer_waiting_test.cpp — writers that wait for space (Channel::write_waiting), also under ThreadSanitizer:
// producers on a small discard channel with a slow consumer lose nothing when they may wait without limit, and
// every record is read once, in order; with a limit, the records still without space when it passes are dropped
// and counted, each counted as a wait too; writers that may not wait drop at once, as write() does.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/monotonic.hpp"
#include "ringbuf/ring_buffer.hpp"
#include "ringbuf/test_records.hpp"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RINGBUF_WAITING_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RINGBUF_WAITING_SANITIZED 1
#endif
#endif

namespace tracery::ringbuf {
namespace {

using namespace testing;

#ifdef RINGBUF_WAITING_SANITIZED
constexpr uint64_t kRecords = 20'000; // per producer
#else
constexpr uint64_t kRecords = 100'000;
#endif
constexpr uint32_t kProducers = 3;
constexpr uint32_t kCpus = 2;

uint64_t now_ns() { return base::monotonic_ns(); }

// Writes record `seq` of `producer` into buffer `cpu`, asking may_wait when there is no space.
template <class WaitFn>
bool emit(Channel &ch, uint32_t cpu, uint32_t producer, uint64_t seq, WaitFn &&may_wait)
{
	const uint32_t filler = static_cast<uint32_t>(seq % 40);
	return ch.write_waiting(
		cpu, kPayloadFixed + filler, seq % 13 != 0, now_ns,
		[&](const Channel::Reservation &r) { write_record(r, producer, seq, filler); }, may_wait);
}

uint64_t total(const Channel &ch, uint64_t (Channel::*counter)(uint32_t) const noexcept)
{
	uint64_t n = 0;
	for (uint32_t cpu = 0; cpu < ch.config().num_cpus; ++cpu)
		n += (ch.*counter)(cpu);
	return n;
}

// Reads every complete sub-buffer, checking each record and that each producer's records come in order, once.
struct Reader {
	explicit Reader(Channel &channel) : ch(channel) {}
	Channel &ch;
	std::vector<uint64_t> next_seq = std::vector<uint64_t>(kProducers, 0);
	std::string problem;
	uint64_t drain()
	{
		uint64_t subbufs = 0;
		for (uint32_t cpu = 0; cpu < ch.config().num_cpus; ++cpu) {
			Channel::SubbufView v;
			while (problem.empty() && ch.get_subbuf(cpu, v)) {
				const std::string bad = parse_subbuf(v, [&](const ParsedRecord &rec) {
					if (rec.producer >= kProducers || rec.seq != next_seq[rec.producer])
						problem = "producer " + std::to_string(rec.producer) + ": seq " +
						          std::to_string(rec.seq) + " out of order";
					else
						++next_seq[rec.producer];
				});
				if (!bad.empty())
					problem = bad;
				EXPECT_TRUE(ch.put_subbuf(cpu, v));
				++subbufs;
			}
		}
		return subbufs;
	}
};

TEST(RingBufferWaiting, WritersWaitingWithoutLimitLoseNothing)
{
	auto ch = Channel::create(ctf_config(Mode::discard, kCpus, 2, 4096), "waiting");
	std::atomic<uint32_t> running{kProducers};
	std::vector<std::thread> producers;
	for (uint32_t p = 0; p < kProducers; ++p)
		producers.emplace_back([&, p] {
			// Each producer keeps to one buffer, so that its records are in order there.
			for (uint64_t seq = 0; seq < kRecords; ++seq)
				EXPECT_TRUE(emit(*ch, p % kCpus, p, seq, [](uint64_t) { return true; }));
			running.fetch_sub(1, std::memory_order_release);
		});
	Reader reader(*ch);
	uint64_t rounds = 0;
	while (running.load(std::memory_order_acquire) != 0 && reader.problem.empty()) {
		reader.drain();
		// A slow consumer: the producers fill both sub-buffers and wait meanwhile.
		if (++rounds % 4 == 0)
			sleep_through_signals(200'000);
	}
	for (auto &t : producers)
		t.join();
	for (uint32_t cpu = 0; cpu < kCpus; ++cpu)
		ch->flush(cpu, now_ns());
	reader.drain();
	ASSERT_EQ(reader.problem, "");
	EXPECT_EQ(total(*ch, &Channel::lost), 0u);
	for (uint32_t p = 0; p < kProducers; ++p)
		EXPECT_EQ(reader.next_seq[p], kRecords) << "producer " << p;
	EXPECT_GT(total(*ch, &Channel::waits), 0u);
	EXPECT_GT(total(*ch, &Channel::wait_ns), 0u);
}

TEST(RingBufferWaiting, RecordsStillWithoutSpaceAfterTheLimitAreDroppedAndCounted)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "waiting-limit");
	constexpr uint64_t kLimitNs = 2'000'000;
	// Nobody consumes: the buffer fills, and every record after that waits kLimitNs, then is dropped.
	uint64_t written = 0, seq = 0, asked = 0;
	for (; seq < 2 * 4096; ++seq) {
		if (!emit(*ch, 0, 0, seq, [&](uint64_t waited) {
			    ++asked;
			    return waited < kLimitNs;
		    }))
			break;
		++written;
	}
	ASSERT_LT(seq, 2u * 4096) << "the buffer never filled";
	EXPECT_EQ(ch->lost(0), 1u);
	EXPECT_EQ(ch->waits(0), 1u);
	EXPECT_GE(ch->wait_ns(0), kLimitNs);
	EXPECT_GE(asked, 2u);         // once before the first sleep, then after each
	constexpr uint64_t kMore = 3; // the same record again (a smaller one might fit in the open sub-buffer)
	for (uint64_t i = 1; i <= kMore; ++i)
		EXPECT_FALSE(emit(*ch, 0, 0, seq, [&](uint64_t waited) { return waited < kLimitNs; }));
	EXPECT_EQ(ch->lost(0), 1 + kMore);
	EXPECT_EQ(ch->waits(0), 1 + kMore);
	EXPECT_GE(ch->wait_ns(0), (1 + kMore) * kLimitNs);
	// Space again once the complete sub-buffer is read: the record is written after the ones before it.
	Reader reader(*ch);
	EXPECT_EQ(reader.drain(), 1u);
	EXPECT_TRUE(emit(*ch, 0, 0, written, [](uint64_t) { return false; }));
	ch->flush(0, now_ns());
	EXPECT_EQ(reader.drain(), 2u);
	EXPECT_EQ(reader.problem, "");
	EXPECT_EQ(reader.next_seq[0], written + 1);
}

TEST(RingBufferWaiting, WritersThatMayNotWaitDropAtOnce)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "waiting-never");
	uint64_t dropped = 0;
	for (uint64_t seq = 0; seq < 2 * 4096 / kPayloadFixed; ++seq)
		if (!emit(*ch, 0, 0, seq, [](uint64_t waited) { return waited != 0; })) // asked with 0: no
			++dropped;
	EXPECT_GT(dropped, 0u);
	EXPECT_EQ(ch->lost(0), dropped);
	EXPECT_EQ(ch->waits(0), 0u);
	EXPECT_EQ(ch->wait_ns(0), 0u);
}

TEST(RingBufferWaiting, OverwriteModeNeverWaits)
{
	auto ch = Channel::create(ctf_config(Mode::overwrite, 1, 2, 4096), "waiting-overwrite");
	for (uint64_t seq = 0; seq < 4 * 4096 / kPayloadFixed; ++seq)
		EXPECT_TRUE(emit(*ch, 0, 0, seq, [](uint64_t) {
			ADD_FAILURE() << "asked to wait in overwrite mode";
			return false;
		}));
	EXPECT_EQ(ch->waits(0), 0u);
}

} // namespace
} // namespace tracery::ringbuf
