// ring_buffer_test.cpp — single-threaded unit tests of the ring buffer: config validation, exact round trip,
// header choice, sub-buffer switch/padding, discard and overwrite modes, flush, out-of-order commits and the
// committed prefix (reopening, catching up), lost/seq bookkeeping, attach, wakeup and crash recovery of
// in-flight records.
#include "ringbuf/ring_buffer.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ringbuf/test_internals.hpp"
#include "ringbuf/test_records.hpp"

namespace tracery::ringbuf {
namespace {

using testing::ctf_config;
using testing::Internals;
using testing::kCompactHs;
using testing::kExtendedHs;
using Reservation = Channel::Reservation;
using SubbufView = Channel::SubbufView;

constexpr uint64_t k27 = uint64_t{1} << 27;

struct FakeClock {
	uint64_t now = 1000;
	uint64_t operator()() const { return now; }
};

// Reserves a record of exactly `size` bytes (header included) using the header the buffer picks for `size -
// compact` payload; returns the reservation (slot filled with a recognisable pattern) without committing.
Reservation reserve_raw(Channel &ch, uint32_t cpu, uint32_t payload, FakeClock &clk, bool allow_compact = true)
{
	Reservation r{};
	EXPECT_TRUE(ch.reserve(cpu, payload, allow_compact, clk, r));
	for (uint32_t i = 0; i < r.size; ++i)
		r.slot[i] = static_cast<uint8_t>(r.offset + i * 7);
	return r;
}

Reservation write_raw(Channel &ch, uint32_t cpu, uint32_t payload, FakeClock &clk, bool allow_compact = true)
{
	Reservation r = reserve_raw(ch, cpu, payload, clk, allow_compact);
	ch.commit(r);
	return r;
}

void expect_invalid(Config c, const char *field)
{
	try {
		Channel::validate(c);
		ADD_FAILURE() << "config accepted, expected complaint about " << field;
	} catch (const std::invalid_argument &e) {
		EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
		// config_error is validate()'s phrase, and starts with the field it names.
		EXPECT_NE(std::string(e.what()).find(Channel::config_error(c)), std::string::npos) << e.what();
	}
	EXPECT_EQ(Channel::config_error(c).rfind(field == std::string("2^40") ? "num_cpus x" : field, 0), 0u)
		<< Channel::config_error(c);
	EXPECT_THROW(Channel::create(c, "bad"), std::invalid_argument);
}

TEST(RingBufferConfig, Validation)
{
	const Config ok = ctf_config(Mode::discard, 2, 4, 4096);
	EXPECT_NO_THROW(Channel::validate(ok));
	Config c = ok;
	c.num_cpus = 0;
	expect_invalid(c, "num_cpus");
	c = ok;
	c.num_subbuf = 1;
	expect_invalid(c, "num_subbuf");
	c.num_subbuf = 3;
	expect_invalid(c, "num_subbuf");
	c = ok;
	c.subbuf_size = 2048;
	expect_invalid(c, "subbuf_size");
	c.subbuf_size = 5000;
	expect_invalid(c, "subbuf_size");
	c = ok;
	c.mode = static_cast<Mode>(7);
	expect_invalid(c, "mode");
	c = ok;
	c.compact_header_size = 0;
	expect_invalid(c, "compact_header_size");
	c.compact_header_size = 14;
	expect_invalid(c, "compact_header_size");
	c = ok;
	c.extended_header_size = 5000;
	c.subbuf_size = 8192;
	expect_invalid(c, "extended_header_size");
	c = ok;
	c.compact_ts_bits = 64;
	expect_invalid(c, "compact_ts_bits");
	c = ok;
	c.num_cpus = 8192;
	c.num_subbuf = 65536;
	c.subbuf_size = 1u << 20;
	expect_invalid(c, "2^40");

	EXPECT_EQ(Channel::config_error(ok), "");
	auto ch = Channel::create(ok, "valid");
	EXPECT_EQ(ch->config().num_cpus, 2u);
	EXPECT_EQ(ch->config().subbuf_size, 4096u);
	EXPECT_GE(ch->mapping_size(), 2u * 4 * 4096);
	EXPECT_GE(ch->fd(), 0);
}

// What a channel costs is known before it is made (the daemon's quota): the size of the mapping create() makes.
TEST(RingBufferConfig, MappingSizeBeforeCreation)
{
	for (const Config &c : {ctf_config(Mode::discard, 1, 2, 4096), ctf_config(Mode::overwrite, 3, 8, 16384),
	                        ctf_config(Mode::discard, 2, 64, 4096)}) {
		auto ch = Channel::create(c, "sized");
		EXPECT_EQ(Channel::mapping_size_for(c), ch->mapping_size());
		EXPECT_GT(Channel::mapping_size_for(c), uint64_t{c.num_cpus} * c.num_subbuf * c.subbuf_size);
		struct stat st;
		ASSERT_EQ(fstat(ch->fd(), &st), 0);
		EXPECT_EQ(static_cast<uint64_t>(st.st_size), Channel::mapping_size_for(c));
	}
}

TEST(RingBuffer, RoundTripExactBytes)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 2, 4, 4096), "roundtrip");
	FakeClock clk;
	const std::vector<uint32_t> payloads = {0, 1, 7, 100, 1000, 33};
	std::vector<uint8_t> expected;
	std::vector<uint64_t> ts;
	uint64_t expect_offset = 0;
	for (std::size_t i = 0; i < payloads.size(); ++i) {
		clk.now += 10;
		Reservation r = write_raw(*ch, 1, payloads[i], clk);
		EXPECT_EQ(r.cpu, 1u);
		EXPECT_EQ(r.offset, expect_offset);
		EXPECT_EQ(r.header_size, kCompactHs);
		EXPECT_EQ(r.size, kCompactHs + payloads[i]);
		EXPECT_EQ(r.timestamp, clk.now);
		expect_offset += r.size;
		for (uint32_t b = 0; b < r.size; ++b)
			expected.push_back(static_cast<uint8_t>(r.offset + b * 7));
		ts.push_back(r.timestamp);
	}
	SubbufView v{};
	EXPECT_FALSE(ch->get_subbuf(1, v)) << "partial sub-buffer must not be readable before flush";
	EXPECT_FALSE(ch->get_subbuf(0, v)) << "nothing was written to cpu 0";
	ch->flush(1, clk.now + 500);
	ASSERT_TRUE(ch->get_subbuf(1, v));
	EXPECT_EQ(v.cpu, 1u);
	EXPECT_EQ(v.seq, 0u);
	EXPECT_EQ(v.content_size, expected.size());
	EXPECT_EQ(v.timestamp_begin, ts.front());
	EXPECT_EQ(v.timestamp_end, clk.now + 500);
	EXPECT_EQ(v.lost_before, 0u);
	ASSERT_EQ(std::memcmp(v.data, expected.data(), expected.size()), 0);
	EXPECT_TRUE(ch->put_subbuf(1, v));
	EXPECT_FALSE(ch->get_subbuf(1, v));
	EXPECT_EQ(ch->lost(1), 0u);
}

