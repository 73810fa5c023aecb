// Unit tests of the consumer (channel_consumer.hpp): what its thread, woken
// by the ring buffer, and finish() hand to its sink (sink.hpp) for a real
// channel (live sessions too: first packets, beacons, an empty packet once
// another stream started), and the stream files of FileSink (file_sink.hpp).
#include "consumer/channel_consumer.hpp"
#include "base/test_temp_dir.hpp"

#include "clock/trace_clock.hpp"
#include "consumer/file_sink.hpp"
#include "consumer/tee_sink.hpp"
#include "ctf/event_header.hpp"
#include "ctf/packet.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tracery::consumer {
namespace {

// The consumer side of the sink interface, kept for inspection.
class RecordingSink final : public PacketSink {
public:
	struct Packet {
		uint32_t cpu;
		ctf::PacketInfo info;
		std::vector<uint8_t> events;
	};

	explicit RecordingSink(std::vector<Packet> &packets, int &closed) : packets_(packets), closed_(closed) {}

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override
	{
		const auto *p = static_cast<const uint8_t *>(events);
		packets_.push_back({cpu, info, size ? std::vector<uint8_t>(p, p + size) : std::vector<uint8_t>{}});
	}
	void close() override { ++closed_; }
	void abandon_after_fork() override {}

private:
	std::vector<Packet> &packets_;
	int &closed_;
};

// A sink that refuses every packet (WriteRefused) while `refuse` says so,
// but for empty ones when `take_empty` says so; what it took is kept.
class RefusingSink final : public PacketSink {
public:
	struct State {
		std::vector<RecordingSink::Packet> packets;
		bool refuse = true;
		bool take_empty = false;
		int refused = 0;
	};
	explicit RefusingSink(State &state) : s_(state) {}

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override
	{
		if (s_.refuse && !(s_.take_empty && size == 0)) {
			s_.refused++;
			throw WriteRefused("disk full (No space left on device) writing /t/chan_0");
		}
		const auto *p = static_cast<const uint8_t *>(events);
		s_.packets.push_back({cpu, info, size ? std::vector<uint8_t>(p, p + size) : std::vector<uint8_t>{}});
	}
	void close() override {}
	void abandon_after_fork() override {}

private:
	State &s_;
};

std::unique_ptr<ringbuf::Channel> small_channel()
{
	ringbuf::Config c;
	c.num_cpus = 1;
	c.num_subbuf = 4;
	c.subbuf_size = 4096;
	c.mode = ringbuf::Mode::discard;
	c.sync = ringbuf::Sync::atomic;
	c.compact_header_size = ctf::kCompactHeaderSize;
	c.extended_header_size = ctf::kExtendedHeaderSize;
	c.compact_ts_bits = ctf::kCompactTsBits;
	return ringbuf::Channel::create(c, "consumer-test");
}

// Writes a record of `payload` bytes, each equal to `fill`, at timestamp ts; false if dropped.
bool write_record(ringbuf::Channel &ch, uint64_t ts, uint32_t payload, uint8_t fill)
{
	ringbuf::Channel::Reservation r;
	if (!ch.reserve(
		    0, payload, true, [ts] { return ts; }, r))
		return false;
	std::memset(r.slot, 0xEE, r.header_size);
	std::memset(r.slot + r.header_size, fill, payload);
	ch.commit(r);
	return true;
}

TEST(ChannelConsumer, HandsEachCompleteSubBufferToItsSinkAndTheRestOnFinish)
{
	auto ch = small_channel();
	std::vector<RecordingSink::Packet> packets;
	int closed = 0;
	ChannelConsumer consumer(*ch, std::make_unique<RecordingSink>(packets, closed), clock::TickSource::ns);

	// 100 records of 4 + 96 bytes: 40 fill a 4096-byte sub-buffer (4000 bytes, the rest padding).
	for (uint32_t i = 0; i < 100; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, static_cast<uint8_t>(i)));
	EXPECT_EQ(consumer.drain(), 2u);
	ASSERT_EQ(packets.size(), 2u);
	for (uint64_t k = 0; k < 2; k++) {
		const auto &p = packets[k];
		EXPECT_EQ(p.cpu, 0u);
		EXPECT_EQ(p.info.seq, k);
		EXPECT_EQ(p.info.cpu_id, 0u);
		EXPECT_EQ(p.info.events_discarded, 0u);
		EXPECT_EQ(p.info.timestamp_begin, 1000 + 40 * k);
		ASSERT_EQ(p.events.size(), 4000u);
		for (uint32_t i = 0; i < 40; i++) // each record's payload, where it was written
			EXPECT_EQ(p.events[i * 100 + 4], static_cast<uint8_t>(40 * k + i)) << "record " << i;
	}
	EXPECT_EQ(closed, 0);

