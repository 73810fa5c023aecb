// analysis/read/time_range_test.cpp — the times `--begin` and `--end` take:
// ns and seconds from the epoch, a time of day on the first event's day, a
// date and time (local time), and the error that names the option.
#include "analysis/read/time_range.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <stdexcept>

namespace tracery::analysis {
namespace {

TEST(TimeRange, ReadsEveryForm)
{
	setenv("TZ", "UTC", 1);
	tzset();
	EXPECT_EQ(parse_time("1714564800000000001", std::nullopt), 1714564800000000001);
	EXPECT_EQ(parse_time("1714564800.5", std::nullopt), 1714564800500000000);
	EXPECT_EQ(parse_time("-2", std::nullopt), -2);
	EXPECT_EQ(parse_time("2024-05-01 12:00:00.25", std::nullopt), 1714564800250000000);
	const int64_t first = 1714564800000000000 + 3600 * int64_t{1000000000}; // 13:00 that day
	EXPECT_EQ(parse_time("12:00:01.000000001", first), 1714564801000000001);
	EXPECT_EQ(parse_time("12:00:01", std::nullopt), std::nullopt);              // a time of day needs the day
	EXPECT_EQ(parse_time("1714564800.1234567891", std::nullopt), std::nullopt); // ten digits of fraction
	EXPECT_EQ(parse_time("noon", first), std::nullopt);
	EXPECT_EQ(parse_time("", first), std::nullopt);
}

TEST(TimeRange, BoundsNameTheOptionThatCannotBeRead)
{
	const TimeBounds b = time_bounds("5", "", 0);
	EXPECT_EQ(b.begin, 5);
	EXPECT_EQ(b.end, std::nullopt);
	try {
		time_bounds("5", "later", 0);
		FAIL() << "no error";
	} catch (const std::invalid_argument &e) {
		EXPECT_NE(std::string(e.what()).find("cannot read the --end time 'later'"), std::string::npos);
	}
	TimeRange r;
	r.see(3);
	r.see(9);
	EXPECT_TRUE(r.any);
	EXPECT_EQ(r.first, 3);
	EXPECT_EQ(r.last, 9);
}

} // namespace
} // namespace tracery::analysis
