// Unit tests of the buffer quota: the accounting per uid, the default, the
// messages refusing a channel, and how a session charges its buffers.
#include "daemon/quota.hpp"
#include "base/test_temp_dir.hpp"
#include "daemon/trace_session.hpp"

#include "consumer/ring_config.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace tracery::daemon {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

using base::format_size;

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

TEST(BufferQuota, ChargesPerUidUpToTheLimit)
{
	BufferQuota q(10 * kMiB);
	std::string why;
	auto a = q.try_charge(1000, 6 * kMiB, &why);
	ASSERT_TRUE(a);
	EXPECT_EQ(q.used(1000), 6 * kMiB);
	EXPECT_EQ(q.used(0), 0u);
	// Another user has a quota of its own.
	auto root = q.try_charge(0, 10 * kMiB, &why);
	ASSERT_TRUE(root);
	EXPECT_EQ(q.used(0), 10 * kMiB);
	// 6 + 5 > 10: refused, nothing charged, the message says how much is in use of what limit.
	EXPECT_FALSE(q.try_charge(1000, 5 * kMiB, &why));
	EXPECT_EQ(q.used(1000), 6 * kMiB);
	EXPECT_TRUE(contains(why, "uid 1000")) << why;
	EXPECT_TRUE(contains(why, "10 MiB, 6 MiB of it in use")) << why;
	EXPECT_TRUE(contains(why, "a buffer of 5 MiB")) << why;
	// Exactly up to the limit fits.
	auto b = q.try_charge(1000, 4 * kMiB, &why);
	ASSERT_TRUE(b);
	EXPECT_EQ(q.used(1000), 10 * kMiB);
	EXPECT_FALSE(q.try_charge(1000, 1, &why));
	// More than the limit at once never fits (no overflow in the check).
	EXPECT_FALSE(q.try_charge(2000, UINT64_MAX, &why));
	EXPECT_EQ(q.used(2000), 0u);
}

TEST(BufferQuota, ChargeIsGivenBackOnceWhenDropped)
{
	BufferQuota q(10 * kMiB);
	{
		auto a = q.try_charge(1000, 4 * kMiB, nullptr);
		ASSERT_TRUE(a);
		BufferQuota::Charge moved = std::move(*a); // the moved-from charge gives nothing back
		EXPECT_EQ(moved.bytes(), 4 * kMiB);
		EXPECT_EQ(moved.uid(), 1000u);
		a.reset();
		EXPECT_EQ(q.used(1000), 4 * kMiB);
		BufferQuota::Charge other;
		other = std::move(moved);
		EXPECT_EQ(q.used(1000), 4 * kMiB);
	}
	EXPECT_EQ(q.used(1000), 0u);
	EXPECT_TRUE(q.try_charge(1000, 10 * kMiB, nullptr));
}