TEST(RingBuffer, CompactVersusExtendedHeader)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "headers");
	FakeClock clk;
	clk.now = 5 * k27 + 17;
	Reservation a = write_raw(*ch, 0, 10, clk); // first of its sub-buffer: delta to timestamp_begin is 0
	EXPECT_EQ(a.header_size, kCompactHs);
	clk.now += k27 - 1;
	EXPECT_EQ(write_raw(*ch, 0, 10, clk).header_size, kCompactHs) << "delta 2^27-1 fits the compact header";
	clk.now += k27;
	EXPECT_EQ(write_raw(*ch, 0, 10, clk).header_size, kExtendedHs) << "delta 2^27 needs the extended header";
	EXPECT_EQ(write_raw(*ch, 0, 10, clk, /*allow_compact=*/false).header_size, kExtendedHs);
	EXPECT_EQ(write_raw(*ch, 0, 10, clk).header_size, kCompactHs) << "delta 0 after an extended header";
	clk.now += 3 * k27;
	Reservation e = write_raw(*ch, 0, 10, clk, false);
	EXPECT_EQ(e.header_size, kExtendedHs);
	EXPECT_EQ(e.size, kExtendedHs + 10);
	// A record that opens a new sub-buffer is compact whatever the gap: its base is its own timestamp_begin.
	const uint64_t used = e.offset + e.size;
	clk.now += 1;
	write_raw(*ch, 0, static_cast<uint32_t>(4096 - used - kCompactHs - 1), clk); // leaves 1 byte
	clk.now += 100 * k27;
	Reservation f = write_raw(*ch, 0, 10, clk);
	EXPECT_EQ(f.offset, 4096u);
	EXPECT_EQ(f.header_size, kCompactHs);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.timestamp_end, f.timestamp);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	ch->flush(0, clk.now);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_EQ(v.timestamp_begin, f.timestamp);
	// Extended header also for an opener when compact is not allowed.
	clk.now += 1;
	EXPECT_EQ(write_raw(*ch, 0, 10, clk, false).header_size, kExtendedHs);

	// compact_ts_bits = 0: only a zero delta is compact.
	Config c0 = ctf_config(Mode::discard, 1, 2, 4096);
	c0.compact_ts_bits = 0;
	auto ch0 = Channel::create(c0, "bits0");
	FakeClock k0;
	EXPECT_EQ(write_raw(*ch0, 0, 1, k0).header_size, kCompactHs);
	EXPECT_EQ(write_raw(*ch0, 0, 1, k0).header_size, kCompactHs);
	k0.now += 1;
	EXPECT_EQ(write_raw(*ch0, 0, 1, k0).header_size, kExtendedHs);
}

TEST(RingBuffer, TimestampsClampedToLastSeen)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "clamp");
	FakeClock clk;
	clk.now = 5000;
	EXPECT_EQ(write_raw(*ch, 0, 8, clk).timestamp, 5000u);
	clk.now = 4000; // another process' clock, slightly behind
	Reservation r = write_raw(*ch, 0, 8, clk);
	EXPECT_EQ(r.timestamp, 5000u);
	EXPECT_EQ(r.header_size, kCompactHs);
	ch->flush(0, 100); // flush with an older clock: timestamp_end still covers the records
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.timestamp_end, 5000u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	clk.now = 4500;
	EXPECT_EQ(write_raw(*ch, 0, 8, clk).timestamp, 5000u) << "the flush timestamp is part of buffer order too";
}

TEST(RingBuffer, SubbufSwitchAndPadding)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "switch");
	FakeClock clk;
	std::vector<Reservation> rs;
	for (int i = 0; i < 4; ++i) { // 4 x 1000 bytes = 4000: 96 bytes left
		clk.now += 1;
		rs.push_back(write_raw(*ch, 0, 1000 - kCompactHs, clk));
		EXPECT_EQ(rs.back().offset, uint64_t(i) * 1000);
	}
	SubbufView v{};
	EXPECT_FALSE(ch->get_subbuf(0, v));
	clk.now += 1;
	Reservation fifth = reserve_raw(*ch, 0, 1000 - kCompactHs, clk);
	EXPECT_EQ(fifth.offset, 4096u) << "a record that does not fit goes to the start of the next sub-buffer";
	// The old sub-buffer was closed and its 96 bytes of padding committed by the switch: complete already.
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 0u);
	EXPECT_EQ(v.content_size, 4000u);
	EXPECT_EQ(v.timestamp_begin, rs.front().timestamp);
	EXPECT_EQ(v.timestamp_end, fifth.timestamp);
	EXPECT_EQ(v.data[3999], static_cast<uint8_t>(3000 + 999 * 7));
	ASSERT_TRUE(ch->put_subbuf(0, v));
	ch->commit(fifth);

	// A sub-buffer closed while one of its records is in flight completes when that record commits.
	clk.now += 1;
	Reservation a = write_raw(*ch, 0, 2000, clk);
	Reservation b = reserve_raw(*ch, 0, 500, clk); // in flight
	EXPECT_EQ(b.offset, a.offset + a.size);
	clk.now += 1;
	Reservation c = write_raw(*ch, 0, 3000, clk); // does not fit: closes sub-buffer 1
	EXPECT_EQ(c.offset, 2u * 4096);
	EXPECT_FALSE(ch->get_subbuf(0, v)) << "sub-buffer 1 still has a record in flight";
	ch->commit(b);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_EQ(v.content_size, fifth.size + a.size + b.size);
	EXPECT_EQ(v.timestamp_end, c.timestamp);
	ASSERT_TRUE(ch->put_subbuf(0, v));
}

