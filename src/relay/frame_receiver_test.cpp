// Unit tests of FrameReceiver: frames come out the same whatever the reads'
// sizes (one byte at a time, a frame across many reads, several frames in
// one), held() is the bytes of the frame not yet whole and in_frame() and
// missing() say where it stands, a body spanning reads is gathered whole;
// before HELLO a frame longer than a HELLO is refused at its header and
// nothing past the first frame is taken; a bad header or body is refused.
#include "relay/frame_receiver.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace tracery::relay {
namespace {

namespace cr = control::relay;

std::vector<uint8_t> session_bytes()
{
	std::vector<uint8_t> out;
	cr::append_frame(out, cr::Hello{.creation_time_ns = 7, .hostname = "h", .session = "s"});
	cr::append_frame(out, cr::Trace{.id = 1, .path = "t"});
	cr::Packet p{.stream_id = 3,
	             .index = {.packet_size_bits = 8 * 300000, .content_size_bits = 8 * 300000},
	             .bytes = {}};
	p.bytes.resize(300000);
	std::iota(p.bytes.begin(), p.bytes.end(), uint8_t{0});
	cr::append_frame(out, p);
	cr::append_frame(out, cr::Sync{.token = 9});
	cr::append_frame(out, cr::Bye{});
	return out;
}

// Every frame of `bytes` given in reads of `step` bytes, HELLO accepted once it comes.
std::vector<FrameReceiver::Received> receive(const std::vector<uint8_t> &bytes, size_t step, size_t *max_held)
{
	FrameReceiver r;
	std::vector<FrameReceiver::Received> out;
	const auto now = FrameReceiver::Clock::now();
	*max_held = 0;
	for (size_t at = 0; at < bytes.size();) {
		std::span<const uint8_t> read(bytes.data() + at, std::min(step, bytes.size() - at));
		at += read.size();
		while (!read.empty()) {
			std::string why;
			read = read.subspan(r.take(read, out, now, &why));
			EXPECT_EQ(why, "");
			if (!out.empty())
				r.allow_full_frames();
			*max_held = std::max(*max_held, r.held());
		}
	}
	EXPECT_EQ(r.held(), 0u);
	EXPECT_FALSE(r.in_frame());
	return out;
}

TEST(FrameReceiver, SameFramesWhateverTheReads)
{
	const auto bytes = session_bytes();
	size_t held_whole = 0, held = 0;
	const auto whole = receive(bytes, bytes.size(), &held_whole);
	ASSERT_EQ(whole.size(), 5u);
	EXPECT_EQ(held_whole, 0u); // every body within the one read: nothing kept
	const auto &packet = std::get<cr::Packet>(whole[2].frame);
	EXPECT_EQ(packet.bytes.size(), 300000u);
	EXPECT_EQ(packet.bytes[299999], static_cast<uint8_t>(299999 % 256));
	EXPECT_EQ(whole[2].size, cr::kHeaderSize + cr::kPacketFixed + 300000);
	EXPECT_EQ(std::get<cr::Sync>(whole[3].frame).token, 9u);
	for (size_t step : {1u, 7u, 4096u, 65536u}) {
		const auto pieces = receive(bytes, step, &held);
		ASSERT_EQ(pieces.size(), whole.size()) << step;
		for (size_t i = 0; i < whole.size(); i++) {
			EXPECT_EQ(pieces[i].frame, whole[i].frame) << step << " " << i;
			EXPECT_EQ(pieces[i].size, whole[i].size) << step << " " << i;
		}
		// The packet, one read short of whole, is held.
		EXPECT_GT(held, 300000 - step) << step;
		EXPECT_LE(held, cr::kHeaderSize + cr::kPacketFixed + 300000 - 1) << step;
	}
}

TEST(FrameReceiver, HeldIsWhatCameOfTheFrame)
{
	std::vector<uint8_t> bytes;
	cr::Packet p{.stream_id = 1, .index = {.packet_size_bits = 8 * 1000000, .content_size_bits = 8}, .bytes = {}};
	p.bytes.assign(1000000, 0xAB);
	cr::append_frame(bytes, p);
	FrameReceiver r;
	r.allow_full_frames();
	std::vector<FrameReceiver::Received> out;
	std::string why;
	const auto t0 = FrameReceiver::Clock::now();
	EXPECT_EQ(r.take({bytes.data(), 5}, out, t0, &why), 5u);
	EXPECT_FALSE(r.in_frame()); // half a header
	EXPECT_EQ(r.held(), 5u);
	const auto t1 = t0 + std::chrono::seconds(1);
	EXPECT_EQ(r.take({bytes.data() + 5, 100000}, out, t1, &why), 100000u);
	EXPECT_TRUE(r.in_frame());
	EXPECT_EQ(r.frame_started(), t1);
	EXPECT_EQ(r.held(), 100005u);
	EXPECT_EQ(r.body_size(), cr::kPacketFixed + 1000000);
	EXPECT_EQ(r.missing(), bytes.size() - 100005);
	EXPECT_TRUE(out.empty());
	r.drop();
	EXPECT_EQ(r.held(), 0u);
	EXPECT_FALSE(r.in_frame());
}

TEST(FrameReceiver, BeforeHelloOnlyAHelloFits)
{
	std::vector<uint8_t> bytes;
	cr::Packet p{.stream_id = 1, .index = {.packet_size_bits = 8 * 1000, .content_size_bits = 8}, .bytes = {}};
	p.bytes.assign(1000, 1);
	cr::append_frame(bytes, p);
	FrameReceiver r;
	std::vector<FrameReceiver::Received> out;
	std::string why;
	r.take({bytes.data(), cr::kHeaderSize}, out, FrameReceiver::Clock::now(), &why);
	EXPECT_EQ(why, "PACKET of 1068 bytes before HELLO (a HELLO has at most 534)");
	EXPECT_TRUE(out.empty());

	// A HELLO and what follows it in one read: the HELLO alone is taken.
	std::vector<uint8_t> two;
	cr::append_frame(two, cr::Hello{.hostname = "h", .session = "s"});
	const size_t hello_size = two.size();
	cr::append_frame(two, p);
	FrameReceiver h;
	EXPECT_EQ(h.take(two, out, FrameReceiver::Clock::now(), &why), hello_size);
	EXPECT_EQ(why, "");
	ASSERT_EQ(out.size(), 1u);
	EXPECT_TRUE(std::holds_alternative<cr::Hello>(out[0].frame));
	h.allow_full_frames();
	EXPECT_EQ(h.take({two.data() + hello_size, two.size() - hello_size}, out, FrameReceiver::Clock::now(), &why),
	          two.size() - hello_size);
	EXPECT_EQ(why, "");
	ASSERT_EQ(out.size(), 2u);
	EXPECT_EQ(std::get<cr::Packet>(out[1].frame), p);
}

TEST(FrameReceiver, BadHeaderOrBodyIsRefused)
{
	auto bytes = cr::encode(cr::Sync{.token = 1});
	bytes[0] ^= 1;
	FrameReceiver r;
	r.allow_full_frames();
	std::vector<FrameReceiver::Received> out;
	std::string why;
	r.take(bytes, out, FrameReceiver::Clock::now(), &why);
	EXPECT_EQ(why, "bad magic (not a relay protocol frame)");

	// A SYNC whose body is one byte short of its u64, across two reads.
	std::vector<uint8_t> sync = cr::encode(cr::Sync{.token = 1});
	sync[8] = 7;
	sync.pop_back();
	FrameReceiver s;
	s.allow_full_frames();
	EXPECT_EQ(s.take({sync.data(), 14}, out, FrameReceiver::Clock::now(), &why), 14u);
	EXPECT_EQ(why, "");
	s.take({sync.data() + 14, sync.size() - 14}, out, FrameReceiver::Clock::now(), &why);
	EXPECT_NE(why.find("SYNC"), std::string::npos) << why;
	EXPECT_TRUE(out.empty());
}

} // namespace
} // namespace tracery::relay
