// analysis/read/progress_test.cpp — the progress line of long reads: its
// layout within the terminal's width, and nothing drawn when disabled or
// within the first second.
#include "analysis/read/progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tracery::analysis;

namespace {

TEST(Progress, Line)
{
	// 250 MB of 1 GB in 2 s: 125 MB/s, 6 s left; the bar (a quarter full) takes the rest of the 80 columns
	const std::string l = Progress::line("stats", 250000000, 1000000000, 2.0, 80);
	EXPECT_EQ(l, "stats [######                    ]   25%  250.0 MB/1.0 GB  125.0 MB/s  0:06 left");
	EXPECT_EQ(l.size(), 80u);
	EXPECT_LE(Progress::line("stats", 1, 2, 1.0, 40).size(), 40u);
}

TEST(Progress, DrawsNothingWhenDisabledOrWithinTheFirstSecond)
{
	char *buf = nullptr;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	{
		Progress off("x", 100, f, false);
		off.update(50);
		Progress quick("x", 100, f, true);
		quick.update(50); // before a second has passed
	}
	fclose(f);
	EXPECT_EQ(size, 0u);
	free(buf);
}

} // namespace