TEST(RingBuffer, ExactFillAndWholeSubbufRecords)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "exact");
	FakeClock clk;
	Reservation last{};
	for (int i = 0; i < 4; ++i) {
		clk.now += 3;
		last = write_raw(*ch, 0, 1024 - kCompactHs, clk);
	}
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v)) << "an exactly filled sub-buffer completes without flush";
	EXPECT_EQ(v.content_size, 4096u);
	EXPECT_EQ(v.timestamp_end, last.timestamp);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	Reservation whole = write_raw(*ch, 0, 4096 - kCompactHs, clk); // exactly one sub-buffer
	EXPECT_EQ(whole.offset, 4096u);
	EXPECT_EQ(whole.size, 4096u);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_EQ(v.content_size, 4096u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	Reservation r{};
	EXPECT_FALSE(ch->reserve(0, 4096 - kCompactHs + 1, true, clk, r)) << "larger than a sub-buffer";
	EXPECT_FALSE(ch->reserve(0, 4096 - kExtendedHs + 1, false, clk, r));
	EXPECT_FALSE(ch->reserve(0, UINT32_MAX, true, clk, r));
	EXPECT_EQ(ch->lost(0), 3u);
	EXPECT_TRUE(ch->reserve(0, 4096 - kExtendedHs, false, clk, r));
	ch->commit(r);
	EXPECT_FALSE(ch->reserve(7, 10, true, clk, r)) << "no such buffer";
	EXPECT_EQ(ch->lost(7), 0u);
}

TEST(RingBuffer, DiscardModeDropsExactlyWhenFullAndResumes)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "discard");
	FakeClock clk;
	Reservation r{};
	for (int i = 0; i < 8; ++i) { // fills sub-buffers 0 and 1 exactly
		clk.now += 1;
		ASSERT_TRUE(ch->reserve(0, 1024 - kCompactHs, true, clk, r)) << i;
		ch->commit(r);
	}
	int dropped = 0;
	for (int i = 0; i < 10; ++i) {
		clk.now += 1;
		if (!ch->reserve(0, 100, true, clk, r))
			++dropped;
	}
	EXPECT_EQ(dropped, 10);
	EXPECT_EQ(ch->lost(0), 10u);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 0u);
	EXPECT_EQ(v.lost_before, 0u);
	// Still full while sub-buffer 0 is held.
	EXPECT_FALSE(ch->reserve(0, 100, true, clk, r));
	EXPECT_EQ(ch->lost(0), 11u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	EXPECT_FALSE(ch->put_subbuf(0, v)) << "double put";
	clk.now += 1;
	ASSERT_TRUE(ch->reserve(0, 100, true, clk, r));
	EXPECT_EQ(r.offset, 2u * 4096);
	ch->commit(r);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_EQ(v.lost_before, 0u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	ch->flush(0, clk.now);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 2u);
	EXPECT_EQ(v.lost_before, 11u) << "drops before sub-buffer 2 was opened";
	EXPECT_EQ(v.content_size, r.size);
	ASSERT_TRUE(ch->put_subbuf(0, v));
}

// What a monitor samples: the bytes not yet released (the open sub-buffer's included, never more than the
// buffer), and the bytes released so far, whole sub-buffers.
TEST(RingBuffer, UnconsumedAndConsumedBytes)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "usage");
	FakeClock clk;
	EXPECT_EQ(ch->unconsumed_bytes(0), 0u);
	write_raw(*ch, 0, 1000 - kCompactHs, clk);
	EXPECT_EQ(ch->unconsumed_bytes(0), 1000u);
	for (int i = 0; i < 8; ++i) { // the rest of sub-buffer 0, then sub-buffer 1, then drops
		clk.now += 1;
		Reservation r{};
		if (ch->reserve(0, 1024 - kCompactHs, true, clk, r))
			ch->commit(r);
	}
	EXPECT_EQ(ch->unconsumed_bytes(0), 8192u) << "a full buffer";
	EXPECT_GT(ch->lost(0), 0u);
	EXPECT_EQ(ch->consumed_bytes(0), 0u);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	ASSERT_TRUE(ch->put_subbuf(0, v));
	EXPECT_EQ(ch->consumed_bytes(0), 4096u);
	EXPECT_EQ(ch->unconsumed_bytes(0), 4096u);
	EXPECT_EQ(ch->unconsumed_bytes(1), 0u) << "no such buffer";
	ch->quarantine("test");
	EXPECT_EQ(ch->unconsumed_bytes(0), 0u);
	EXPECT_EQ(ch->consumed_bytes(0), 0u);
}

// write(): reserve, fill and commit in one call, on its common path (compact header inside the open sub-buffer)
// and on the general one (a sub-buffer's first record, extended headers, a switch), and a dropped record that is never
// filled; the bytes read back are what fill wrote where reserve() would have put them.
TEST(RingBuffer, WriteFillsAndCommitsOnEveryPath)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "write");
	FakeClock clk;
	std::vector<Reservation> seen;
	auto write = [&](uint32_t payload, bool allow_compact) {
		return ch->write(0, payload, allow_compact, clk, [&](const Reservation &r) {
			seen.push_back(r);
			for (uint32_t i = 0; i < r.size; ++i)
				r.slot[i] = static_cast<uint8_t>(r.offset + i * 7);
		});
	};
	const struct {
		uint64_t dt;
		uint32_t payload;
		bool allow_compact;
		uint64_t offset;
		uint32_t header_size;
	} steps[] = {
		{1, 100, true, 0, kCompactHs},                        // opens the sub-buffer: the general path
		{1, 100, true, kCompactHs + 100, kCompactHs},         // the common path
		{1, 100, false, 2 * (kCompactHs + 100), kExtendedHs}, // extended by request
		{k27, 100, true, 2 * kCompactHs + kExtendedHs + 300, kExtendedHs}, // too long after the previous record
		{1, 3900, true, 4096, kCompactHs},                                 // does not fit: the next sub-buffer
	};
	std::vector<uint8_t> expected;
	for (const auto &st : steps) {
		clk.now += st.dt;
		ASSERT_TRUE(write(st.payload, st.allow_compact));
		const Reservation &r = seen.back();
		EXPECT_EQ(r.offset, st.offset);
		EXPECT_EQ(r.header_size, st.header_size);
		EXPECT_EQ(r.size, st.header_size + st.payload);
		EXPECT_EQ(r.timestamp, clk.now);
		if (r.offset < 4096)
			for (uint32_t i = 0; i < r.size; ++i)
				expected.push_back(static_cast<uint8_t>(r.offset + i * 7));
	}
	// Both sub-buffers are taken: the next record is dropped, counted, and fill is not called.
	clk.now += 1;
	EXPECT_FALSE(write(3000, true));
	EXPECT_EQ(seen.size(), std::size(steps));
	EXPECT_EQ(ch->lost(0), 1u);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v)) << "sub-buffer 0 was closed by the switch and every record committed";
	ASSERT_EQ(v.content_size, expected.size());
	EXPECT_EQ(std::memcmp(v.data, expected.data(), expected.size()), 0);
	EXPECT_TRUE(ch->put_subbuf(0, v));
}