	consumer.finish(); // the partial third sub-buffer: 20 records
	ASSERT_EQ(packets.size(), 3u);
	EXPECT_EQ(packets[2].info.seq, 2u);
	EXPECT_EQ(packets[2].events.size(), 2000u);
	EXPECT_EQ(packets[2].events[19 * 100 + 4], 99);
	EXPECT_GE(packets[2].info.timestamp_end, 1099u);
	EXPECT_EQ(closed, 1);
}

TEST(ChannelConsumer, EventsLostAfterTheLastPacketGoInAnEmptyOne)
{
	auto ch = small_channel();
	std::vector<RecordingSink::Packet> packets;
	int closed = 0;
	ChannelConsumer consumer(*ch, std::make_unique<RecordingSink>(packets, closed), clock::TickSource::ns);

	// Nothing drains: 4 sub-buffers of 40 records fill the buffer, the next 10 are dropped.
	uint32_t written = 0, dropped = 0;
	for (uint32_t i = 0; i < 170; i++)
		(write_record(*ch, 5000 + i, 96, 1) ? written : dropped)++;
	ASSERT_EQ(dropped, 10u);
	EXPECT_EQ(ch->lost(0), 10u);

	consumer.finish();
	// The four full sub-buffers, then an empty packet carrying the count.
	ASSERT_EQ(packets.size(), 5u);
	uint64_t bytes = 0;
	for (size_t k = 0; k < 4; k++) {
		EXPECT_EQ(packets[k].info.seq, k);
		bytes += packets[k].events.size();
	}
	EXPECT_EQ(bytes, uint64_t{written} * 100);
	EXPECT_TRUE(packets[4].events.empty());
	EXPECT_EQ(packets[4].info.events_discarded, 10u);
	EXPECT_EQ(packets[4].info.seq, 4u);
	EXPECT_EQ(closed, 1);
}

// The records of the test's sub-buffers are 100 bytes each: what the trace's
// decoder would count.
uint64_t count_test_records(uint32_t, const ctf::PacketInfo &, const void *, size_t size) { return size / 100; }

