// analysis/read/trace_scan_test.cpp — scan_traces() on made-up trace directories:
// which directories are traces, the warnings for empty stream files and
// traces without any, the files to check; check_streams() on files that are not whole packets.
#include "analysis/read/trace_scan.hpp"
#include "base/test_temp_dir.hpp"

#include "ctf/metadata.hpp"
#include "ctf/stream_writer.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

using namespace tracery;
namespace fs = std::filesystem;

namespace {

class TraceScanTest : public ::testing::Test {
protected:
	// A trace directory: Tracery's metadata (or another tracer's) and a
	// stream file of two packets per name.
	std::string make_trace(const std::string &rel, const std::vector<std::string> &streams, bool ours = true)
	{
		const std::string path = rel.empty() ? dir_ : dir_ + "/" + rel;
		fs::create_directories(path);
		ctf::TraceInfo info;
		info.uuid = ctf::Uuid::random();
		std::ofstream(path + "/metadata")
			<< (ours ? ctf::MetadataWriter(info).preamble() : "env { tracer_name = \"other\"; };\n");
		for (const auto &s : streams) {
			ctf::StreamWriter w(path, s, info.uuid, 0, 0);
			const std::vector<uint8_t> events(200, 1);
			w.write_packet({}, events.data(), events.size());
			w.write_packet({}, events.data(), events.size());
			w.close();
		}
		return path;
	}

	const base::TestTempDir tmp_{"tracery-trace-scan"};
	const std::string &dir_ = tmp_.path();
};

TEST_F(TraceScanTest, SoundTraceHasNoWarning)
{
	make_trace("", {"chan_0", "chan_1"});
	const auto scan = analysis::scan_traces(dir_);
	EXPECT_EQ(scan.traces, std::vector<std::string>{dir_});
	EXPECT_TRUE(scan.warnings.empty()) << scan.warnings[0];
	EXPECT_EQ(scan.ours, (std::vector<std::string>{dir_ + "/chan_0", dir_ + "/chan_1"}));
	const auto checked = analysis::check_streams(scan.ours);
	EXPECT_TRUE(checked.empty()) << checked[0];
}

TEST_F(TraceScanTest, NoMetadataNoTrace)
{
	std::ofstream(dir_ + "/chan_0") << "x";
	fs::create_directories(dir_ + "/sub");
	const auto scan = analysis::scan_traces(dir_);
	EXPECT_TRUE(scan.traces.empty());
	EXPECT_TRUE(scan.warnings.empty());
}

TEST_F(TraceScanTest, TracesBelowTheDirectoryAsInASnapshotSession)
{
	const std::string a = make_trace("snapshot-1", {"chan_0"});
	const std::string b = make_trace("snapshot-2", {"chan_0"});
	const auto scan = analysis::scan_traces(dir_);
	EXPECT_EQ(scan.traces, (std::vector<std::string>{a, b}));
}

TEST_F(TraceScanTest, EmptyStreamFileNamed)
{
	const std::string t = make_trace("", {"chan_0"});
	std::ofstream(t + "/chan_1");
	const auto scan = analysis::scan_traces(dir_);
	ASSERT_EQ(scan.warnings.size(), 1u);
	EXPECT_EQ(scan.warnings[0].rfind(t + "/chan_1 is empty (0 bytes)", 0), 0u) << scan.warnings[0];
	EXPECT_EQ(scan.warnings[0].find('\n'), std::string::npos);
	EXPECT_EQ(scan.ours, std::vector<std::string>{t + "/chan_0"}); // (not the empty one)
}

TEST_F(TraceScanTest, CutPacketNamedWithItsOffsetAndTheFix)
{
	const std::string t = make_trace("", {"chan_0"});
	const std::string f = t + "/chan_0";
	fs::resize_file(f, fs::file_size(f) - 1);
	const auto scan = analysis::scan_traces(dir_);
	EXPECT_TRUE(scan.warnings.empty()) << scan.warnings[0]; // (said by check_streams, when the reading fails)
	const auto checked = analysis::check_streams(scan.ours);
	ASSERT_EQ(checked.size(), 1u);
	const std::string &w = checked[0];
	const std::string whole = std::to_string(84 + 200);
	EXPECT_EQ(w.rfind(f + ": at offset " + whole + ", ", 0), 0u) << w;
	EXPECT_NE(w.find("`truncate -s " + whole + " " + f + "` keeps the 1 whole packets"), std::string::npos) << w;
}

TEST_F(TraceScanTest, HiddenFilesAreNotStreams)
{
	const std::string t = make_trace("", {"chan_0"});
	std::ofstream(t + "/.metadata.123.tmp");
	EXPECT_TRUE(analysis::scan_traces(dir_).warnings.empty());
}

TEST_F(TraceScanTest, AnotherTracersPacketsAreNotWalkedButEmptyFilesAreNamed)
{
	const std::string t = make_trace("", {}, false);
	std::ofstream(t + "/stream_0") << "not our packet layout";
	std::ofstream(t + "/stream_1");
	const auto scan = analysis::scan_traces(dir_);
	ASSERT_EQ(scan.warnings.size(), 1u);
	EXPECT_NE(scan.warnings[0].find("stream_1 is empty"), std::string::npos) << scan.warnings[0];
	EXPECT_TRUE(scan.ours.empty()) << scan.ours[0];
}

TEST_F(TraceScanTest, UserTraceWithoutStreamFilesNamedWithTheLikelyCause)
{
	// A session's user trace and kernel trace, as a killed daemon leaves
	// them: the user trace's metadata, none of its packets.
	const std::string user = make_trace("ust", {});
	const std::string kernel = make_trace("kernel", {"chan_0"});
	std::ofstream(user + "/.hidden") << "x"; // (not a stream file)
	const auto scan = analysis::scan_traces(dir_);
	EXPECT_EQ(scan.traces, (std::vector<std::string>{kernel, user}));
	ASSERT_EQ(scan.warnings.size(), 1u);
	const std::string &w = scan.warnings[0];
	EXPECT_EQ(w.rfind(user + " has a metadata file but no stream file: none of its programs' events reached "
	                         "the disk (their buffers were never flushed, as when the session daemon is killed",
	                  0),
	          0u)
		<< w;
	EXPECT_EQ(w.find('\n'), std::string::npos);
	EXPECT_EQ(scan.ours, std::vector<std::string>{kernel + "/chan_0"});
}

TEST_F(TraceScanTest, OtherTraceWithoutStreamFilesNamed)
{
	const std::string t = make_trace("", {}, false);
	const auto scan = analysis::scan_traces(dir_);
	ASSERT_EQ(scan.warnings.size(), 1u);
	EXPECT_EQ(scan.warnings[0], t + " has a metadata file but no stream file: none of its events reached the "
	                                "disk; the other traces are shown");
}

TEST_F(TraceScanTest, MissingDirectoryThrowsNamingIt)
{
	try {
		analysis::scan_traces(dir_ + "/nope");
		FAIL() << "no exception";
	} catch (const std::system_error &e) {
		EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
		EXPECT_NE(std::string(e.what()).find(dir_ + "/nope"), std::string::npos) << e.what();
	}
}

} // namespace
