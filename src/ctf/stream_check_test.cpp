// ctf/stream_check_test.cpp — check_stream_file() on stream files written by
// StreamWriter, then emptied, cut short, extended or damaged.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "base/byte_order.hpp"
#include "base/fd.hpp"
#include "base/test_temp_dir.hpp"
#include "ctf/metadata.hpp"
#include "ctf/packet.hpp"
#include "ctf/stream_check.hpp"
#include "ctf/stream_writer.hpp"

using namespace tracery::ctf;
namespace fs = std::filesystem;

namespace {

class StreamCheckTest : public ::testing::Test {
protected:
	// A stream file of packets carrying these many event bytes each.
	std::string write_stream(const std::vector<size_t> &event_bytes)
	{
		StreamWriter w(dir_, "chan_0", Uuid::random(), 0, 0);
		std::vector<uint8_t> events(65536, 0x5A);
		PacketInfo info;
		for (size_t n : event_bytes) {
			w.write_packet(info, events.data(), n);
			++info.seq;
		}
		w.close();
		return dir_ + "/chan_0";
	}

	const tracery::base::TestTempDir tmp_{"tracery-stream-check"};
	const std::string &dir_ = tmp_.path();
};

void patch_u64(const std::string &path, uint64_t offset, uint64_t value)
{
	uint8_t b[8];
	tracery::base::store_le<uint64_t>(b, value);
	std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
	f.seekp(static_cast<std::streamoff>(offset));
	f.write(reinterpret_cast<const char *>(b), sizeof b);
}

TEST_F(StreamCheckTest, WholePacketsAreSound)
{
	const std::string path = write_stream({100, 0, 4000});
	const StreamCheck c = check_stream_file(path);
	EXPECT_TRUE(c.ok()) << c.problem;
	EXPECT_EQ(c.packets, 3u);
	EXPECT_EQ(c.size, 3 * kPacketPrefixSize + 4100);
	EXPECT_EQ(c.whole, c.size);
}

TEST_F(StreamCheckTest, EmptyFileIsAProblem)
{
	const std::string path = write_stream({});
	const StreamCheck c = check_stream_file(path);
	EXPECT_FALSE(c.ok());
	EXPECT_EQ(c.size, 0u);
	EXPECT_EQ(c.whole, 0u);
	EXPECT_NE(c.problem.find("empty (0 bytes)"), std::string::npos) << c.problem;
	EXPECT_FALSE(c.cut); // nothing to truncate
}

TEST_F(StreamCheckTest, LastPacketCutShort)
{
	const std::string path = write_stream({100, 1000});
	fs::resize_file(path, fs::file_size(path) - 10);
	const StreamCheck c = check_stream_file(path);
	EXPECT_FALSE(c.ok());
	EXPECT_EQ(c.packets, 1u);
	EXPECT_EQ(c.whole, kPacketPrefixSize + 100);
	EXPECT_NE(c.problem.find("declares " + std::to_string(kPacketPrefixSize + 1000) + " bytes but only " +
	                         std::to_string(kPacketPrefixSize + 990) + " remain"),
	          std::string::npos)
		<< c.problem;
	EXPECT_TRUE(c.cut);
}

TEST_F(StreamCheckTest, HeaderCutShortIsACutPacket)
{
	// A writer killed within the next packet's header: 1 to 83 bytes of it
	// remain, beginning with (part of) the magic.
	for (uint64_t keep : {uint64_t{1}, uint64_t{3}, uint64_t{4}, uint64_t{60}, kPacketPrefixSize - 1}) {
		const std::string path = write_stream({100, 1000});
		fs::resize_file(path, kPacketPrefixSize + 100 + keep);
		const StreamCheck c = check_stream_fd(tracery::base::Fd(::open(path.c_str(), O_RDONLY)).get(), path);
		EXPECT_EQ(c.whole, kPacketPrefixSize + 100) << keep;
		EXPECT_EQ(c.packets, 1u) << keep;
		EXPECT_TRUE(c.cut) << keep << ": " << c.problem;
		fs::remove(path);
	}
}

TEST_F(StreamCheckTest, TrailingBytesShorterThanAHeader)
{
	const std::string path = write_stream({100});
	{
		std::ofstream f(path, std::ios::app | std::ios::binary);
		f << "partial";
	}
	const StreamCheck c = check_stream_file(path);
	EXPECT_FALSE(c.ok());
	EXPECT_EQ(c.whole, kPacketPrefixSize + 100);
	EXPECT_NE(c.problem.find("only 7 bytes remain"), std::string::npos) << c.problem;
	EXPECT_FALSE(c.cut); // "partial" is no packet magic: not what a crash leaves
}

TEST_F(StreamCheckTest, BadMagic)
{
	const std::string path = write_stream({100, 100});
	patch_u64(path, kPacketPrefixSize + 100, 0);
	const StreamCheck c = check_stream_file(path);
	EXPECT_FALSE(c.ok());
	EXPECT_EQ(c.packets, 1u);
	EXPECT_NE(c.problem.find("no packet starts there"), std::string::npos) << c.problem;
	EXPECT_FALSE(c.cut);
}

TEST_F(StreamCheckTest, ImpossibleSizesStopTheWalk)
{
	// 0 bits would never move on; 12 bits is not whole bytes; content larger
	// than the packet is what readers reject.
	for (uint64_t bits : {uint64_t{0}, uint64_t{12}, uint64_t{8 * 8}}) {
		const std::string path = write_stream({100, 100});
		patch_u64(path, kPacketPrefixSize + 100 + kPacketSizeOffset, bits);
		const StreamCheck c = check_stream_file(path);
		EXPECT_FALSE(c.ok()) << bits;
		EXPECT_EQ(c.whole, kPacketPrefixSize + 100) << bits;
		EXPECT_NE(c.problem.find("impossible size"), std::string::npos) << c.problem;
		EXPECT_FALSE(c.cut) << bits;
		fs::remove(path);
	}
	const std::string path = write_stream({100});
	patch_u64(path, kContentSizeOffset, 8 * (kPacketPrefixSize + 101));
	EXPECT_NE(check_stream_file(path).problem.find("impossible size"), std::string::npos);
}

TEST_F(StreamCheckTest, MissingFileThrowsNamingIt)
{
	try {
		check_stream_file(dir_ + "/nope");
		FAIL() << "no exception";
	} catch (const std::system_error &e) {
		EXPECT_NE(std::string(e.what()).find(dir_ + "/nope"), std::string::npos) << e.what();
	}
}

TEST(WrittenByTracery, RecognizesItsOwnMetadataOnly)
{
	TraceInfo info;
	info.uuid = Uuid::random();
	MetadataWriter m(info);
	EXPECT_TRUE(written_by_tracery(m.preamble()));
	EXPECT_FALSE(written_by_tracery("env {\n\ttracer_name = \"lttng-ust\";\n};\n"));
	EXPECT_TRUE(
		written_by_tracery("env {\n\ttracer_name = \"lttng-modules\";\n\ttracery_version = \"0.1\";\n};\n"));
	EXPECT_FALSE(written_by_tracery("env {\n\ttracer_name = \"lttng-modules\";\n};\n"));
}

} // namespace