TEST(ChannelConsumer, RefusedPacketWaitsAndTheNextCarriesTheEventsDroppedMeanwhile)
{
	auto ch = small_channel();
	RefusingSink::State sink;
	ChannelConsumer consumer(*ch, std::make_unique<RefusingSink>(sink), clock::TickSource::ns,
	                         [](const std::string &) {});

	// A sub-buffer completes; the disk refuses it: it stays in the buffer.
	uint32_t written = 0, dropped = 0, i = 0;
	for (; i < 60; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, 1));
	EXPECT_EQ(consumer.drain(), 0u);
	EXPECT_EQ(sink.refused, 1);
	WriteLosses w = consumer.write_losses();
	EXPECT_TRUE(w.refusing);
	EXPECT_EQ(w.reason, "disk full (No space left on device) writing /t/chan_0");
	EXPECT_EQ(w.events, 0u);
	// Offered again, still refused; meanwhile the writers fill the buffer and drop the rest, counted.
	EXPECT_EQ(consumer.drain(), 0u);
	EXPECT_EQ(sink.refused, 2);
	for (; i < 260; i++)
		(write_record(*ch, 1000 + i, 96, 1) ? written : dropped)++;
	EXPECT_EQ(written, 100u); // 160 records fill the 4 sub-buffers
	EXPECT_EQ(dropped, 100u);
	EXPECT_EQ(consumer.write_losses().events, 100u);
	EXPECT_TRUE(sink.packets.empty());

	// Space returns: the complete sub-buffers in order, the first as it was
	// (the fourth is still open: no writer could move past it).
	sink.refuse = false;
	EXPECT_EQ(consumer.drain(), 3u);
	ASSERT_EQ(sink.packets.size(), 3u);
	for (uint64_t k = 0; k < 3; k++) {
		EXPECT_EQ(sink.packets[k].info.seq, k);
		EXPECT_EQ(sink.packets[k].events.size(), 4000u);
		EXPECT_EQ(sink.packets[k].info.timestamp_begin, 1000 + 40 * k);
		EXPECT_EQ(sink.packets[k].info.events_discarded, 0u);
	}
	w = consumer.write_losses();
	EXPECT_FALSE(w.refusing);
	EXPECT_EQ(w.events, 100u);
	// Writing goes on; the first sub-buffer opened after the drops carries them as discarded events.
	for (; i < 300; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, 1));
	consumer.finish();
	ASSERT_EQ(sink.packets.size(), 5u);
	EXPECT_EQ(sink.packets[3].info.events_discarded, 0u);
	EXPECT_EQ(sink.packets[4].info.events_discarded, 100u);
	EXPECT_EQ(sink.packets[4].info.seq, 4u);
	EXPECT_EQ(sink.packets[4].events.size(), 4000u);
	EXPECT_EQ(consumer.write_losses().not_in_trace, 0u);
	EXPECT_EQ(consumer.write_losses().events, 100u);
}

TEST(ChannelConsumer, WhatFinishCannotWriteIsCountedAndTheLastEmptyPacketCarriesIt)
{
	for (const bool empty_taken : {false, true}) {
		SCOPED_TRACE(empty_taken ? "the last empty packet written" : "nothing written");
		auto ch = small_channel();
		RefusingSink::State sink;
		sink.take_empty = empty_taken;
		ChannelConsumer consumer(*ch, std::make_unique<RefusingSink>(sink), clock::TickSource::ns,
		                         [](const std::string &) {});
		consumer.set_event_counter(count_test_records);
		// A sub-buffer refused; then the buffer fills (4 sub-buffers of 40 records) and 25 records are dropped.
		uint32_t written = 0, dropped = 0;
		for (uint32_t i = 0; i < 185; i++) {
			if (i == 60) {
				EXPECT_EQ(consumer.drain(), 0u);
			}
			(write_record(*ch, 1000 + i, 96, 1) ? written : dropped)++;
		}
		ASSERT_EQ(dropped, 25u);
		consumer.finish();

		const WriteLosses w = consumer.write_losses();
		EXPECT_FALSE(w.refusing);
		EXPECT_EQ(w.unwritten_events, 160u); // every record written, counted
		EXPECT_EQ(w.unwritten_uncounted, 0u);
		EXPECT_EQ(w.events, 185u);
		if (empty_taken) {
			// The trace counts them all: its last packet, after the sub-buffers it
			// skips, and an empty one before it from which readers count.
			ASSERT_EQ(sink.packets.size(), 2u);
			EXPECT_EQ(sink.packets[0].info.events_discarded, 0u);
			EXPECT_EQ(sink.packets[0].info.seq, 4u);
			EXPECT_EQ(sink.packets[1].info.events_discarded, 185u);
			EXPECT_EQ(sink.packets[1].info.seq, 5u);
			EXPECT_EQ(w.not_in_trace, 0u);
		} else {
			EXPECT_TRUE(sink.packets.empty());
			EXPECT_EQ(w.not_in_trace, 185u);
		}
		EXPECT_FALSE(ch->data_ready(0)); // released
	}
}

