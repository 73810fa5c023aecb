// analysis/sql/clickhouse_text_test.cpp — what ClickHouse's text needs without
// a server: URLs parsed (and refused with the form expected), TabSeparated
// escaping read back unchanged for every byte, names and strings quoted, SQL
// split into statements at the semicolons outside quotes and comments.
// clickhouse_test (tests/) runs the rest against real servers.
#include "analysis/sql/clickhouse_query.hpp"
#include "base/clickhouse_client.hpp"

#include <gtest/gtest.h>

using namespace tracery;
using namespace tracery::analysis::sql;

TEST(ClickHouseUrl, PartsAndDefaults)
{
	const clickhouse::Endpoint e = clickhouse::parse_url("http://bob:s%40cret@ch1.example:8123/traces");
	EXPECT_EQ(e.url, "http://ch1.example:8123/");
	EXPECT_EQ(e.database, "traces");
	EXPECT_EQ(e.user, "bob");
	EXPECT_EQ(e.password, "s@cret");
	EXPECT_EQ(e.shown, "http://bob@ch1.example:8123/traces"); // no password in messages
	const clickhouse::Endpoint d = clickhouse::parse_url("HTTP://127.0.0.1:8123");
	EXPECT_EQ(d.database, "default");
	EXPECT_EQ(d.url, "http://127.0.0.1:8123/");
	EXPECT_TRUE(d.user.empty());
}

TEST(ClickHouseUrl, RefusedWithTheFormExpected)
{
	for (const char *bad : {"ch1:8123/db", "https://ch1/db", "http:///db", "http://ch1/db/x", "http://ch1/d-b",
	                        "http://ch1/db?x=1", "http://c h/db"}) {
		try {
			clickhouse::parse_url(bad);
			ADD_FAILURE() << bad << " accepted";
		} catch (const std::invalid_argument &e) {
			EXPECT_NE(std::string(e.what()).find("give http://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE"),
			          std::string::npos)
				<< e.what();
			EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
		}
	}
}

TEST(ClickHouseText, TabSeparatedRoundTripsEveryByte)
{
	std::string all;
	for (int c = 0; c < 256; ++c)
		all += static_cast<char>(c);
	all += "\\N";
	std::string field;
	clickhouse::append_tsv(field, all);
	EXPECT_EQ(field.find('\t'), std::string::npos);
	EXPECT_EQ(field.find('\n'), std::string::npos);
	bool null = true;
	EXPECT_EQ(clickhouse::unescape_tsv(field, null), all);
	EXPECT_FALSE(null);
	EXPECT_EQ(clickhouse::unescape_tsv("\\N", null), "");
	EXPECT_TRUE(null);
}

TEST(ClickHouseText, Quoting)
{
	EXPECT_EQ(clickhouse::quote_name("a`b\\c"), "`a\\`b\\\\c`");
	EXPECT_EQ(clickhouse::quote_string("it's \\"), "'it\\'s \\\\'");
}

TEST(ClickHouseText, StatementsSplitOutsideQuotesAndComments)
{
	EXPECT_EQ(split_statements("SELECT 1; SELECT ';' -- a; comment\n; /* ; */ SELECT `x;y`;; "),
	          (std::vector<std::string>{"SELECT 1", " SELECT ';' -- a; comment\n", " /* ; */ SELECT `x;y`"}));
	EXPECT_EQ(split_statements("SELECT 'it\\'s; one'"), (std::vector<std::string>{"SELECT 'it\\'s; one'"}));
	EXPECT_TRUE(split_statements(" ; \n").empty());
}
