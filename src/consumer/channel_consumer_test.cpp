// Unit test of the consumer thread's poll interval (channel_consumer.hpp).
#include "consumer/channel_consumer.hpp"

#include <gtest/gtest.h>

namespace tracery::consumer {
namespace {

TEST(ConsumerPoll, HalfTheTimeBetweenSubBuffersWithinBounds)
{
	// 2 sub-buffers in 1.6 ms: one every 0.8 ms, so poll every 0.4 ms (a faster flow: at once).
	EXPECT_EQ(next_poll_ns(1'000'000, 2, 1'600'000), 400'000u);
	// Faster than the floor allows: the floor.
	EXPECT_EQ(next_poll_ns(400'000, 4, 100'000), kMinPollNs);
	// Slower: a quarter of the way from 200 us towards 1.2 ms (600 us) = 300 us.
	EXPECT_EQ(next_poll_ns(200'000, 1, 1'200'000), 300'000u);
	// Much slower: never beyond the ceiling.
	EXPECT_EQ(next_poll_ns(1'000'000, 1, 1'000'000'000), kMaxPollNs);
	// Converges on half the interval of a steady flow.
	uint64_t poll = kMinPollNs;
	for (int i = 0; i < 100; i++)
		poll = next_poll_ns(poll, 1, 1'000'000);
	EXPECT_NEAR(double(poll), 500'000.0, 1'000.0);
}

} // namespace
} // namespace tracery::consumer
