// kernel/page_decoder_test.cpp — the page decoder on pages built byte by
// byte (page_builder_testing.hpp): every kind of event header, lost-event
// flags, partial reads, and damaged pages, which end decoding with an error
// naming the offset and keep the events before it.
#include "kernel/page_decoder.hpp"
#include "kernel/page_builder_testing.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace tracery::kernel;
using tracery::kernel::test_support::PageBuilder;

namespace {

struct Seen {
	uint64_t ts;
	uint16_t type;
	int32_t pid;
	uint32_t size;
};

PageResult decode(const std::vector<uint8_t> &page, std::vector<Seen> &seen, size_t bytes = SIZE_MAX)
{
	const PageDecoder decoder{PageLayout{}};
	return decoder.decode(std::span(page.data(), std::min(bytes, page.size())), [&](const RawEvent &e) {
		seen.push_back({e.timestamp, tracery::base::load_le<uint16_t>(e.payload),
		                tracery::base::load_le<int32_t>(e.payload + 4), e.size});
	});
}

} // namespace

TEST(PageDecoder, EmptyPage)
{
	std::vector<Seen> seen;
	const PageResult r = decode(PageBuilder(1000).finish(), seen);
	EXPECT_EQ(r.error, nullptr);
	EXPECT_EQ(r.page_timestamp, 1000u);
	EXPECT_EQ(r.events, 0u);
	EXPECT_FALSE(r.events_lost);
	EXPECT_TRUE(seen.empty());
}