TEST(RingBuffer, OverwriteModeKeepsNewest)
{
	auto ch = Channel::create(ctf_config(Mode::overwrite, 1, 4, 4096), "overwrite");
	FakeClock clk;
	Reservation r{};
	for (uint64_t i = 0; i < 40; ++i) { // 10 sub-buffers of 4 records of 1024 bytes
		clk.now += 1;
		ASSERT_TRUE(ch->reserve(0, 1024 - kCompactHs, true, clk, r));
		std::memcpy(r.slot + kCompactHs, &i, sizeof i);
		ch->commit(r);
	}
	EXPECT_EQ(ch->lost(0), 0u);
	auto records_of = [](const Channel::OwnedSubbuf &o) {
		std::vector<uint64_t> ids;
		for (uint32_t pos = 0; pos < o.bytes.size(); pos += 1024) {
			uint64_t id;
			std::memcpy(&id, o.bytes.data() + pos + kCompactHs, sizeof id);
			ids.push_back(id);
		}
		return ids;
	};
	auto snap = ch->snapshot(0);
	ASSERT_EQ(snap.size(), 4u);
	for (uint64_t i = 0; i < 4; ++i) {
		EXPECT_EQ(snap[i].seq, 6 + i);
		EXPECT_EQ(snap[i].bytes.size(), 4096u);
		EXPECT_EQ(records_of(snap[i]), (std::vector<uint64_t>{24 + 4 * i, 25 + 4 * i, 26 + 4 * i, 27 + 4 * i}));
	}
	// Two more records: sub-buffer 10 (slot of 6) is entered, 6 is gone, 10 is partial.
	for (uint64_t i = 40; i < 42; ++i) {
		clk.now += 1;
		ASSERT_TRUE(ch->reserve(0, 1024 - kCompactHs, true, clk, r));
		std::memcpy(r.slot + kCompactHs, &i, sizeof i);
		ch->commit(r);
	}
	snap = ch->snapshot(0);
	ASSERT_EQ(snap.size(), 3u);
	EXPECT_EQ(snap[0].seq, 7u);
	EXPECT_EQ(snap[2].seq, 9u);
	ch->flush(0, clk.now);
	snap = ch->snapshot(0);
	ASSERT_EQ(snap.size(), 4u);
	EXPECT_EQ(snap[3].seq, 10u);
	EXPECT_EQ(records_of(snap[3]), (std::vector<uint64_t>{40, 41}));
	EXPECT_EQ(snap[3].view().content_size, 2048u);
	// Streaming in overwrite mode: the consumer position was pushed to the oldest sub-buffer left.
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 7u);
	EXPECT_TRUE(ch->put_subbuf(0, v));
	EXPECT_EQ(ch->snapshot(0).size(), 3u) << "snapshot starts at the consumer position";
}

TEST(RingBuffer, OverwriteModeDropsWhileTargetStillWritten)
{
	auto ch = Channel::create(ctf_config(Mode::overwrite, 1, 2, 4096), "ow-drop");
	FakeClock clk;
	Reservation held = reserve_raw(*ch, 0, 1024 - kCompactHs, clk); // in flight in sub-buffer 0
	Reservation r{};
	for (int i = 0; i < 7; ++i) { // rest of sub-buffer 0 and all of 1
		ASSERT_TRUE(ch->reserve(0, 1024 - kCompactHs, true, clk, r));
		ch->commit(r);
	}
	EXPECT_FALSE(ch->reserve(0, 10, true, clk, r)) << "sub-buffer 0 is still being written";
	EXPECT_FALSE(ch->reserve(0, 10, true, clk, r));
	EXPECT_EQ(ch->lost(0), 2u);
	ch->commit(held);
	ASSERT_TRUE(ch->reserve(0, 10, true, clk, r));
	EXPECT_EQ(r.offset, 2u * 4096);
	ch->commit(r);
	auto snap = ch->snapshot(0);
	ASSERT_EQ(snap.size(), 1u);
	EXPECT_EQ(snap[0].seq, 1u);
}

TEST(RingBuffer, OverwrittenWhileHeldIsReported)
{
	auto ch = Channel::create(ctf_config(Mode::overwrite, 1, 2, 4096), "ow-held");
	FakeClock clk;
	Reservation r{};
	for (int i = 0; i < 4; ++i) {
		ASSERT_TRUE(ch->reserve(0, 1024 - kCompactHs, true, clk, r));
		ch->commit(r);
	}
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 0u);
	for (int i = 0; i < 5; ++i) { // sub-buffer 1, then into 2 = slot of 0
		ASSERT_TRUE(ch->reserve(0, 1024 - kCompactHs, true, clk, r));
		ch->commit(r);
	}
	EXPECT_FALSE(ch->put_subbuf(0, v)) << "sub-buffer 0 was overwritten while held";
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_TRUE(ch->put_subbuf(0, v));
}

TEST(RingBuffer, FlushPartialSubbuf)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "flush");
	FakeClock clk;
	ch->flush(0, 10); // empty: no-op
	SubbufView v{};
	EXPECT_FALSE(ch->get_subbuf(0, v));
	uint32_t total = 0;
	for (int i = 0; i < 3; ++i) {
		clk.now += 5;
		total += write_raw(*ch, 0, 50, clk).size;
	}
	ch->flush(0, clk.now + 7);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, total);
	EXPECT_EQ(v.timestamp_end, clk.now + 7);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	ch->flush(0, clk.now + 8); // empty again: no-op
	EXPECT_FALSE(ch->get_subbuf(0, v));
	clk.now += 10;
	Reservation a = write_raw(*ch, 0, 50, clk);
	EXPECT_EQ(a.offset, 4096u) << "the flush moved to the next sub-buffer, the empty flush did not";
	Reservation b = reserve_raw(*ch, 0, 60, clk);
	ch->flush(0, clk.now);
	EXPECT_FALSE(ch->get_subbuf(0, v)) << "a record is still in flight";
	ch->commit(b);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_EQ(v.content_size, a.size + b.size);
	ASSERT_TRUE(ch->put_subbuf(0, v));
}

