// daemon/trace_journal_test.cpp — the journal of open traces: its text form
// (odd paths round-trip, bad lines are skipped), and the file (replaced,
// read back, removed, refused when oversized).
#include "daemon/trace_journal.hpp"

#include "base/test_temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace tracery;
using namespace tracery::daemon;

namespace {

TEST(TraceJournal, OddPathsRoundTrip)
{
	const std::vector<JournalEntry> entries = {
		{0, 0, "/var/traces/plain"},
		{1000, 1001, "/home/u/with space/and%percent"},
		{4294967294u, 7, std::string("/tmp/new\nline\ttab\x7f\xff") + "end"},
	};
	const std::string text = format_journal(entries);
	EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3); // one line each: the newline is escaped
	EXPECT_NE(text.find("/and%25percent"), std::string::npos) << text;
	size_t skipped = 99;
	EXPECT_EQ(parse_journal(text, &skipped), entries);
	EXPECT_EQ(skipped, 0u);
}

TEST(TraceJournal, BadLinesAreSkippedAndCounted)
{
	const std::string text = "1000 1000 /good\n"
				 "x 1 /bad-uid\n"
				 "1 2 relative/path\n"
				 "1 2 /nul%00inside\n"
				 "1 2 /cut-escape%4\n"
				 "1 2 /bad-escape%zz\n"
				 "1 /two-fields\n"
				 "99999999999 1 /uid-too-large\n"
				 "\n"
				 "5 6 /last-without-newline";
	size_t skipped = 0;
	const auto entries = parse_journal(text, &skipped);
	const std::vector<JournalEntry> expected = {{1000, 1000, "/good"}, {5, 6, "/last-without-newline"}};
	EXPECT_EQ(entries, expected);
	EXPECT_EQ(skipped, 7u);
}

TEST(TraceJournal, FileIsReplacedReadBackAndRemoved)
{
	const base::TestTempDir tmp("tracery-journal");
	const TraceJournal j(tmp.path());
	size_t skipped = 99;
	EXPECT_TRUE(j.read(&skipped).empty()); // none yet
	EXPECT_EQ(skipped, 0u);
	const std::vector<JournalEntry> one = {{1, 2, "/a"}}, two = {{1, 2, "/a"}, {3, 4, "/b c"}};
	j.write(two);
	j.write(one);
	EXPECT_EQ(j.read(&skipped), one);
	EXPECT_FALSE(std::filesystem::exists(j.path() + ".tmp"));
	j.write({});
	EXPECT_FALSE(std::filesystem::exists(j.path()));
	EXPECT_TRUE(j.read(&skipped).empty());
}

TEST(TraceJournal, OversizedFileIsRefusedNamingIt)
{
	const base::TestTempDir tmp("tracery-journal");
	const TraceJournal j(tmp.path());
	std::ofstream(j.path()).close();
	std::filesystem::resize_file(j.path(), kMaxJournalBytes + 1);
	size_t skipped = 0;
	try {
		j.read(&skipped);
		FAIL() << "no exception";
	} catch (const std::runtime_error &e) {
		EXPECT_NE(std::string(e.what()).find(j.path()), std::string::npos) << e.what();
	}
}

} // namespace