TEST(ChannelConsumer, WithoutCounterUnwrittenSubBuffersAreReportedUncounted)
{
	auto ch = small_channel();
	RefusingSink::State sink;
	std::vector<std::string> reports;
	ChannelConsumer consumer(*ch, std::make_unique<RefusingSink>(sink), clock::TickSource::ns,
	                         [&](const std::string &line) { reports.push_back(line); });
	for (uint32_t i = 0; i < 100; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, 1));
	consumer.finish(); // 2 full sub-buffers and the partial third
	const WriteLosses w = consumer.write_losses();
	EXPECT_EQ(w.unwritten_uncounted, 3u);
	EXPECT_EQ(w.events, 0u);
	ASSERT_EQ(reports.size(), 2u);
	EXPECT_EQ(reports[0], "writing the trace is refused (disk full (No space left on device) writing /t/chan_0): "
	                      "its events are counted as lost until writes succeed again");
	EXPECT_EQ(reports[1], "0 events lost because writes were refused (disk full (No space left on device) "
	                      "writing /t/chan_0), and 3 sub-buffers not written whose events are unknown");
}

TEST(ChannelConsumer, ThreadOffersARefusedPacketAgainAndResumes)
{
	auto ch = small_channel();
	RefusingSink::State sink;
	std::mutex m; // the thread writes into `sink`
	struct Locked final : PacketSink {
		RefusingSink inner;
		std::mutex &m;
		Locked(RefusingSink::State &s, std::mutex &mu) : inner(s), m(mu) {}
		void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override
		{
			std::lock_guard lock(m);
			inner.write_packet(cpu, info, events, size);
		}
		void close() override {}
		void abandon_after_fork() override {}
	};
	ChannelConsumer consumer(*ch, std::make_unique<Locked>(sink, m), clock::TickSource::ns,
	                         [](const std::string &) {});
	consumer.start_thread();
	const auto wait_for = [&](auto done) {
		for (int t = 0; t < 500 && !done(); t++)
			usleep(10'000);
		return done();
	};
	const auto refused = [&](int n) {
		return [&, n] {
			std::lock_guard lock(m);
			return sink.refused >= n;
		};
	};
	uint32_t i = 0;
	for (; i < 60; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, 1));
	ASSERT_TRUE(wait_for(refused(1)));
	for (; i < 200; i++) // 100 fit, 40 are dropped
		write_record(*ch, 1000 + i, 96, 1);
	EXPECT_TRUE(wait_for(refused(2))); // offered again
	EXPECT_TRUE(consumer.write_losses().refusing);
	{
		std::lock_guard lock(m);
		sink.refuse = false;
	}
	EXPECT_TRUE(wait_for([&] {
		std::lock_guard lock(m);
		return sink.packets.size() == 3; // the fourth is still open
	}));
	EXPECT_FALSE(consumer.write_losses().refusing);
	EXPECT_EQ(consumer.write_losses().events, 40u);
	consumer.finish();
	std::lock_guard lock(m);
	ASSERT_EQ(sink.packets.size(), 5u);
	EXPECT_EQ(sink.packets[4].info.events_discarded, 40u);
}

TEST(ChannelConsumer, LiveStreamsBeginWithAnEmptyPacketDatedBeforeAnyRecord)
{
	auto ch = small_channel();
	std::vector<RecordingSink::Packet> packets;
	int closed = 0;
	const uint64_t before = clock::ticks(clock::TickSource::ns);
	ChannelConsumer consumer(*ch, std::make_unique<RecordingSink>(packets, closed), clock::TickSource::ns);
	consumer.set_live_period(3'600'000'000'000); // no live tick during the test
	consumer.start_thread();
	// Packet 0 of every stream at once, empty, dated when the consumer was made.
	ASSERT_EQ(packets.size(), 1u);
	EXPECT_TRUE(packets[0].events.empty());
	EXPECT_EQ(packets[0].info.seq, 0u);
	EXPECT_EQ(packets[0].info.timestamp_begin, packets[0].info.timestamp_end);
	EXPECT_GE(packets[0].info.timestamp_begin, before);
	EXPECT_LE(packets[0].info.timestamp_begin, clock::ticks(clock::TickSource::ns));
	// The ring buffer's sub-buffer 0 follows as packet 1, accepted (not out of order).
	const uint64_t at = clock::ticks(clock::TickSource::ns);
	for (uint32_t i = 0; i < 10; i++)
		ASSERT_TRUE(write_record(*ch, at + i, 96, 7));
	consumer.finish();
	ASSERT_EQ(packets.size(), 2u);
	EXPECT_EQ(packets[1].info.seq, 1u);
	EXPECT_EQ(packets[1].events.size(), 1000u);
	EXPECT_GE(packets[1].info.timestamp_begin, packets[0].info.timestamp_end);
	EXPECT_FALSE(ch->quarantined());
	EXPECT_EQ(closed, 1);
}