TEST(RingBuffer, NestedReservationLikeSignalHandler)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "nested");
	FakeClock clk;
	Reservation outer = reserve_raw(*ch, 0, 100, clk);
	clk.now += 1;
	Reservation inner = write_raw(*ch, 0, 40, clk); // "signal handler" in between
	EXPECT_EQ(inner.offset, outer.offset + outer.size);
	EXPECT_GE(inner.timestamp, outer.timestamp);
	ch->flush(0, clk.now);
	SubbufView v{};
	EXPECT_FALSE(ch->get_subbuf(0, v));
	ch->commit(outer);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, outer.size + inner.size);
	EXPECT_EQ(v.data[outer.size], static_cast<uint8_t>(inner.offset));
}

// A record committed while an older one is in flight (a signal handler's, a preempting thread's) goes to the
// out-of-order counter, and P waits at the older record. When that one commits, P must take in the records
// committed ahead of it, as far as the first record still in flight, so that the records after them commit in
// order again (a plain store, no locked add) and crash recovery keeps them.
TEST(RingBuffer, PrefixCatchesUpWhenTheRecordInFlightCommits)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "catch-up");
	Internals in(*ch);
	ASSERT_TRUE(in.ok());
	FakeClock clk;
	Reservation a = write_raw(*ch, 0, 100, clk);
	Reservation outer = reserve_raw(*ch, 0, 100, clk);
	Reservation inner = write_raw(*ch, 0, 40, clk); // a signal handler's record, committed ahead of `outer`
	EXPECT_EQ(in.prefix(0, 0), outer.offset);
	EXPECT_EQ(in.ooo(0, 0), inner.size);
	ch->commit(outer);
	EXPECT_EQ(in.prefix(0, 0), inner.offset + inner.size) << "P stayed at the record committed ahead of `outer`";
	EXPECT_EQ(in.ooo(0, 0), 0u);
	Reservation b = write_raw(*ch, 0, 60, clk);
	EXPECT_EQ(in.prefix(0, 0), b.offset + b.size) << "the next record did not commit in order";
	EXPECT_EQ(in.ooo(0, 0), 0u);

	// Two in flight and a third committed ahead of both: P moves as far as the first still in flight, no further.
	Reservation c1 = reserve_raw(*ch, 0, 30, clk);
	Reservation c2 = reserve_raw(*ch, 0, 50, clk);
	Reservation c3 = write_raw(*ch, 0, 70, clk);
	ch->commit(c1);
	EXPECT_EQ(in.prefix(0, 0), c2.offset);
	EXPECT_EQ(in.ooo(0, 0), c3.size);
	ch->commit(c2);
	EXPECT_EQ(in.prefix(0, 0), c3.offset + c3.size);
	EXPECT_EQ(in.ooo(0, 0), 0u);

	ch->flush(0, clk.now);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, c3.offset + c3.size);
	for (const Reservation *r : {&a, &outer, &inner, &b, &c1, &c2, &c3}) // each record's pattern, in place
		EXPECT_EQ(v.data[r->offset + r->size - 1], static_cast<uint8_t>(r->offset + (r->size - 1) * 7));
	ASSERT_TRUE(ch->put_subbuf(0, v));
}

// Commits out of order in every sub-buffer, over several generations of each slot. The record that follows the
// opening one stays in flight until the next sub-buffer has opened, so the rest of its sub-buffer commits out of
// order, and P stays at it when the sub-buffer is closed. Each sub-buffer must complete exactly when that record
// commits, and the writer that reopens a slot must move P to its start and leave nothing of the previous
// generation in the counter, so that in-order commits move P again.
TEST(RingBuffer, OutOfOrderCommitsAcrossGenerationsOfASlot)
{
	constexpr uint32_t kS = 4096;
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, kS), "out-of-order");
	Internals in(*ch);
	ASSERT_TRUE(in.ok());
	FakeClock clk;
	SubbufView v{};
	Reservation held{}; // the previous sub-buffer's record in flight
	for (uint64_t k = 0; k < 6; ++k) {
		SCOPED_TRACE("sub-buffer " + std::to_string(k));
		const uint32_t slot = static_cast<uint32_t>(k % 2);
		clk.now += 1;
		// The record that opens sub-buffer k (it does not fit in what is left of the previous one, which it closes)
		// commits in order.
		Reservation first = write_raw(*ch, 0, 1000 - kCompactHs, clk);
		ASSERT_EQ(first.offset, k * kS);
		EXPECT_EQ(in.prefix(0, slot), first.offset + first.size);
		EXPECT_EQ(in.ooo(0, slot), 0u) << "the reopening left bytes of the previous generation counted";
		if (k > 0) {
			EXPECT_FALSE(ch->get_subbuf(0, v)) << "complete while one of its records is in flight";
			ch->commit(held); // the last of sub-buffer k - 1 to commit
			ASSERT_TRUE(ch->get_subbuf(0, v));
			EXPECT_EQ(v.seq, k - 1);
			EXPECT_EQ(v.content_size, 4u * 1000);
			ASSERT_TRUE(ch->put_subbuf(0, v));
		}
		held = reserve_raw(*ch, 0, 1000 - kCompactHs, clk);
		uint64_t end = held.offset + held.size;
		while (end + 1000 <= (k + 1) * kS) { // the rest commits ahead of `held`
			Reservation r = write_raw(*ch, 0, 1000 - kCompactHs, clk);
			end = r.offset + r.size;
		}
		EXPECT_EQ(in.prefix(0, slot), held.offset);
		EXPECT_EQ(in.ooo(0, slot), end - (held.offset + held.size));
		EXPECT_FALSE(ch->get_subbuf(0, v)) << "complete before it is closed";
	}
}

