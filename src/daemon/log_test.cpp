// Tests of traceryd's log (log.cpp): a line per message, whatever the
// message quotes.
#include "daemon/log.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace tracery::daemon {
namespace {

std::vector<std::string> logged(void (*write)())
{
	FILE *f = tmpfile();
	log_to(f, Level::info);
	write();
	log_to(stderr, Level::info);
	rewind(f);
	std::vector<std::string> lines;
	char buf[8192];
	while (fgets(buf, sizeof buf, f))
		lines.emplace_back(buf);
	fclose(f);
	return lines;
}

TEST(Log, APeersTextStaysOnOneBoundedLine)
{
	const auto lines = logged([] {
		log(Level::warn, "program 7: unknown message type '%s'",
		    "x\n2026-11-27 traceryd error: forged\r\x1b[2J");
		log(Level::info, "long: %s", std::string(100000, 'a').c_str());
		log(Level::debug, "not shown at info");
	});
	ASSERT_EQ(lines.size(), 2u);
	EXPECT_NE(lines[0].find("unknown message type 'x?2026-11-27 traceryd error: forged??[2J'\n"), std::string::npos)
		<< lines[0];
	EXPECT_LT(lines[1].size(), 2200u);
	EXPECT_NE(lines[1].find(" [cut]\n"), std::string::npos);
}

} // namespace
} // namespace tracery::daemon