TEST(BufferQuota, DefaultIsAQuarterOfMemoryInWholeMiB)
{
	EXPECT_EQ(default_buffer_quota(16 * kGiB), 4 * kGiB);
	EXPECT_EQ(default_buffer_quota(1'000'000'007), 238 * kMiB); // 250000001 rounded down to a MiB
	EXPECT_EQ(default_buffer_quota(0), 0u);
	const uint64_t mem = machine_memory();
	EXPECT_GT(mem, 64 * kMiB);
	EXPECT_LE(default_buffer_quota(mem), mem / 4);
	EXPECT_GT(default_buffer_quota(mem), mem / 4 - kMiB);
}

ringbuf::Config config(uint32_t cpus, uint32_t num_subbuf, uint32_t subbuf_size)
{
	ringbuf::Config c = consumer::ring_config(num_subbuf, subbuf_size, ringbuf::Mode::discard);
	c.num_cpus = cpus;
	return c;
}

TEST(ChannelRefusal, SizesTheRingBufferRefuse)
{
	const std::string sub = channel_refusal("c2", config(2, 4, 1000), 0, 64 * kGiB);
	EXPECT_EQ(sub, "cannot enable channel 'c2': subbuf_size = 1000 must be a power of two in 4096..2^30; "
	               "change --subbuf-size");
	const std::string num = channel_refusal("c2", config(2, 3, 4096), 0, 64 * kGiB);
	EXPECT_EQ(num, "cannot enable channel 'c2': num_subbuf = 3 must be a power of two in 2..65536; "
	               "change --num-subbuf");
	// 1024 x 1 GiB on 2 CPUs is 2 TiB, beyond what a ring buffer may hold, whatever the quota (it once
	// aborted the daemon).
	const std::string big = channel_refusal("big", config(2, 1024, 1u << 30), 0, UINT64_MAX);
	EXPECT_TRUE(contains(big, "cannot enable channel 'big': num_cpus x num_subbuf x subbuf_size = 2199023255552 "
	                          "bytes exceeds 2^40 (2 CPUs x 1024 x 1 GiB"))
		<< big;
	EXPECT_TRUE(contains(big, "use a smaller --subbuf-size or --num-subbuf")) << big;
	// Half of that fits the ring buffer: the limit is the one of all possible CPUs together.
	EXPECT_EQ(channel_refusal("big", config(1, 1024, 1u << 30), 0, UINT64_MAX), "");
}

TEST(ChannelRefusal, MoreThanTheQuotaForOneProgram)
{
	const ringbuf::Config c = config(2, 4, 8 * kMiB); // 64 MiB of data
	const uint64_t one = ringbuf::Channel::mapping_size_for(c);
	ASSERT_GT(one, 64 * kMiB);
	EXPECT_EQ(channel_refusal("c", c, 0, one), "");
	const std::string over = channel_refusal("c", c, 0, 64 * kMiB);
	EXPECT_TRUE(contains(over, "cannot enable channel 'c': its buffers take " + format_size(one) +
	                                   " (2 CPUs x 4 x 8 MiB and headers)"))
		<< over;
	EXPECT_TRUE(contains(over, "more than the buffer quota of 64 MiB per user")) << over;
	EXPECT_TRUE(contains(over, "--buffer-quota")) << over;
	// With the session's other channels: a program needs a buffer of each.
	EXPECT_EQ(channel_refusal("c", c, 1 * kMiB, one + kMiB), "");
	const std::string all = channel_refusal("c", c, 1 * kMiB, one + kMiB - 1);
	EXPECT_TRUE(contains(all, "a program traced by the session needs " + format_size(one + kMiB) + " of buffers"))
		<< all;
}

// A session charges each buffer it makes to the uid of the programs writing
// into it, and gives it back when the buffer goes.
class SessionQuota : public ::testing::Test {
protected:
	std::unique_ptr<TraceSession> session(BufferQuota &q)
	{
		return std::make_unique<TraceSession>(1, "s", getuid(), getgid(), dir_ + "/out", false, q);
	}
	const base::TestTempDir tmp_{"tracery-quota-test"};
	const std::string &dir_ = tmp_.path();
};

TEST_F(SessionQuota, ChannelsAreCheckedAgainstTheQuota)
{
	ChannelSpec small;
	small.name = "small";
	small.subbuf_size = 4096;
	const uint64_t one = ringbuf::Channel::mapping_size_for(consumer::ring_config(4, 4096, ringbuf::Mode::discard));
	BufferQuota q(2 * one);
	auto s = session(q);
	s->add_channel(small);
	small.name = "second";
	s->add_channel(small); // two buffers per program: exactly the quota
	small.name = "third";
	try {
		s->add_channel(small);
		FAIL() << "a third channel exceeds the quota";
	} catch (const std::runtime_error &e) {
		EXPECT_TRUE(contains(e.what(), "cannot enable channel 'third'")) << e.what();
	}
	EXPECT_EQ(s->channels().size(), 2u);
	EXPECT_EQ(s->find_channel("third"), nullptr);
	ChannelSpec bad;
	bad.name = "bad";
	bad.subbuf_size = 1000;
	EXPECT_THROW(s->add_channel(bad), std::runtime_error);
	EXPECT_EQ(s->channels().size(), 2u);
}

TEST_F(SessionQuota, BuffersAreChargedToTheirUserAndGivenBack)
{
	ChannelSpec spec;
	spec.name = "pp";
	spec.subbuf_size = 4096;
	spec.per_pid = true;
	const uint64_t one = ringbuf::Channel::mapping_size_for(consumer::ring_config(4, 4096, ringbuf::Mode::discard));
	BufferQuota q(one + one / 2); // room for one buffer per user
	auto s = session(q);
	Channel &ch = s->add_channel(spec);
	EXPECT_EQ(ch.buffer_bytes(), one);
	std::string why;
	std::vector<TraceSession::NewBuffer> made;
	Buffer *a = s->buffer_for(ch, 1000, 11, &why, &made);
	ASSERT_NE(a, nullptr);
	EXPECT_EQ(q.used(1000), one);
	EXPECT_EQ(s->buffer_for(ch, 1000, 11, &why, &made), a); // the same program: the same buffer
	EXPECT_EQ(made.size(), 1u);
	// A second program of that user does not fit; one of another user does.
	EXPECT_EQ(s->buffer_for(ch, 1000, 12, &why, &made), nullptr);
	EXPECT_TRUE(contains(why, "uid 1000")) << why;
	EXPECT_EQ(ch.buffers().count("pid12"), 0u); // no empty slot
	EXPECT_EQ(q.used(1000), one);
	ASSERT_NE(s->buffer_for(ch, 2000, 21, &why, &made), nullptr);
	EXPECT_EQ(q.used(2000), one);
	// Undone (a start that failed): the buffers and their charges are gone.
	s->drop_new_buffers(made);
	EXPECT_TRUE(ch.buffers().empty());
	EXPECT_EQ(q.used(1000), 0u);
	EXPECT_EQ(q.used(2000), 0u);
	// A program that ends gives its per-PID buffer back; the end of the session gives back all.
	ASSERT_NE(s->buffer_for(ch, 1000, 12, &why), nullptr);
	auto retired = s->program_ended(12, 1000);
	ASSERT_EQ(retired.size(), 1u);
	EXPECT_EQ(retired[0].buffer->owner, "pid12");
	EXPECT_EQ(q.used(1000), one) << "charged until finished and accounted";
	s->finish(retired[0]);
	s->account(retired[0]);
	EXPECT_EQ(q.used(1000), 0u);
	ASSERT_NE(s->buffer_for(ch, 1000, 13, &why), nullptr);
	EXPECT_EQ(q.used(1000), one);
	s.reset();
	EXPECT_EQ(q.used(1000), 0u);
}

// A per-PID buffer belongs to a user too: when another user's program gets a
// pid whose earlier program's connection lingers, it gets a buffer of its own,
// and the end of that earlier program leaves the new one alone.
TEST_F(SessionQuota, AReusedPidOfAnotherUserGetsItsOwnBuffer)
{
	ChannelSpec spec;
	spec.name = "pp";
	spec.subbuf_size = 4096;
	spec.per_pid = true;
	BufferQuota q(uint64_t{1} << 30);
	auto s = session(q);
	Channel &ch = s->add_channel(spec);
	std::string why;
	Buffer *theirs = s->buffer_for(ch, 2000, 42, &why);
	ASSERT_NE(theirs, nullptr);
	Buffer *mine = s->buffer_for(ch, 1000, 42, &why);
	ASSERT_NE(mine, nullptr);
	EXPECT_NE(mine, theirs);
	EXPECT_EQ(mine->charge.uid(), 1000u);
	EXPECT_EQ(ch.buffers().size(), 2u);
	EXPECT_TRUE(s->program_ended(42, 2000).empty()) << "uid 2000's program ending retires nothing of uid 1000";
	EXPECT_EQ(s->buffer_for(ch, 1000, 42, &why), mine);
	const auto retired = s->program_ended(42, 1000);
	ASSERT_EQ(retired.size(), 1u);
	EXPECT_EQ(retired[0].buffer.get(), mine);
}

} // namespace
} // namespace tracery::daemon