// The window of a reopening, held open. The writer that opens the next sub-buffer of a slot whose last one was
// committed nearly all out of order has marked P (kReopening) and not yet taken that generation's bytes out of
// the counter, which still holds nearly a whole sub-buffer. Meanwhile committed() must count nothing of the new
// generation: a record committed into it counts out of order, and the consumer must not take the sub-buffer being
// opened for a complete one (it would find no valid records in it, skip it and release it to the writers: its
// records lost, and not counted). The opener's steps are a few instructions, which a preempted opener stretches
// to milliseconds; the test sets the state between them by hand, and then takes the opener's remaining steps.
TEST(RingBuffer, ReopeningWindowCountsNothingOfTheNewGeneration)
{
	constexpr uint32_t kS = 4096;
	constexpr uint32_t kRecord = 1000;
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, kS), "reopening-window");
	Internals in(*ch);
	ASSERT_TRUE(in.ok());
	FakeClock clk;
	SubbufView v{};
	// Sub-buffer 0: its first record stays in flight until sub-buffer 1 has opened, so all the rest of it (three
	// records and the padding) is counted out of order, and P stays at the end of the first.
	Reservation held = reserve_raw(*ch, 0, kRecord - kCompactHs, clk);
	for (int i = 0; i < 3; ++i)
		write_raw(*ch, 0, kRecord - kCompactHs, clk);
	Reservation opens1 = write_raw(*ch, 0, kRecord - kCompactHs, clk);
	ASSERT_EQ(opens1.offset, kS);
	ch->commit(held);
	ASSERT_EQ(in.prefix(0, 0), held.offset + held.size);
	const uint64_t old_generation_ooo = in.ooo(0, 0);
	ASSERT_EQ(old_generation_ooo, kS - kRecord);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	ASSERT_EQ(v.seq, 0u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	// Sub-buffer 1 filled; the record that opens sub-buffer 2 (slot 0 again) completes it, and is held in flight.
	for (int i = 0; i < 3; ++i)
		write_raw(*ch, 0, kRecord - kCompactHs, clk);
	Reservation opens2 = reserve_raw(*ch, 0, kRecord - kCompactHs, clk);
	ASSERT_EQ(opens2.offset, 2 * kS);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	ASSERT_EQ(v.seq, 1u);
	ASSERT_TRUE(ch->put_subbuf(0, v));

	in.set_commit(0, 0, 2 * kS | detail::kReopening, old_generation_ooo); // the opener between its two steps
	Reservation meanwhile = write_raw(*ch, 0, kRecord - kCompactHs, clk);
	EXPECT_EQ(in.prefix(0, 0), 2 * kS | detail::kReopening);
	EXPECT_EQ(in.ooo(0, 0), old_generation_ooo + meanwhile.size) << "a commit into a marked P counts out of order";
	EXPECT_FALSE(ch->data_ready(0)) << "the sub-buffer being opened was counted complete";
	EXPECT_FALSE(ch->get_subbuf(0, v));
	EXPECT_EQ(ch->lost(0), 0u);

	in.set_commit(0, 0, 2 * kS, in.ooo(0, 0) - old_generation_ooo); // the opener's remaining steps
	ch->commit(opens2);
	EXPECT_EQ(in.prefix(0, 0), meanwhile.offset + meanwhile.size);
	EXPECT_EQ(in.ooo(0, 0), 0u);
	EXPECT_FALSE(ch->get_subbuf(0, v));
	ch->flush(0, clk.now);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 2u);
	EXPECT_EQ(v.content_size, opens2.size + meanwhile.size);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	EXPECT_EQ(ch->lost(0), 0u);
}

TEST(RingBuffer, SeqAndLostBeforeAcrossSubbufs)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 2, 4096), "seq");
	FakeClock clk;
	Reservation r{};
	SubbufView v{};
	uint64_t drops = 0;
	for (uint64_t s = 0; s < 6; ++s) {
		clk.now += 1;
		ASSERT_TRUE(ch->reserve(0, 200, true, clk, r));
		ch->commit(r);
		ch->flush(0, clk.now);
		// fill the second slot too, then drop s records
		ASSERT_TRUE(ch->reserve(0, 200, true, clk, r));
		ch->commit(r);
		ch->flush(0, clk.now);
		for (uint64_t d = 0; d < s; ++d)
			EXPECT_FALSE(ch->reserve(0, 200, true, clk, r));
		drops += s;
		EXPECT_EQ(ch->lost(0), drops);
		for (int k = 0; k < 2; ++k) {
			ASSERT_TRUE(ch->get_subbuf(0, v));
			EXPECT_EQ(v.seq, 2 * s + k);
			EXPECT_EQ(v.lost_before, drops - s) << "opened before this round's drops";
			ASSERT_TRUE(ch->put_subbuf(0, v));
		}
	}
}

TEST(RingBuffer, AttachSeesSameDataFromAnotherMapping)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 2, 4, 4096), "attach");
	FakeClock clk;
	std::vector<uint8_t> expected;
	for (int i = 0; i < 5; ++i) {
		clk.now += 1;
		Reservation r = write_raw(*ch, 1, 77, clk);
		expected.insert(expected.end(), r.slot, r.slot + r.size);
	}
	Reservation dropped{};
	EXPECT_FALSE(ch->reserve(1, 5000, true, clk, dropped));
	auto other = Channel::attach(::dup(ch->fd()));
	EXPECT_EQ(other->config().num_cpus, 2u);
	EXPECT_EQ(other->config().num_subbuf, 4u);
	EXPECT_EQ(other->config().compact_ts_bits, 27u);
	EXPECT_EQ(other->mapping_size(), ch->mapping_size());
	EXPECT_EQ(other->lost(1), 1u);
	other->flush(1, clk.now);
	SubbufView v{};
	ASSERT_TRUE(other->get_subbuf(1, v));
	EXPECT_EQ(v.content_size, expected.size());
	EXPECT_EQ(std::memcmp(v.data, expected.data(), expected.size()), 0);
	SubbufView mine{};
	ASSERT_TRUE(ch->get_subbuf(1, mine));
	EXPECT_NE(mine.data, v.data) << "two distinct mappings";
	EXPECT_EQ(std::memcmp(mine.data, v.data, v.content_size), 0);
	ASSERT_TRUE(other->put_subbuf(1, v));
	EXPECT_FALSE(ch->get_subbuf(1, v)) << "consumer position is shared";
	// Writes through the second mapping are read through the first.
	clk.now += 1;
	Reservation r = write_raw(*other, 0, 10, clk);
	EXPECT_EQ(r.offset, 0u);
	ch->flush(0, clk.now);
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, r.size);
	EXPECT_EQ(v.data[0], r.slot[0]);
}

