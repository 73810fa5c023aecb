// Unit tests of a daemon channel: which events its enabled and disabled
// patterns select, and its per-channel event ids.
#include "daemon/channel.hpp"

#include <gtest/gtest.h>

namespace tracery::daemon {
namespace {

TEST(DaemonChannel, EnableAndDisablePatterns)
{
	Channel ch(0, ChannelSpec{});
	EXPECT_FALSE(ch.enabled("app:a"));
	ch.enable({"app:*"});
	EXPECT_TRUE(ch.enabled("app:a"));
	EXPECT_FALSE(ch.enabled("lib:a"));
	ch.disable({"app:noisy"}); // not an enabled pattern: excludes what it matches
	EXPECT_FALSE(ch.enabled("app:noisy"));
	EXPECT_TRUE(ch.enabled("app:a"));
	ch.enable({"app:noisy"}); // enabling takes it off the disabled list
	EXPECT_TRUE(ch.enabled("app:noisy"));
	ch.disable({"app:*"}); // an enabled pattern: removed
	EXPECT_FALSE(ch.enabled("app:a"));
	EXPECT_TRUE(ch.enabled("app:noisy"));
}

TEST(DaemonChannel, FiltersOfAnEvent)
{
	Channel ch(0, ChannelSpec{});
	ch.enable({"app:*"}, "size > 4096");
	ch.enable({"app:write"}, "fd == 3");
	ch.enable({"app:*"}, "size > 4096"); // the same rule again: kept once
	EXPECT_EQ(ch.rules().size(), 2u);
	EXPECT_EQ(ch.filters_of("app:read"), std::vector<std::string>{"size > 4096"});
	EXPECT_EQ(ch.filters_of("app:write"), (std::vector<std::string>{"size > 4096", "fd == 3"}));
	ch.enable({"app:write"}); // a rule without filter records every app:write
	EXPECT_TRUE(ch.filters_of("app:write").empty());
	EXPECT_EQ(ch.filters_of("app:read"), std::vector<std::string>{"size > 4096"});
	ch.disable({"app:write"}); // removes both rules of app:write
	EXPECT_EQ(ch.rules().size(), 1u);
	EXPECT_EQ(ch.filters_of("app:write"), std::vector<std::string>{"size > 4096"});
}

TEST(DaemonChannel, IdsAreGivenOncePerEventVersion)
{
	Channel ch(3, ChannelSpec{});
	EXPECT_EQ(ch.id_for("app:a#1"), 0u);
	EXPECT_EQ(ch.id_for("app:b#1"), 1u);
	EXPECT_EQ(ch.id_for("app:a#1"), 0u);
	EXPECT_EQ(ch.ids().size(), 2u);
	EXPECT_EQ(ch.id_for("app:a#2"), 2u);
}

TEST(DaemonChannel, RingHasTheChannelOptions)
{
	ChannelSpec spec;
	spec.subbuf_size = 8192;
	spec.num_subbuf = 2;
	spec.mode = ringbuf::Mode::overwrite;
	Channel ch(0, spec);
	auto ring = ch.make_ring();
	EXPECT_EQ(ring->config().subbuf_size, 8192u);
	EXPECT_EQ(ring->config().num_subbuf, 2u);
	EXPECT_EQ(ring->config().mode, ringbuf::Mode::overwrite);
}

} // namespace
} // namespace tracery::daemon
