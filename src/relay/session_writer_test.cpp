// Unit tests of SessionWriter (relay/session_writer.hpp): the session's
// checks that depend on what came before (order, ids, nesting, names,
// counts, metadata size) and the bytes of the index it writes (the relay's
// offsets, big-endian fields); a frame the disk refuses (files over
// RLIMIT_FSIZE: EFBIG) leaves nothing of itself and is written whole when
// applied again.
#include "relay/session_writer.hpp"

#include "base/cat.hpp"
#include "base/test_temp_dir.hpp"
#include "relay/test_soft_limit.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tracery::relay {
namespace {

namespace cr = control::relay;

std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

uint64_t be64(const std::string &s, size_t at)
{
	uint64_t v = 0;
	for (size_t i = 0; i < 8; i++)
		v = v << 8 | static_cast<uint8_t>(s[at + i]);
	return v;
}

struct Session {
	base::TestTempDir tmp{"tracery-relay-unit"};
	SessionWriter w{tmp.path()};
	cr::HelloReply reply;
	Session()
	{
		// 2025-11-24 16:00:00 UTC
		EXPECT_EQ(w.apply(cr::Hello{.creation_time_ns = 1764000000ull * 1000000000ull,
		                            .hostname = "h",
		                            .session = "s"},
		                  &reply),
		          "");
	}
	std::string dir() const { return tmp.path() + "/" + reply.text; }
};

cr::Packet packet(uint32_t stream, size_t bytes, uint64_t seq)
{
	cr::Packet p;
	p.stream_id = stream;
	p.index = {.packet_size_bits = bytes * 8,
	           .content_size_bits = bytes * 8 - 8,
	           .timestamp_begin = 100 * seq,
	           .timestamp_end = 100 * seq + 50,
	           .events_discarded = seq,
	           .stream_class_id = 3,
	           .stream_instance_id = 4,
	           .packet_seq_num = seq};
	p.bytes.assign(bytes, static_cast<uint8_t>(seq));
	return p;
}

TEST(SessionWriter, DirectoryAndReply)
{
	Session s;
	EXPECT_TRUE(s.reply.accepted);
	EXPECT_EQ(s.reply.text, "h/s-20251124-160000");
	SessionWriter again(s.tmp.path());
	cr::HelloReply r;
	EXPECT_EQ(again.apply(
			  cr::Hello{.creation_time_ns = 1764000000ull * 1000000000ull, .hostname = "h", .session = "s"},
			  &r),
	          "");
	EXPECT_EQ(r.text, "h/s-20251124-160000-1");
	SessionWriter old(s.tmp.path());
	EXPECT_EQ(old.apply(cr::Hello{.major = 2, .hostname = "h", .session = "s"}, &r), "HELLO of protocol major 2");
	EXPECT_FALSE(r.accepted);
	EXPECT_EQ(r.text, "protocol major 2, this relay speaks 1");
}

TEST(SessionWriter, IndexHasTheRelaysOffsets)
{
	Session s;
	ASSERT_EQ(s.w.apply(cr::Trace{.id = 1, .path = "kernel"}, nullptr), "");
	ASSERT_EQ(s.w.apply(cr::Metadata{.trace_id = 1, .text = "/* CTF 1.8 */"}, nullptr), "");
	ASSERT_EQ(s.w.apply(cr::Stream{.id = 9, .trace_id = 1, .file = "chan_0"}, nullptr), "");
	ASSERT_EQ(s.w.apply(packet(9, 40, 0), nullptr), "");
	ASSERT_EQ(s.w.apply(packet(9, 24, 1), nullptr), "");
	ASSERT_EQ(s.w.apply(cr::CloseStream{.stream_id = 9}, nullptr), "");
	EXPECT_EQ(s.w.apply(packet(9, 8, 2), nullptr), "PACKET of closed stream 9");
	EXPECT_EQ(slurp(s.dir() + "/kernel/chan_0").size(), 64u);
	const std::string idx = slurp(s.dir() + "/kernel/index/chan_0.idx");
	ASSERT_EQ(idx.size(), 16u + 2 * 72);
	EXPECT_EQ(idx.substr(0, 16), std::string("\xc1\xf1\xdc\xc1\0\0\0\1\0\0\0\1\0\0\0\x48", 16));
	const uint64_t second[] = {40, 24 * 8, 24 * 8 - 8, 100, 150, 1, 3, 4, 1};
	for (size_t k = 0; k < 9; k++)
		EXPECT_EQ(be64(idx, 16 + 72 + 8 * k), second[k]) << k;
	EXPECT_EQ(be64(idx, 16), 0u);
}

TEST(SessionWriter, OrderAndIds)
{
	base::TestTempDir tmp("tracery-relay-unit");
	SessionWriter w(tmp.path());
	EXPECT_EQ(w.apply(cr::Trace{.id = 1, .path = "kernel"}, nullptr), "TRACE before HELLO");
	Session s;
	cr::HelloReply r;
	EXPECT_EQ(s.w.apply(cr::Hello{.hostname = "h", .session = "s"}, &r), "a second HELLO");
	ASSERT_EQ(s.w.apply(cr::Trace{.id = 1, .path = "ust/uid/0/64-bit"}, nullptr), "");
	EXPECT_EQ(s.w.apply(cr::Trace{.id = 1, .path = "kernel"}, nullptr), "TRACE id 1 used twice");
	EXPECT_EQ(s.w.apply(cr::Trace{.id = 2, .path = "ust/uid"}, nullptr),
	          "TRACE path ust/uid inside or around ust/uid/0/64-bit");
	EXPECT_EQ(s.w.apply(cr::Trace{.id = 2, .path = "ust/uid/0/64-bit/x"}, nullptr),
	          "TRACE path ust/uid/0/64-bit/x inside or around ust/uid/0/64-bit");
	EXPECT_EQ(s.w.apply(cr::Trace{.id = 2, .path = "ust/uid/0/64-bi"}, nullptr), ""); // a sibling, not a prefix
	EXPECT_EQ(s.w.apply(cr::Stream{.id = 1, .trace_id = 3, .file = "c"}, nullptr), "STREAM of unknown trace 3");
	EXPECT_EQ(s.w.apply(cr::Stream{.id = 1, .trace_id = 1, .file = "metadata"}, nullptr), "STREAM named metadata");
	EXPECT_EQ(s.w.apply(cr::Stream{.id = 1, .trace_id = 1, .file = "index"}, nullptr), "STREAM named index");
	ASSERT_EQ(s.w.apply(cr::Stream{.id = 1, .trace_id = 1, .file = "c"}, nullptr), "");
	EXPECT_EQ(s.w.apply(cr::Stream{.id = 1, .trace_id = 2, .file = "d"}, nullptr), "STREAM id 1 used twice");
	EXPECT_NE(s.w.apply(cr::Stream{.id = 2, .trace_id = 1, .file = "c"}, nullptr), ""); // the file exists
	EXPECT_EQ(s.w.apply(cr::Beacon{.stream_id = 7, .timestamp = 1}, nullptr), "BEACON of unknown stream 7");
	EXPECT_EQ(s.w.apply(cr::Metadata{.trace_id = 5, .text = "x"}, nullptr), "METADATA of unknown trace 5");
	EXPECT_EQ(s.w.apply(cr::Bye{}, nullptr), "");
	EXPECT_EQ(s.w.apply(cr::Beacon{.stream_id = 1, .timestamp = 1}, nullptr), "BEACON after BYE");
}

TEST(SessionWriter, Bounds)
{
	Session s;
	for (uint32_t i = 0; i < kMaxTraces; i++)
		ASSERT_EQ(s.w.apply(cr::Trace{.id = i, .path = base::cat("t", std::to_string(i))}, nullptr), "") << i;
	EXPECT_EQ(s.w.apply(cr::Trace{.id = 999, .path = "more"}, nullptr), "more than 64 traces in a session");
	const std::string mib(1024 * 1024, 'x');
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(s.w.apply(cr::Metadata{.trace_id = 0, .text = mib}, nullptr), "");
	EXPECT_EQ(s.w.apply(cr::Metadata{.trace_id = 0, .text = "y"}, nullptr), "metadata of trace t0 over 16 MiB");
	EXPECT_EQ(std::filesystem::file_size(s.dir() + "/t0/metadata"), 16u * 1024 * 1024);
}

TEST(SessionWriter, FrameRefusedByTheDiskLeavesNothingAndIsWrittenAgain)
{
	Session s;
	ASSERT_EQ(s.w.apply(cr::Trace{.id = 1, .path = "kernel"}, nullptr), "");
	ASSERT_EQ(s.w.apply(cr::Stream{.id = 9, .trace_id = 1, .file = "chan_0"}, nullptr), "");
	ASSERT_EQ(s.w.apply(packet(9, 1000, 0), nullptr), "");
	EXPECT_FALSE(s.w.disk_refused());
	{
		SoftLimit limit(RLIMIT_FSIZE, 1500); // the second packet's write stops half-way
		EXPECT_EQ(s.w.apply(packet(9, 1000, 1), nullptr), "kernel/chan_0: write failed: File too large");
		EXPECT_TRUE(s.w.disk_refused());
		EXPECT_EQ(std::filesystem::file_size(s.dir() + "/kernel/chan_0"), 1000u); // cut back
		EXPECT_EQ(s.w.packets(), 1u);
		const std::string big(2000, 'm');
		EXPECT_EQ(s.w.apply(cr::Metadata{.trace_id = 1, .text = big}, nullptr),
		          "kernel/metadata: write failed: File too large");
		EXPECT_TRUE(s.w.disk_refused());
		EXPECT_EQ(std::filesystem::file_size(s.dir() + "/kernel/metadata"), 0u);
		EXPECT_EQ(s.w.apply(packet(5, 10, 0), nullptr), "PACKET of unknown stream 5"); // not the disk's
		EXPECT_FALSE(s.w.disk_refused());
	}
	ASSERT_EQ(s.w.apply(packet(9, 1000, 1), nullptr), "");
	ASSERT_EQ(s.w.apply(cr::Metadata{.trace_id = 1, .text = std::string(2000, 'm')}, nullptr), "");
	EXPECT_EQ(s.w.packets(), 2u);
	EXPECT_EQ(s.w.last_packet_offset(), 1000u);
	EXPECT_EQ(slurp(s.dir() + "/kernel/chan_0"), std::string(1000, '\0') + std::string(1000, '\1'));
	EXPECT_EQ(slurp(s.dir() + "/kernel/metadata"), std::string(2000, 'm'));
	const std::string idx = slurp(s.dir() + "/kernel/index/chan_0.idx");
	ASSERT_EQ(idx.size(), 16u + 2 * 72);
	EXPECT_EQ(be64(idx, 16 + 72), 1000u); // the second packet's offset
	EXPECT_EQ(s.w.stream_path(9), "kernel/chan_0");
	EXPECT_EQ(s.w.trace_path(1), "kernel");
	EXPECT_EQ(s.w.stream_path(8), "");
}

} // namespace
} // namespace tracery::relay