// A traced program attaches its daemon's channel: its writers must not take a page fault per page inside their
// records, so its switches into sub-buffers fill their page-table entries, from its second switch on (a program
// writing less than a sub-buffer pays nothing). /proc/self/pagemap says which pages of this process are in its page
// table (bit 63, "present", readable without privileges).
TEST(RingBuffer, SwitchesFillAnAttachedMappingsPageTable)
{
	const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap < 0)
		GTEST_SKIP() << "/proc/self/pagemap cannot be read here: the page table is not visible";
	constexpr uint32_t kSubbuf = 256 * 1024;
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, kSubbuf), "attach-populated");
	auto other = Channel::attach(::dup(ch->fd()));
	FakeClock clk;
	// Records reserved and committed without writing their payload: one small one in sub-buffer 0, then one
	// that fills most of each of sub-buffers 1 to 3, each opening it.
	const auto reserve = [&](uint32_t payload) {
		Reservation r{};
		EXPECT_TRUE(other->reserve(0, payload, true, clk, r));
		other->commit(r);
		return r;
	};
	const Reservation first = reserve(8);
	ASSERT_EQ(first.offset, 0u); // the start of the data
	const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
	const auto absent = [&](uint32_t subbuf) {
		uint32_t n = 0;
		const uintptr_t start = reinterpret_cast<uintptr_t>(first.slot) + uintptr_t{subbuf} * kSubbuf;
		for (uintptr_t a = start; a < start + kSubbuf; a += page) {
			uint64_t entry = 0;
			EXPECT_EQ(::pread(pagemap, &entry, sizeof entry, static_cast<off_t>(a / page * sizeof entry)),
			          static_cast<ssize_t>(sizeof entry));
			n += (entry >> 63) == 0;
		}
		return n;
	};
	const uint32_t pages = kSubbuf / page;
	EXPECT_EQ(absent(1), pages) << "attach() populated the mapping";
	for (uint32_t k = 1; k < 4; ++k)
		EXPECT_EQ(reserve(kSubbuf - 8).offset, uint64_t{k} * kSubbuf);
	EXPECT_GT(absent(0), pages / 2) << "the process's first switch filled its sub-buffer";
	for (uint32_t k = 1; k < 4; ++k)
		EXPECT_EQ(absent(k), 0u) << "of the " << pages << " pages of sub-buffer " << k
					 << ", opened by a switch";
	::close(pagemap);
}

void expect_attach_error(int fd, const char *needle)
{
	try {
		Channel::attach(fd);
		ADD_FAILURE() << "attach accepted a corrupt channel, expected: " << needle;
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
	}
}

TEST(RingBuffer, AttachRefusesCorruptHeader)
{
	const Config cfg = ctf_config(Mode::discard, 2, 4, 4096);
	auto corrupt = [&](std::size_t at, const void *bytes, std::size_t n, const char *needle) {
		auto ch = Channel::create(cfg, "corrupt");
		ASSERT_EQ(::pwrite(ch->fd(), bytes, n, static_cast<off_t>(at)), static_cast<ssize_t>(n));
		expect_attach_error(::dup(ch->fd()), needle);
	};
	const uint64_t bad_magic = 0x1234;
	corrupt(offsetof(detail::ChannelHeader, magic), &bad_magic, 8, "magic");
	const uint32_t v9 = 9;
	corrupt(offsetof(detail::ChannelHeader, version), &v9, 4, "version 9");
	const uint32_t s5000 = 5000;
	corrupt(offsetof(detail::ChannelHeader, subbuf_size), &s5000, 4, "subbuf_size = 5000");
	const uint32_t m8 = 8;
	corrupt(offsetof(detail::ChannelHeader, num_subbuf), &m8, 4, "layout mismatch");
	const uint32_t st = 128;
	corrupt(offsetof(detail::ChannelHeader, subbuf_state_size), &st, 4, "subbuf_state_size");
	{
		// A channel's first 8 KiB in a file of their own (a channel's file cannot shrink: it is sealed).
		auto ch = Channel::create(cfg, "whole");
		std::vector<uint8_t> head(8192);
		ASSERT_EQ(::pread(ch->fd(), head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
		const int truncated = ::memfd_create("truncated", MFD_CLOEXEC);
		ASSERT_GE(truncated, 0);
		ASSERT_EQ(::write(truncated, head.data(), head.size()), static_cast<ssize_t>(head.size()));
		expect_attach_error(truncated, "smaller than the channel size");
	}
	const int empty = ::memfd_create("empty", MFD_CLOEXEC);
	ASSERT_GE(empty, 0);
	expect_attach_error(empty, "too small");
	const int zeros = ::memfd_create("zeros", MFD_CLOEXEC);
	ASSERT_EQ(::ftruncate(zeros, 1 << 20), 0);
	expect_attach_error(zeros, "magic");
	expect_attach_error(-1, "invalid file descriptor");
}

TEST(RingBuffer, WaitForDataWakesConsumer)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 2, 4, 4096), "wait");
	auto consumer = Channel::attach(::dup(ch->fd()));
	using Clock = std::chrono::steady_clock;
	auto t0 = Clock::now();
	EXPECT_FALSE(consumer->wait_for_data(50));
	EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(45));
	EXPECT_FALSE(consumer->wait_for_data(0));
	std::thread producer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		FakeClock clk;
		write_raw(*ch, 1, 100, clk);
		ch->flush(1, clk.now); // completes the sub-buffer: must wake the waiter
	});
	t0 = Clock::now();
	EXPECT_TRUE(consumer->wait_for_data(20000));
	EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
	producer.join();
	EXPECT_TRUE(consumer->data_ready(1));
	EXPECT_FALSE(consumer->data_ready(0));
	EXPECT_TRUE(consumer->wait_for_data(-1)) << "returns at once when data is there";
}

