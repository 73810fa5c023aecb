// ring_buffer_hostile_test.cpp — the consumer side of a channel whose producers write anything into the mapping:
// each inconsistency the consumer can meet quarantines the channel with a fault naming it, a quarantined channel
// gives nothing more and leaves the mapping alone, and random bytes written over a mapping while a consumer and
// writers run never hang, crash or hand out a sub-buffer outside the buffer (run under ASan and TSan too).
#include "ringbuf/ring_buffer.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "ringbuf/test_internals.hpp"
#include "ringbuf/test_records.hpp"

namespace tracery::ringbuf {
namespace {

using testing::Internals;

Config small_config(Mode mode)
{
	Config c;
	c.num_cpus = 2;
	c.num_subbuf = 4;
	c.subbuf_size = 4096;
	c.mode = mode;
	return c;
}

// Writes `records` records of 100 payload bytes into buffer `cpu`, timestamps 1, 2, ...
void fill(Channel &ch, uint32_t cpu, int records)
{
	uint64_t t = 0;
	for (int i = 0; i < records; ++i) {
		Channel::Reservation r{};
		if (ch.reserve(
			    cpu, 100, true, [&] { return ++t; }, r)) {
			std::memset(r.slot, 0xab, r.size);
			ch.commit(r);
		}
	}
}

// After a fault: nothing more comes out of the channel, and recovery and flush leave the mapping as it is.
void expect_quarantined(Channel &ch, const char *phrase)
{
	ASSERT_TRUE(ch.quarantined());
	EXPECT_NE(ch.fault().find(phrase), std::string::npos) << ch.fault();
	const std::string first = ch.fault();
	Internals in(ch);
	std::vector<uint8_t> before(in.raw(), in.raw() + in.raw_size());
	for (uint32_t cpu = 0; cpu < ch.config().num_cpus; ++cpu) {
		Channel::SubbufView v{};
		EXPECT_FALSE(ch.get_subbuf(cpu, v));
		EXPECT_FALSE(ch.data_ready(cpu));
		EXPECT_TRUE(ch.snapshot(cpu).empty());
		EXPECT_TRUE(ch.flush(cpu, 1'000'000));
	}
	EXPECT_EQ(ch.recover_after_producer_death().subbufs_repaired, 0u);
	EXPECT_EQ(std::memcmp(before.data(), in.raw(), before.size()), 0) << "a quarantined mapping was written";
	ch.quarantine("later");
	EXPECT_EQ(ch.fault(), first) << "the first fault stays";
}

TEST(RingBufferHostile, ConsumedPositionOffASubbufBoundary)
{
	auto ch = Channel::create(small_config(Mode::discard), "hostile");
	fill(*ch, 0, 100);
	Internals(*ch).set_consumed(0, 100);
	Channel::SubbufView v{};
	EXPECT_FALSE(ch->get_subbuf(0, v));
	expect_quarantined(*ch, "cpu 0: consumed position 100 is not on a sub-buffer boundary");
}

TEST(RingBufferHostile, ConsumedPositionPastTheWritePosition)
{
	auto ch = Channel::create(small_config(Mode::discard), "hostile");
	fill(*ch, 1, 10);
	Internals(*ch).set_consumed(1, 1 << 20);
	Channel::SubbufView v{};
	EXPECT_TRUE(ch->get_subbuf(0, v) == false && !ch->quarantined()) << "buffer 0 is consistent";
	EXPECT_FALSE(ch->get_subbuf(1, v));
	expect_quarantined(*ch, "cpu 1: consumed position 1048576 is past the write position");
}

TEST(RingBufferHostile, WritePositionMoreThanABufferAhead)
{
	auto ch = Channel::create(small_config(Mode::discard), "hostile");
	fill(*ch, 0, 10);
	Internals(*ch).set_write_offset(0, 5 * 4096 + 8);
	Channel::SubbufView v{};
	EXPECT_FALSE(ch->get_subbuf(0, v));
	expect_quarantined(*ch, "is more than a buffer past the consumed position 0");
}

TEST(RingBufferHostile, CompleteSubbufWithAnotherSequenceNumber)
{
	auto ch = Channel::create(small_config(Mode::discard), "hostile");
	fill(*ch, 0, 100); // about two and a half sub-buffers
	Internals in(*ch);
	Channel::SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	ASSERT_TRUE(ch->put_subbuf(0, v));
	in.set_seq(0, 1, 77);
	EXPECT_FALSE(ch->get_subbuf(0, v));
	expect_quarantined(*ch, "complete sub-buffer 1 has sequence number 77");
}

TEST(RingBufferHostile, ConsistentBufferIsNeverQuarantined)
{
	for (Mode mode : {Mode::discard, Mode::overwrite}) {
		auto ch = Channel::create(small_config(mode), "honest");
		for (int round = 0; round < 50; ++round) {
			fill(*ch, round % 2, 37 * (round % 5));
			ch->flush(round % 2, 1u << 30);
			for (uint32_t cpu = 0; cpu < 2; ++cpu) {
				Channel::SubbufView v{};
				while (ch->get_subbuf(cpu, v))
					ch->put_subbuf(cpu, v);
				ch->snapshot(cpu);
			}
		}
		ch->recover_after_producer_death();
		EXPECT_FALSE(ch->quarantined()) << ch->fault();
	}
}

// A program writing random bytes over its whole mapping, header included, while its writers emit and the consumer
// reads: every consumer call returns, and what it hands out is at most a sub-buffer, readable to its end.
// Whoever holds the channel's file (a traced program holds the daemon's) cannot change its size: a shrink
// would make every other mapping's next access a SIGBUS, in the consumer first.
TEST(RingBufferHostile, FileSizeIsSealed)
{
	auto ch = Channel::create(small_config(Mode::discard), "sealed");
	struct stat st;
	ASSERT_EQ(fstat(ch->fd(), &st), 0);
	const off_t size = st.st_size;
	EXPECT_EQ(ftruncate(ch->fd(), 0), -1);
	EXPECT_EQ(errno, EPERM);
	EXPECT_EQ(ftruncate(ch->fd(), size + 4096), -1);
	EXPECT_EQ(errno, EPERM);
	EXPECT_EQ(fcntl(ch->fd(), F_ADD_SEALS, 0), -1) << "the seals themselves are sealed";
	EXPECT_EQ(errno, EPERM);
	ASSERT_EQ(fstat(ch->fd(), &st), 0);
	EXPECT_EQ(st.st_size, size);
	fill(*ch, 0, 50); // more than a sub-buffer: one is complete
	Channel::SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_TRUE(ch->put_subbuf(0, v));
}

TEST(RingBufferHostile, RandomBytesOverTheMappingWhileWritingAndConsuming)
{
	for (uint32_t seed : {1u, 2u, 3u, 4u}) {
		for (Mode mode : {Mode::discard, Mode::overwrite}) {
			SCOPED_TRACE("seed " + std::to_string(seed) +
			             (mode == Mode::discard ? " discard" : " overwrite"));
			auto ch = Channel::create(small_config(mode), "hostile");
			Internals in(*ch);
			std::atomic<bool> stop{false}, scribbling{false}, scribbled{false};
			std::thread writer([&] {
				while (!stop.load(std::memory_order_relaxed))
					fill(*ch, 0, 50);
			});
			// Half of the writes go to the headers and control words (the first page), half anywhere.
			std::thread scribbler([&] {
				while (!scribbling.load())
					std::this_thread::yield();
				std::mt19937_64 rng(seed);
				for (int i = 0; i < 400; ++i) {
					const size_t at = rng() % (i % 2 ? in.raw_size() : 4096);
					const size_t len = std::min<size_t>(1 + rng() % 16, in.raw_size() - at);
					for (size_t b = 0; b < len; ++b)
						std::atomic_ref<uint8_t>(in.raw()[at + b])
							.store(static_cast<uint8_t>(rng()), std::memory_order_relaxed);
					std::this_thread::sleep_for(std::chrono::microseconds(20));
				}
				scribbled = true;
			});
			uint64_t handed = 0, oversized = 0, turns = 0;
			std::vector<uint8_t> copy(4096);
			while (!scribbled.load()) {
				for (uint32_t cpu = 0; cpu < 2; ++cpu) {
					Channel::SubbufView v{};
					if (ch->get_subbuf(cpu, v)) {
						// Readable to its end (a pointer outside the mapping would fault here).
						if (v.content_size > copy.size())
							++oversized;
						else
							std::memcpy(copy.data(), v.data, v.content_size);
						++handed;
						ch->put_subbuf(cpu, v);
					}
					ch->data_ready(cpu);
					if (turns % 16 == 0)
						for (const auto &o : ch->snapshot(cpu))
							oversized += o.bytes.size() > 4096;
				}
				ch->wait_for_data(0);
				if (++turns == 100 || handed >= 4)
					scribbling = true; // the writer is under way
			}
			scribbler.join();
			stop = true;
			writer.join();
			for (uint32_t cpu = 0; cpu < 2; ++cpu)
				ch->flush(cpu, 1u << 30);
			ch->recover_after_producer_death();
			EXPECT_EQ(oversized, 0u) << "sub-buffers handed out larger than a sub-buffer";
			std::printf("seed %u %s: %llu sub-buffers handed out, %s\n", seed,
			            mode == Mode::discard ? "discard" : "overwrite", (unsigned long long)handed,
			            ch->quarantined() ? ("quarantined: " + ch->fault()).c_str() : "not quarantined");
		}
	}
}

} // namespace
} // namespace tracery::ringbuf