// A sink for a live consumer's thread: packets, beacons and the session's
// started streams (set by the test), under a lock.
class LiveSink final : public PacketSink {
public:
	struct State {
		std::mutex m;
		std::vector<RecordingSink::Packet> packets;
		std::vector<uint64_t> beacons;
		std::vector<size_t> packets_before_beacon; // packets.size() when each beacon came
		std::atomic<uint64_t> started{1};          // this stream
	};
	explicit LiveSink(State &s) : s_(s) {}
	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override
	{
		const std::lock_guard lock(s_.m);
		const auto *p = static_cast<const uint8_t *>(events);
		s_.packets.push_back({cpu, info, size ? std::vector<uint8_t>(p, p + size) : std::vector<uint8_t>{}});
	}
	void idle(uint32_t, uint64_t timestamp) override
	{
		const std::lock_guard lock(s_.m);
		s_.beacons.push_back(timestamp);
		s_.packets_before_beacon.push_back(s_.packets.size());
	}
	uint64_t streams_started() const override { return s_.started.load(); }
	void close() override {}
	void abandon_after_fork() override {}

private:
	State &s_;
};

// Waits (5 s at most) until pred(state) holds under its lock.
template <class P>
bool wait_until(LiveSink::State &s, P pred)
{
	for (int i = 0; i < 500; i++) {
		{
			const std::lock_guard lock(s.m);
			if (pred())
				return true;
		}
		usleep(10'000);
	}
	return false;
}

TEST(ChannelConsumer, ThreadWokenByEachCompletedSubBuffer)
{
	auto ch = small_channel();
	LiveSink::State state;
	ChannelConsumer consumer(*ch, std::make_unique<LiveSink>(state), clock::TickSource::ns);
	consumer.start_thread();
	usleep(20'000); // the thread blocks, waiting for data
	// Each sub-buffer (40 records) is complete once the next record goes to
	// the next one, and then written by the thread. Its wait ends at the commit
	// that completes one, not at its timeout (at least 50 ms, the shortest
	// resync interval): 20 of them take far less than 20 timeouts.
	constexpr size_t kSubbufs = 20;
	const auto write_subbuf = [&ch] {
		const uint64_t at = clock::ticks(clock::TickSource::ns);
		for (uint32_t i = 0; i < 40; i++)
			ASSERT_TRUE(write_record(*ch, at + i, 96, 3));
	};
	write_subbuf();
	const auto start = std::chrono::steady_clock::now();
	for (size_t k = 0; k < kSubbufs; k++) {
		write_subbuf();
		ASSERT_TRUE(wait_until(state, [&] { return state.packets.size() == k + 1; })) << "sub-buffer " << k;
	}
	const auto elapsed = std::chrono::steady_clock::now() - start;
	EXPECT_LT(elapsed, kSubbufs * std::chrono::milliseconds(25));
	consumer.finish(); // and the last one
	const std::lock_guard lock(state.m);
	ASSERT_EQ(state.packets.size(), kSubbufs + 1);
	for (size_t k = 0; k <= kSubbufs; k++) {
		EXPECT_EQ(state.packets[k].info.seq, k);
		EXPECT_EQ(state.packets[k].events.size(), 4000u);
	}
}

TEST(ChannelConsumer, IdleLiveStreamGetsAnEmptyPacketOnceAnotherStreamStarted)
{
	auto ch = small_channel();
	LiveSink::State s;
	ChannelConsumer consumer(*ch, std::make_unique<LiveSink>(s), clock::TickSource::ns);
	consumer.set_live_period(1'000'000);
	consumer.start_thread();
	// Idle: beacons only, after its first (empty) packet.
	ASSERT_TRUE(wait_until(s, [&] { return s.beacons.size() >= 2; }));
	{
		const std::lock_guard lock(s.m);
		ASSERT_EQ(s.packets.size(), 1u);
	}
	// Another stream of the session started: the next tick writes an empty
	// packet instead of a beacon, numbered after the first; then beacons again.
	s.started = 2;
	ASSERT_TRUE(wait_until(s, [&] { return s.packets.size() == 2; }));
	size_t beacons = 0;
	{
		const std::lock_guard lock(s.m);
		const RecordingSink::Packet &p = s.packets[1];
		EXPECT_TRUE(p.events.empty());
		EXPECT_EQ(p.info.events, 0u); // counted: none (a relay that drops it can say so)
		EXPECT_EQ(p.info.seq, 1u);
		EXPECT_EQ(p.info.timestamp_begin, p.info.timestamp_end);
		EXPECT_GE(p.info.timestamp_begin, s.packets[0].info.timestamp_end);
		for (size_t b = 0; b < s.beacons.size(); b++) // the beacons before it (a live tick is 1 ms)
			if (s.packets_before_beacon[b] < 2) {
				EXPECT_GE(p.info.timestamp_begin, s.beacons[b]);
			}
		EXPECT_LE(p.info.timestamp_begin, clock::ticks(clock::TickSource::ns));
		beacons = s.beacons.size();
	}
	ASSERT_TRUE(wait_until(s, [&] { return s.beacons.size() >= beacons + 2; }));
	// The ring buffer's sub-buffer 0 follows as packet 2.
	const uint64_t at = clock::ticks(clock::TickSource::ns);
	for (uint32_t i = 0; i < 10; i++)
		ASSERT_TRUE(write_record(*ch, at + i, 96, 7));
	consumer.finish();
	const std::lock_guard lock(s.m);
	ASSERT_EQ(s.packets.size(), 3u);
	EXPECT_EQ(s.packets[2].info.seq, 2u);
	EXPECT_EQ(s.packets[2].events.size(), 1000u);
	EXPECT_EQ(s.packets[2].info.events, ctf::kEventsUnknown); // a sub-buffer's records are not counted
	EXPECT_GE(s.packets[2].info.timestamp_begin, s.packets[1].info.timestamp_end);
	EXPECT_FALSE(ch->quarantined());
}

std::vector<uint8_t> read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint64_t bytes_of(const std::vector<RecordingSink::Packet> &packets)
{
	uint64_t n = 0;
	for (const auto &p : packets)
		n += p.events.size();
	return n;
}

TEST(ChannelConsumer, RotationWritesWhatTheBufferHoldsThenGoesOnInTheNextSink)
{
	auto ch = small_channel();
	std::vector<RecordingSink::Packet> before, after;
	int closed_before = 0, closed_after = 0, done = 0;
	ChannelConsumer consumer(*ch, std::make_unique<RecordingSink>(before, closed_before), clock::TickSource::ns);

	// A sub-buffer and a half; no thread: the rotation happens in the call.
	for (uint32_t i = 0; i < 60; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, static_cast<uint8_t>(i)));
	consumer.rotate(std::make_unique<RecordingSink>(after, closed_after), [&] { done++; });
	EXPECT_EQ(done, 1);
	EXPECT_EQ(closed_before, 1);
	ASSERT_EQ(before.size(), 2u);
	EXPECT_EQ(bytes_of(before), 6000u) << "the partial sub-buffer is closed and written too";
	EXPECT_EQ(before[1].events[19 * 100 + 4], 59);
	EXPECT_TRUE(after.empty());

	for (uint32_t i = 0; i < 30; i++)
		ASSERT_TRUE(write_record(*ch, 2000 + i, 96, static_cast<uint8_t>(100 + i)));
	consumer.finish();
	ASSERT_EQ(after.size(), 1u);
	EXPECT_EQ(after[0].info.seq, 2u) << "the stream's packets are numbered on";
	EXPECT_EQ(after[0].events.size(), 3000u);
	EXPECT_EQ(after[0].events[4], 100);
	EXPECT_EQ(closed_before, 1);
	EXPECT_EQ(closed_after, 1);
	EXPECT_EQ(done, 1);
}

TEST(ChannelConsumer, ThreadRotatesAtItsNextTurn)
{
	auto ch = small_channel();
	std::vector<RecordingSink::Packet> before, after;
	int closed_before = 0, closed_after = 0;
	ChannelConsumer consumer(*ch, std::make_unique<RecordingSink>(before, closed_before), clock::TickSource::ns);
	consumer.start_thread();
	for (uint32_t i = 0; i < 50; i++)
		ASSERT_TRUE(write_record(*ch, 1000 + i, 96, 1));
	std::mutex m;
	std::condition_variable cv;
	bool done = false;
	consumer.rotate(std::make_unique<RecordingSink>(after, closed_after), [&] {
		std::lock_guard lock(m);
		done = true;
		cv.notify_all();
	});
	{
		std::unique_lock lock(m);
		ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; }));
	}
	EXPECT_EQ(bytes_of(before), 5000u);
	EXPECT_EQ(closed_before, 1);
	for (uint32_t i = 0; i < 10; i++)
		ASSERT_TRUE(write_record(*ch, 2000 + i, 96, 2));
	consumer.finish();
	EXPECT_EQ(bytes_of(after), 1000u);
	EXPECT_EQ(closed_after, 1);
}

