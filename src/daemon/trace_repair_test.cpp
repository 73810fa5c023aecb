// daemon/trace_repair_test.cpp — the repair of traces at the daemon's start:
// a cut final packet is truncated; a garbage tail, a symbolic link (as a
// stream file or in the path), a hard link, a file of another user, another
// tracer's trace are left alone and reported; the owner's credentials are
// used; the journal's traces are repaired and the journal removed; a
// session with kernel events has its two traces in ust/ and kernel/.
#include "daemon/trace_repair.hpp"

#include "base/test_temp_dir.hpp"
#include "ctf/metadata.hpp"
#include "ctf/stream_check.hpp"
#include "ctf/stream_writer.hpp"
#include "ctf/trace_dir.hpp"
#include "kernel/kernel_events.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace tracery;
using namespace tracery::daemon;
namespace fs = std::filesystem;

namespace {

constexpr uid_t kOtherUid = 65534; // nobody

class TraceRepairTest : public ::testing::Test {
protected:
	// A Tracery trace in dir: metadata and stream files of packets carrying
	// these many event bytes each.
	// With `kernel`, the env of a kernel trace (LTTng's kernel identity).
	static void make_trace(const std::string &dir, const std::vector<std::vector<size_t>> &streams,
	                       bool kernel = false)
	{
		const ctf::TraceDir td = ctf::TraceDir::create(dir);
		ctf::TraceInfo info;
		info.uuid = ctf::Uuid::random();
		if (kernel)
			info.identity = kernel::lttng_kernel_identity();
		td.write_metadata(ctf::MetadataWriter(info).preamble());
		std::vector<uint8_t> events(8192, 0x5A);
		for (size_t s = 0; s < streams.size(); ++s) {
			ctf::StreamWriter w = td.create_stream("chan_uid0_" + std::to_string(s), info.uuid, 0, s);
			ctf::PacketInfo p;
			for (size_t n : streams[s]) {
				w.write_packet(p, events.data(), n);
				++p.seq;
			}
			w.close();
		}
	}
	static uint64_t packet(size_t event_bytes) { return ctf::kPacketPrefixSize + event_bytes; }
	JournalEntry entry(const std::string &dir) const { return {geteuid(), getegid(), dir}; }