TEST(PageDecoder, DeltasExtendsAbsoluteAndLongEvents)
{
	PageBuilder b(1'000'000);
	b.event(5, PageBuilder::payload(309, 42))
		.event(7, PageBuilder::payload(310, 42, std::vector<uint8_t>(200, 1))) // type_len 0
		.event(0, PageBuilder::payload(311, 43), true)                         // type_len 0, short
		.time_extend((uint64_t{3} << 27) + 11)
		.event(1, PageBuilder::payload(312, 44))
		.absolute(0x0123'4567'89ab'cdefull & ~kTimeStampMsb)
		.event(2, PageBuilder::payload(313, 45));
	std::vector<Seen> seen;
	const PageResult r = decode(b.finish(), seen);
	EXPECT_EQ(r.error, nullptr);
	ASSERT_EQ(seen.size(), 5u);
	EXPECT_EQ(r.events, 5u);
	EXPECT_EQ(seen[0].ts, 1'000'005u);
	EXPECT_EQ(seen[0].type, 309);
	EXPECT_EQ(seen[0].size, 8u);
	EXPECT_EQ(seen[1].ts, 1'000'012u);
	EXPECT_EQ(seen[1].size, 208u);
	EXPECT_EQ(seen[2].ts, 1'000'012u);
	EXPECT_EQ(seen[2].type, 311);
	EXPECT_EQ(seen[2].size, 8u);
	EXPECT_EQ(seen[3].ts, 1'000'012u + (uint64_t{3} << 27) + 11 + 1);
	EXPECT_EQ(seen[3].pid, 44);
	EXPECT_EQ(seen[4].ts, (0x0123'4567'89ab'cdefull & ~kTimeStampMsb) + 2);
	EXPECT_EQ(r.last_timestamp, seen[4].ts);
	EXPECT_EQ(r.data_size, b.data_size());
}

TEST(PageDecoder, AbsoluteTimestampsTakeTheTopBitsFromBefore)
{
	const uint64_t base = kTimeStampMsb | 100;
	PageBuilder b(base);
	b.absolute(500).event(1, PageBuilder::payload(1, 1));
	std::vector<Seen> seen;
	decode(b.finish(), seen);
	ASSERT_EQ(seen.size(), 1u);
	EXPECT_EQ(seen[0].ts, (base & kTimeStampMsb) | 501);
}

TEST(PageDecoder, PaddingIsSkippedWithItsDeltaAndNullPaddingEndsThePage)
{
	PageBuilder b(0);
	b.event(1, PageBuilder::payload(1, 1)).padding(10, 24).event(2, PageBuilder::payload(2, 2));
	b.word(kTypePadding); // null padding: the rest of the page
	b.event(3, PageBuilder::payload(3, 3));
	std::vector<Seen> seen;
	const PageResult r = decode(b.finish(), seen);
	EXPECT_EQ(r.error, nullptr);
	ASSERT_EQ(seen.size(), 2u);
	EXPECT_EQ(seen[0].ts, 1u);
	EXPECT_EQ(seen[1].ts, 13u);
	EXPECT_EQ(seen[1].type, 2);
}

TEST(PageDecoder, LostEvents)
{
	std::vector<Seen> seen;
	PageResult r = decode(PageBuilder(0).event(1, PageBuilder::payload(1, 1)).finish(1234), seen);
	EXPECT_TRUE(r.events_lost);
	EXPECT_TRUE(r.lost_count_known);
	EXPECT_EQ(r.lost, 1234u);
	EXPECT_EQ(r.events, 1u);
	r = decode(PageBuilder(0).event(1, PageBuilder::payload(1, 1)).finish(-1), seen);
	EXPECT_TRUE(r.events_lost);
	EXPECT_FALSE(r.lost_count_known);
	EXPECT_EQ(r.lost, 0u);
	EXPECT_EQ(r.error, nullptr);
}

TEST(PageDecoder, PartialReadsDecodeWhatTheyHold)
{
	PageBuilder b(0);
	b.event(1, PageBuilder::payload(1, 1)).event(1, PageBuilder::payload(2, 1));
	const std::vector<uint8_t> page = b.finish();
	std::vector<Seen> seen;
	// A read of exactly the used bytes is whole.
	PageResult r = decode(page, seen, 16 + b.data_size());
	EXPECT_EQ(r.error, nullptr);
	EXPECT_EQ(r.events, 2u);
	// A read cut inside the second event: the first one, and an error.
	seen.clear();
	r = decode(page, seen, 16 + b.data_size() - 4);
	ASSERT_NE(r.error, nullptr);
	EXPECT_STREQ(r.error, "commit size beyond the page");
	EXPECT_EQ(r.events, 1u);
	seen.clear();
	r = decode(page, seen, 10);
	EXPECT_STREQ(r.error, "shorter than the page header");
	EXPECT_TRUE(seen.empty());
}

TEST(PageDecoder, DamagedPagesStopAtTheDamage)
{
	std::vector<Seen> seen;
	// An event longer than the data.
	PageBuilder b(0);
	b.event(1, PageBuilder::payload(1, 1)).word(1 << 5 | 0).word(5000);
	PageResult r = decode(b.finish(), seen);
	EXPECT_STREQ(r.error, "event length beyond the data");
	EXPECT_EQ(r.error_offset, 16u + 12u);
	EXPECT_EQ(r.events, 1u);
	// A length word that does not count itself.
	PageBuilder c(0);
	c.word(0).word(2);
	r = decode(c.finish(), seen);
	EXPECT_STREQ(r.error, "event length beyond the data");
	// A type_len event running past the data.
	PageBuilder d(0);
	d.word(1 << 5 | 28);
	r = decode(d.finish(), seen);
	EXPECT_STREQ(r.error, "event beyond the data");
	// A time extend with no room for its second word.
	PageBuilder e(0);
	e.word(kTypeTimeExtend);
	r = decode(e.finish(), seen);
	EXPECT_STREQ(r.error, "event header beyond the data");
	// Padding longer than the data.
	PageBuilder f(0);
	f.word(1 << 5 | kTypePadding).word(9000);
	r = decode(f.finish(), seen);
	EXPECT_STREQ(r.error, "padding length beyond the data");
	// A commit size beyond the page, and a lost count with no room.
	std::vector<uint8_t> page = PageBuilder(0).finish();
	tracery::base::store_le<uint64_t>(page.data() + 8, kCommitMissedEvents | kCommitMissedStored | 4080);
	r = decode(page, seen);
	EXPECT_TRUE(r.events_lost);
	EXPECT_FALSE(r.lost_count_known);
	EXPECT_STREQ(r.error, "lost-event count beyond the page");
	tracery::base::store_le<uint64_t>(page.data() + 8, kCommitSizeMask);
	r = decode(page, seen);
	EXPECT_STREQ(r.error, "commit size beyond the page");
	EXPECT_EQ(r.data_size, 4080u);
}

TEST(PageDecoder, LayoutFromTheKernelsHeaders)
{
	const PageHeaderFormat page{0, 8, 8, 16, 4080};
	EventHeaderFormat event{5, 27, 29, 30, 31, 28};
	const PageLayout l = make_page_layout(page, event);
	EXPECT_EQ(l.page_size, 4096u);
	EXPECT_EQ(l.data_offset, 16u);
	event.time_stamp = 30;
	event.time_extend = 31;
	EXPECT_THROW(make_page_layout(page, event), FormatError);
}
