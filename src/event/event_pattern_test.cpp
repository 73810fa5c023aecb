// Tests of event patterns (event_pattern.cpp): wildcards as fnmatch has them,
// and the state dump's provider selected only by its name.
#include "event/event_pattern.hpp"

#include <gtest/gtest.h>

namespace tracery::event {
namespace {

TEST(EventPattern, Wildcards)
{
	EXPECT_TRUE(event_pattern_matches("*", "app:request"));
	EXPECT_TRUE(event_pattern_matches("app:*", "app:request"));
	EXPECT_TRUE(event_pattern_matches("app:req?est", "app:request"));
	EXPECT_FALSE(event_pattern_matches("app:*", "other:request"));
	EXPECT_FALSE(event_pattern_matches("app", "app:request"));
	EXPECT_TRUE(event_pattern_matches("lttng_ust_*:*", "lttng_ust_libc:malloc"));
}

TEST(EventPattern, StatedumpOnlyByItsProvidersName)
{
	EXPECT_TRUE(event_pattern_matches("lttng_ust_statedump:*", "lttng_ust_statedump:bin_info"));
	EXPECT_TRUE(event_pattern_matches("lttng_ust_statedump:bin_info", "lttng_ust_statedump:bin_info"));
	EXPECT_TRUE(event_pattern_matches("lttng_ust_statedump:b*", "lttng_ust_statedump:build_id"));
	EXPECT_FALSE(event_pattern_matches("lttng_ust_statedump:b*", "lttng_ust_statedump:end"));
	EXPECT_FALSE(event_pattern_matches("*", "lttng_ust_statedump:bin_info"));
	EXPECT_FALSE(event_pattern_matches("*:*", "lttng_ust_statedump:start"));
	EXPECT_FALSE(event_pattern_matches("lttng_ust_*:*", "lttng_ust_statedump:end"));
	EXPECT_FALSE(event_pattern_matches("lttng_ust_statedum?:*", "lttng_ust_statedump:end"));
}

} // namespace
} // namespace tracery::event