	const base::TestTempDir tmp_{"tracery-repair"};
	const std::string trace_ = tmp_.path() + "/trace";
};

TEST_F(TraceRepairTest, CutFinalPacketIsTruncatedToTheWholeOnes)
{
	make_trace(trace_, {{100, 1000}, {200}});
	const std::string cut = trace_ + "/chan_uid0_0", whole = trace_ + "/chan_uid0_1";
	fs::resize_file(cut, packet(100) + 500); // the second packet half written
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_TRUE(notes[0].repaired);
	EXPECT_NE(notes[0].text.find(cut + ": its last packet was cut short"), std::string::npos) << notes[0].text;
	EXPECT_NE(notes[0].text.find("truncated to " + std::to_string(packet(100)) +
	                             " bytes, dropping 500 bytes; 1 "
	                             "whole packets kept"),
	          std::string::npos)
		<< notes[0].text;
	EXPECT_EQ(fs::file_size(cut), packet(100));
	EXPECT_TRUE(ctf::check_stream_file(cut).ok());
	EXPECT_EQ(fs::file_size(whole), packet(200));     // untouched
	EXPECT_TRUE(repair_trace(entry(trace_)).empty()); // nothing more to do
}

TEST_F(TraceRepairTest, CutWithinTheFirstHeaderLeavesAnEmptyStream)
{
	make_trace(trace_, {{100}});
	fs::resize_file(trace_ + "/chan_uid0_0", 30);
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_TRUE(notes[0].repaired) << notes[0].text;
	EXPECT_EQ(fs::file_size(trace_ + "/chan_uid0_0"), 0u);
}

TEST_F(TraceRepairTest, GarbageTailIsLeftAloneAndReported)
{
	make_trace(trace_, {{100}});
	const std::string file = trace_ + "/chan_uid0_0";
	std::ofstream(file, std::ios::app | std::ios::binary) << std::string(100, 'x');
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_FALSE(notes[0].repaired);
	EXPECT_NE(notes[0].text.find(file + ": at offset " + std::to_string(packet(100)) + ", no packet starts there"),
	          std::string::npos)
		<< notes[0].text;
	EXPECT_EQ(fs::file_size(file), packet(100) + 100);
}

TEST_F(TraceRepairTest, SymbolicLinkAsStreamFileIsNotFollowed)
{
	// A cut stream file elsewhere, which a repair that followed the link would truncate.
	make_trace(tmp_.path() + "/victim", {{100, 1000}});
	const std::string victim = tmp_.path() + "/victim/chan_uid0_0";
	fs::resize_file(victim, packet(100) + 500);
	make_trace(trace_, {});
	fs::create_symlink(victim, trace_ + "/chan_uid0_0");
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_FALSE(notes[0].repaired);
	EXPECT_NE(notes[0].text.find("symbolic link where a stream file should be"), std::string::npos)
		<< notes[0].text;
	EXPECT_EQ(fs::file_size(victim), packet(100) + 500);
}

TEST_F(TraceRepairTest, SymbolicLinkInThePathIsNotFollowed)
{
	make_trace(trace_, {{100, 1000}});
	fs::resize_file(trace_ + "/chan_uid0_0", packet(100) + 500);
	fs::create_directory_symlink(tmp_.path(), tmp_.path() + "/link");
	const auto notes = repair_trace(entry(tmp_.path() + "/link/trace"));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_FALSE(notes[0].repaired);
	EXPECT_NE(notes[0].text.find("symbolic links are not followed"), std::string::npos) << notes[0].text;
	EXPECT_EQ(fs::file_size(trace_ + "/chan_uid0_0"), packet(100) + 500);
}

TEST_F(TraceRepairTest, HardLinkIsLeftAlone)
{
	make_trace(tmp_.path() + "/victim", {{100, 1000}});
	const std::string victim = tmp_.path() + "/victim/chan_uid0_0";
	fs::resize_file(victim, packet(100) + 500);
	make_trace(trace_, {});
	fs::create_hard_link(victim, trace_ + "/chan_uid0_0");
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_NE(notes[0].text.find("has 2 hard links: left alone"), std::string::npos) << notes[0].text;
	EXPECT_EQ(fs::file_size(victim), packet(100) + 500);
}

TEST_F(TraceRepairTest, FileOfAnotherUserIsLeftAlone)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "giving a file to another user takes root";
	make_trace(trace_, {{100, 1000}});
	const std::string file = trace_ + "/chan_uid0_0";
	fs::resize_file(file, packet(100) + 500);
	ASSERT_EQ(chown(file.c_str(), kOtherUid, kOtherUid), 0);
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_NE(notes[0].text.find("belongs to uid " + std::to_string(kOtherUid) + ", not to the trace's owner"),
	          std::string::npos)
		<< notes[0].text;
	EXPECT_EQ(fs::file_size(file), packet(100) + 500);
}

TEST_F(TraceRepairTest, ActsWithTheOwnersCredentials)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "a trace of another user takes root";
	// The trace of uid 65534 lies under a directory only root may enter: as
	// its owner, the repair cannot reach it (root could).
	make_trace(trace_, {{100, 1000}});
	const std::string file = trace_ + "/chan_uid0_0";
	fs::resize_file(file, packet(100) + 500);
	for (const std::string &p : {trace_, file, trace_ + "/metadata"})
		ASSERT_EQ(chown(p.c_str(), kOtherUid, kOtherUid), 0);
	ASSERT_EQ(chmod(tmp_.path().c_str(), 0700), 0);
	const JournalEntry as_other{kOtherUid, kOtherUid, trace_};
	auto notes = repair_trace(as_other);
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_NE(notes[0].text.find("Permission denied"), std::string::npos) << notes[0].text;
	EXPECT_EQ(fs::file_size(file), packet(100) + 500);
	// Once it may enter, its own trace is repaired.
	ASSERT_EQ(chmod(tmp_.path().c_str(), 0711), 0);
	notes = repair_trace(as_other);
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_TRUE(notes[0].repaired) << notes[0].text;
	EXPECT_EQ(fs::file_size(file), packet(100));
}

TEST_F(TraceRepairTest, AnotherTracersTraceIsLeftAlone)
{
	fs::create_directories(trace_);
	std::ofstream(trace_ + "/metadata") << "/* CTF 1.8 */\nenv {\n\ttracer_name = \"lttng-ust\";\n};\n";
	std::ofstream(trace_ + "/chan_0") << "whatever it holds";
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_NE(notes[0].text.find("its metadata is not Tracery's"), std::string::npos) << notes[0].text;
	EXPECT_EQ(fs::file_size(trace_ + "/chan_0"), 17u);
}

TEST_F(TraceRepairTest, SnapshotDirectoriesAreTracesToo)
{
	fs::create_directories(trace_);
	const std::string snap = trace_ + "/snapshot-1-20260101-000000";
	make_trace(snap, {{100, 1000}});
	fs::resize_file(snap + "/chan_uid0_0", packet(100) + 84);
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_TRUE(notes[0].repaired) << notes[0].text;
	EXPECT_EQ(fs::file_size(snap + "/chan_uid0_0"), packet(100));
}

