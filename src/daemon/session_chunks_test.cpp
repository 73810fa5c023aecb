// Unit tests of a session's trace chunks (session_chunks.hpp): LTTng's names,
// chunk 0 archived out of OUTPUT (the user trace into ust/), later chunks
// renamed whole, a cleared chunk's files removed, the size the schedule reads.
#include "daemon/session_chunks.hpp"

#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace tracery::daemon {
namespace {

namespace fs = std::filesystem;

void write_file(const std::string &path, size_t bytes)
{
	fs::create_directories(fs::path(path).parent_path());
	std::ofstream(path) << std::string(bytes, 'x');
}

std::set<std::string> names_in(const std::string &dir)
{
	std::set<std::string> out;
	for (const auto &e : fs::directory_iterator(dir))
		out.insert(e.path().filename().string());
	return out;
}

TEST(SessionChunks, ChunkTimeIsLttngsForm)
{
	EXPECT_TRUE(std::regex_match(chunk_time(1'800'000'000), std::regex(R"(\d{8}T\d{6}[+-]\d{4})")))
		<< chunk_time(1'800'000'000);
	EXPECT_LT(chunk_time(1'800'000'000), chunk_time(1'800'000'060)) << "names sort in time order";
}

TEST(SessionChunks, FirstChunkIsArchivedOutOfTheOutputIntoUst)
{
	base::TestTempDir tmp;
	const std::string out = tmp.path();
	SessionChunks chunks(out, 1'800'000'000);
	EXPECT_EQ(chunks.user_dir(false), out);
	EXPECT_EQ(chunks.user_dir(true), out + "/ust");
	write_file(out + "/metadata", 10);
	write_file(out + "/channel0_uid0_0", 100);
	write_file(out + "/.metadata.x.tmp", 1); // hidden: not the trace's
	EXPECT_EQ(chunks.bytes(false), 110u);
	EXPECT_TRUE(chunks.has_streams(false));

	const std::string next = chunks.next_root(1'800'000'010);
	EXPECT_EQ(next, out + "/" + chunk_time(1'800'000'010) + "-1");
	chunks.begin(next, 1'800'000'010);
	EXPECT_TRUE(chunks.moved());
	EXPECT_EQ(chunks.user_dir(false), next + "/ust") << "a later chunk always has ust/";
	fs::create_directories(next + "/ust");

	const std::string archive = chunks.archive_previous(1'800'000'010, false);
	EXPECT_EQ(archive, out + "/archives/" + chunk_time(1'800'000'000) + "-" + chunk_time(1'800'000'010) + "-0");
	EXPECT_EQ(names_in(archive + "/ust"), (std::set<std::string>{"metadata", "channel0_uid0_0"}));
	EXPECT_EQ(names_in(out), (std::set<std::string>{".metadata.x.tmp", "archives", fs::path(next).filename()}));
	EXPECT_EQ(chunks.status().rotations, 1u);
	EXPECT_EQ(chunks.status().last_archive, archive);
	EXPECT_EQ(chunks.status().chunk, next);
}

TEST(SessionChunks, LaterChunksAreRenamedWholeAndClearedOnesRemoved)
{
	base::TestTempDir tmp;
	const std::string out = tmp.path();
	SessionChunks chunks(out, 100);
	// The kernel layout: OUTPUT/ust and OUTPUT/kernel.
	write_file(out + "/ust/metadata", 1);
	write_file(out + "/ust/c_uid0_0", 1);
	write_file(out + "/kernel/metadata", 1);
	write_file(out + "/kernel/k_0", 1);
	chunks.begin(chunks.next_root(200), 200);
	const std::string first = chunks.archive_previous(200, true);
	EXPECT_EQ(names_in(first), (std::set<std::string>{"ust", "kernel"}));
	EXPECT_EQ(names_in(first + "/kernel"), (std::set<std::string>{"metadata", "k_0"}));

	const std::string second_root = chunks.root();
	chunks.begin(chunks.next_root(250), 250);
	fs::create_directories(chunks.root());
	const std::string abandoned = chunks.root();
	chunks.abandon_next(); // its directory could not be given the metadata, say
	EXPECT_EQ(chunks.root(), second_root);
	EXPECT_FALSE(fs::exists(abandoned));
	write_file(second_root + "/ust/metadata", 1);
	write_file(second_root + "/ust/c_uid0_0", 5);
	write_file(second_root + "/kernel/k_0", 7);
	EXPECT_EQ(chunks.bytes(true), 13u);
	chunks.begin(chunks.next_root(300), 300);
	EXPECT_EQ(chunks.remove_previous(true), 3u); // clear: the whole chunk goes
	EXPECT_FALSE(fs::exists(second_root));
	EXPECT_EQ(chunks.status().rotations, 1u) << "a cleared chunk is not archived";

	// A stopped session's clear keeps the metadata for its next start.
	write_file(chunks.root() + "/ust/metadata", 1);
	write_file(chunks.root() + "/ust/c_uid0_0", 1);
	EXPECT_EQ(chunks.remove(false, true), 1u);
	EXPECT_FALSE(chunks.has_streams(false));
	EXPECT_EQ(names_in(chunks.root() + "/ust"), (std::set<std::string>{"metadata"}));
	const std::string last = chunks.archive(400, false);
	EXPECT_TRUE(std::regex_search(last, std::regex("-2$"))) << last;
	EXPECT_EQ(names_in(out + "/archives").size(), 2u);
}

} // namespace
} // namespace tracery::daemon