TEST(ChannelConsumer, EventsLostBeforeARotationAreCountedInTheNextSink)
{
	auto ch = small_channel();
	std::vector<RecordingSink::Packet> before, after;
	int closed_before = 0, closed_after = 0;
	ChannelConsumer consumer(*ch, std::make_unique<RecordingSink>(before, closed_before), clock::TickSource::ns);
	// The buffer fills (4 sub-buffers of 40 records), the next 10 records are dropped.
	for (uint32_t i = 0; i < 170; i++)
		write_record(*ch, 5000 + i, 96, 1);
	ASSERT_EQ(ch->lost(0), 10u);
	consumer.rotate(std::make_unique<RecordingSink>(after, closed_after), {});
	ASSERT_EQ(before.size(), 4u);
	EXPECT_EQ(before.back().info.events_discarded, 0u);
	for (uint32_t i = 0; i < 5; i++)
		ASSERT_TRUE(write_record(*ch, 6000 + i, 96, 2));
	consumer.finish();
	// The next sink's stream begins with an empty packet counting what the
	// old one showed, dated at its end: a reader of it alone sees the 10.
	ASSERT_EQ(after.size(), 2u);
	EXPECT_TRUE(after[0].events.empty());
	EXPECT_EQ(after[0].info.events_discarded, 0u);
	EXPECT_EQ(after[0].info.timestamp_begin, before.back().info.timestamp_end);
	EXPECT_EQ(after[1].info.events_discarded, 10u);
	EXPECT_EQ(after[1].events.size(), 500u);
	EXPECT_GT(after[1].info.seq, before.back().info.seq);
}