TEST_F(TraceRepairTest, UserAndKernelTracesOfAKernelSessionAreRepaired)
{
	fs::create_directories(trace_);
	make_trace(trace_ + "/ust", {{100, 1000}});
	make_trace(trace_ + "/kernel", {{200, 2000}}, true);
	make_trace(trace_ + "/other", {{300, 3000}}); // not a directory a session writes
	for (const char *sub : {"/ust", "/kernel", "/other"})
		fs::resize_file(trace_ + sub + "/chan_uid0_0", fs::file_size(trace_ + sub + "/chan_uid0_0") - 100);
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 2u);
	EXPECT_TRUE(notes[0].repaired && notes[1].repaired) << notes[0].text << "\n" << notes[1].text;
	EXPECT_EQ(fs::file_size(trace_ + "/ust/chan_uid0_0"), packet(100));
	EXPECT_EQ(fs::file_size(trace_ + "/kernel/chan_uid0_0"), packet(200));
	EXPECT_EQ(fs::file_size(trace_ + "/other/chan_uid0_0"), packet(300) + packet(3000) - 100);
}

TEST_F(TraceRepairTest, TracesOfAKernelSessionsSnapshotAreRepaired)
{
	const std::string snap = trace_ + "/snapshot-1-20261125-050000";
	make_trace(snap + "/ust", {{100, 1000}});
	make_trace(snap + "/kernel", {{200, 2000}}, true);
	make_trace(snap + "/ust/snapshot-2", {{300, 3000}}); // deeper: not a directory a session writes
	for (const char *sub : {"/ust", "/kernel", "/ust/snapshot-2"})
		fs::resize_file(snap + sub + "/chan_uid0_0", fs::file_size(snap + sub + "/chan_uid0_0") - 100);
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 2u);
	EXPECT_TRUE(notes[0].repaired && notes[1].repaired) << notes[0].text << "\n" << notes[1].text;
	EXPECT_EQ(fs::file_size(snap + "/ust/chan_uid0_0"), packet(100));
	EXPECT_EQ(fs::file_size(snap + "/kernel/chan_uid0_0"), packet(200));
	EXPECT_EQ(fs::file_size(snap + "/ust/snapshot-2/chan_uid0_0"), packet(300) + packet(3000) - 100);
}

TEST_F(TraceRepairTest, TheChunkBeingWrittenIsRepaired)
{
	const std::string chunk = trace_ + "/20261129T031500+0000-3";
	const std::string archived = trace_ + "/archives/20261129T031000+0000-20261129T031500+0000-2";
	const std::string lookalike = trace_ + "/20261129T031500+0000-x";
	for (const std::string &dir : {chunk, archived, lookalike}) {
		make_trace(dir + "/ust", {{100, 1000}});
		fs::resize_file(dir + "/ust/chan_uid0_0", fs::file_size(dir + "/ust/chan_uid0_0") - 100);
	}
	const auto notes = repair_trace(entry(trace_));
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_TRUE(notes[0].repaired) << notes[0].text;
	EXPECT_EQ(fs::file_size(chunk + "/ust/chan_uid0_0"), packet(100));
	// Archives are renamed once whole; other names are no directory a session writes.
	EXPECT_EQ(fs::file_size(archived + "/ust/chan_uid0_0"), packet(100) + packet(1000) - 100);
	EXPECT_EQ(fs::file_size(lookalike + "/ust/chan_uid0_0"), packet(100) + packet(1000) - 100);
}

TEST_F(TraceRepairTest, RemovedTraceIsNothingToDo) { EXPECT_TRUE(repair_trace(entry(trace_ + "/gone")).empty()); }

TEST_F(TraceRepairTest, JournaledTracesAreRepairedAndTheJournalRemoved)
{
	make_trace(trace_, {{100, 1000}});
	make_trace(trace_ + "2", {{100, 1000}});
	fs::resize_file(trace_ + "/chan_uid0_0", packet(100) + 500);
	fs::resize_file(trace_ + "2/chan_uid0_0", packet(100) + 1);
	const TraceJournal journal(tmp_.path());
	journal.write({entry(trace_), entry(trace_ + "2"), entry(trace_ + "/gone")});
	EXPECT_EQ(repair_journaled_traces(journal), 2u);
	EXPECT_EQ(fs::file_size(trace_ + "/chan_uid0_0"), packet(100));
	EXPECT_EQ(fs::file_size(trace_ + "2/chan_uid0_0"), packet(100));
	EXPECT_FALSE(fs::exists(journal.path()));
}

} // namespace