// wake_consumer() ends a wait with nothing ready (a consumer being stopped), from another mapping too.
TEST(RingBuffer, WakeConsumerEndsTheWait)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 2, 4, 4096), "wake");
	auto consumer = Channel::attach(::dup(ch->fd()));
	using Clock = std::chrono::steady_clock;
	std::thread stopper([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		ch->wake_consumer();
	});
	const auto t0 = Clock::now();
	EXPECT_FALSE(consumer->wait_for_data(-1)) << "woken with no sub-buffer ready";
	EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
	stopper.join();
	EXPECT_FALSE(consumer->data_ready(0));
	EXPECT_FALSE(consumer->data_ready(1));
}

// ---- crash recovery of in-flight records (the multi-process test is ring_buffer_crash_test.cpp)

TEST(RingBufferRecovery, KeepsCommittedRecordsBeforeTheInFlightOne)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "rec1");
	FakeClock clk;
	Reservation a = write_raw(*ch, 0, 100, clk);
	Reservation b = write_raw(*ch, 0, 200, clk);
	Reservation c = reserve_raw(*ch, 0, 300, clk); // the producer dies here
	auto consumer = Channel::attach(::dup(ch->fd()));
	const auto st = consumer->recover_after_producer_death();
	EXPECT_EQ(st.subbufs_repaired, 1u);
	EXPECT_EQ(st.uncommitted_bytes, c.size);
	EXPECT_EQ(st.unreadable_bytes, 0u);
	SubbufView v{};
	ASSERT_TRUE(consumer->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, a.size + b.size);
	EXPECT_EQ(v.timestamp_begin, a.timestamp);
	EXPECT_GE(v.timestamp_end, b.timestamp);
	ASSERT_TRUE(consumer->put_subbuf(0, v));
	EXPECT_FALSE(consumer->get_subbuf(0, v));
}

TEST(RingBufferRecovery, NestedCommitBehindInFlightRecordIsReportedUnreadable)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "rec2");
	FakeClock clk;
	Reservation a = write_raw(*ch, 0, 100, clk);
	Reservation outer = reserve_raw(*ch, 0, 200, clk);
	Reservation inner = write_raw(*ch, 0, 50, clk); // committed, but behind the uncommitted outer record
	const auto st = ch->recover_after_producer_death();
	EXPECT_EQ(st.uncommitted_bytes, outer.size);
	EXPECT_EQ(st.unreadable_bytes, inner.size);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, a.size);
	ASSERT_TRUE(ch->put_subbuf(0, v));
}

// The records committed ahead of one in flight are kept once it commits: P takes them in.
TEST(RingBufferRecovery, RecordsCommittedAheadOfALaterCommitAreKept)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "rec-catch-up");
	FakeClock clk;
	Reservation a = write_raw(*ch, 0, 100, clk);
	Reservation outer = reserve_raw(*ch, 0, 200, clk);
	Reservation inner = write_raw(*ch, 0, 50, clk); // committed ahead of `outer`
	ch->commit(outer);
	Reservation c = reserve_raw(*ch, 0, 300, clk); // the producer dies here
	const auto st = ch->recover_after_producer_death();
	EXPECT_EQ(st.uncommitted_bytes, c.size);
	EXPECT_EQ(st.unreadable_bytes, 0u);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.content_size, a.size + outer.size + inner.size);
	ASSERT_TRUE(ch->put_subbuf(0, v));
}

TEST(RingBufferRecovery, FullyCommittedPartialSubbufIsClosed)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "rec3");
	FakeClock clk;
	for (int i = 0; i < 5; ++i)
		write_raw(*ch, 0, 1000 - kCompactHs, clk); // sub-buffer 0 full, 1 partial
	Reservation last = write_raw(*ch, 0, 10, clk);
	const auto st = ch->recover_after_producer_death();
	EXPECT_EQ(st.subbufs_repaired, 1u);
	EXPECT_EQ(st.uncommitted_bytes, 0u);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 0u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 1u);
	EXPECT_EQ(v.content_size, 1000u + last.size);
	EXPECT_EQ(v.timestamp_end, last.timestamp);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	EXPECT_FALSE(ch->get_subbuf(0, v));
	Reservation next = write_raw(*ch, 0, 10, clk); // a restarted producer continues after the closed sub-buffer
	EXPECT_EQ(next.offset, 2u * 4096);
}

TEST(RingBufferRecovery, SubbufWhoseOpenerDiedIsSkipped)
{
	auto ch = Channel::create(ctf_config(Mode::discard, 1, 4, 4096), "rec4");
	FakeClock clk;
	for (int i = 0; i < 4; ++i)
		write_raw(*ch, 0, 1024 - kCompactHs, clk);  // sub-buffer 0 complete
	Reservation opener = reserve_raw(*ch, 0, 100, clk); // opens 1, never committed
	Reservation after = write_raw(*ch, 0, 100, clk);
	EXPECT_EQ(opener.offset, 4096u);
	const auto st = ch->recover_after_producer_death();
	EXPECT_EQ(st.uncommitted_bytes, opener.size);
	EXPECT_EQ(st.unreadable_bytes, after.size);
	SubbufView v{};
	ASSERT_TRUE(ch->get_subbuf(0, v));
	EXPECT_EQ(v.seq, 0u);
	EXPECT_EQ(v.content_size, 4096u);
	ASSERT_TRUE(ch->put_subbuf(0, v));
	EXPECT_FALSE(ch->get_subbuf(0, v)) << "the empty recovered sub-buffer is skipped";
}

TEST(RingBufferRecovery, OverwriteModeSnapshotAfterRecovery)
{
	auto ch = Channel::create(ctf_config(Mode::overwrite, 1, 4, 4096), "rec5");
	FakeClock clk;
	for (int i = 0; i < 25; ++i) {
		clk.now += 2;
		write_raw(*ch, 0, 1024 - kCompactHs, clk); // sub-buffers 0..5 full, 6 has one record
	}
	Reservation inflight = reserve_raw(*ch, 0, 30, clk);
	(void)inflight;
	ch->recover_after_producer_death();
	auto snap = ch->snapshot(0);
	ASSERT_EQ(snap.size(), 4u);
	EXPECT_EQ(snap.front().seq, 3u);
	EXPECT_EQ(snap.back().seq, 6u);
	EXPECT_EQ(snap.back().bytes.size(), 1024u);
	EXPECT_EQ(snap.back().timestamp_begin, clk.now);
}

} // namespace
} // namespace tracery::ringbuf