TEST(FileSink, OneStreamFilePerCpuCreatedOnItsFirstPacket)
{
	const base::TestTempDir dir("tracery-consumer-test");
	const ctf::Uuid uuid = *ctf::Uuid::parse("01234567-89ab-cdef-0123-456789abcdef");
	FileSink sink(dir.path(), StreamNames{"chan_42", 3, 7u << 16, uuid}, 4);

	const uint8_t events[5] = {1, 2, 3, 4, 5};
	ctf::PacketInfo info{};
	info.timestamp_begin = 10;
	info.timestamp_end = 20;
	info.seq = 0;
	info.cpu_id = 2;
	sink.write_packet(2, info, events, sizeof events);
	sink.write_packet(2, info, nullptr, 0);
	sink.close();

	EXPECT_FALSE(std::filesystem::exists(dir.path() + "/chan_42_0")); // no packet, no file
	const std::vector<uint8_t> file = read_file(dir.path() + "/chan_42_2");
	ASSERT_EQ(file.size(), 2 * ctf::kPacketPrefixSize + sizeof events);
	EXPECT_EQ(base::load_le<uint32_t>(file.data()), ctf::kPacketMagic);
	EXPECT_EQ(base::load_le<uint32_t>(file.data() + 20), 3u);             // stream_id
	EXPECT_EQ(base::load_le<uint64_t>(file.data() + 24), (7u << 16) + 2); // stream_instance_id
	EXPECT_EQ(base::load_le<uint64_t>(file.data() + 48), (84u + 5u) * 8); // content_size, bits
	EXPECT_EQ(std::memcmp(file.data() + ctf::kPacketPrefixSize, events, sizeof events), 0);

	EXPECT_THROW(sink.write_packet(4, info, events, 1), std::out_of_range); // no such CPU
}

TEST(FileSink, RefusedWriteIsCutBackToTheLastWholePacket)
{
	const base::TestTempDir dir("tracery-consumer-test");
	const ctf::Uuid uuid = *ctf::Uuid::parse("01234567-89ab-cdef-0123-456789abcdef");
	FileSink sink(dir.path(), StreamNames{"chan", 0, 0, uuid}, 1);
	const std::vector<uint8_t> events(4000, 7);
	ctf::PacketInfo info{};
	sink.write_packet(0, info, events.data(), events.size());
	const uint64_t one = ctf::kPacketPrefixSize + events.size();

	// The file may not grow past 1.5 packets: the second packet is written in
	// part, then refused (EFBIG), and cut back.
	struct rlimit old;
	ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
	const auto old_handler = signal(SIGXFSZ, SIG_IGN);
	struct rlimit small = old;
	small.rlim_cur = one + one / 2;
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
	info.seq = 1;
	std::string why;
	try {
		sink.write_packet(0, info, events.data(), events.size());
	} catch (const WriteRefused &e) {
		why = e.what();
	}
	ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_handler);
	EXPECT_EQ(why, "file too large (File too large) writing " + dir.path() + "/chan_0");
	EXPECT_EQ(std::filesystem::file_size(dir.path() + "/chan_0"), one);

	// Offered again once writes are allowed: two whole packets.
	sink.write_packet(0, info, events.data(), events.size());
	sink.close();
	const std::vector<uint8_t> file = read_file(dir.path() + "/chan_0");
	ASSERT_EQ(file.size(), 2 * one);
	EXPECT_EQ(base::load_le<uint32_t>(file.data() + one), ctf::kPacketMagic);
	EXPECT_EQ(base::load_le<uint64_t>(file.data() + one + 64), 1u); // packet_seq_num
}

// One side refuses: the packet, offered again, goes only to that side.
TEST(TeeSink, PacketOfferedAgainGoesOnlyToTheSinkThatRefusedIt)
{
	RefusingSink::State refusing;
	std::vector<RecordingSink::Packet> taken;
	int closed = 0;
	TeeSink tee(std::make_unique<RefusingSink>(refusing), std::make_unique<RecordingSink>(taken, closed));
	ctf::PacketInfo info{};
	info.seq = 5;
	EXPECT_THROW(tee.write_packet(0, info, nullptr, 0), WriteRefused);
	EXPECT_EQ(taken.size(), 1u);
	EXPECT_THROW(tee.write_packet(0, info, nullptr, 0), WriteRefused);
	refusing.refuse = false;
	tee.write_packet(0, info, nullptr, 0);
	EXPECT_EQ(taken.size(), 1u);
	ASSERT_EQ(refusing.packets.size(), 1u);
	info.seq = 6;
	tee.write_packet(0, info, nullptr, 0);
	EXPECT_EQ(taken.size(), 2u);
	EXPECT_EQ(refusing.packets.size(), 2u);
}

} // namespace
} // namespace tracery::consumer
