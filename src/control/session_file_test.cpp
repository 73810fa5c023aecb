// Session files (session_file.hpp): the text round-trips, and every kind of
// bad file is refused with the JSON path of the bad value.
#include "control/session_file.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>

namespace tracery::control {
namespace {

SavedSession example()
{
	SavedSession s;
	s.name = "web";
	s.output = "/t/web";
	s.started = true;
	s.user.channels.push_back({"chan",
	                           8192,
	                           8,
	                           false,
	                           true,
	                           {"vpid", "procname"},
	                           {{"app:*", std::nullopt, std::vector<std::string>{"app:debug_*"}},
	                            {"db:query", "ms > 100", std::nullopt}},
	                           {"app:noisy"},
	                           -1,
	                           65536,
	                           3,
	                           100000,
	                           0,
	                           false});
	s.user.tracking = {{"vpid", true, {}}, {"vuid", false, {1000}}, {"vgid", true, {}}};
	s.rotation = SavedRotation{std::nullopt, 1 << 20};
	s.triggers =
		std::vector<SavedTrigger>{{"consumed",
	                                   {"session-consumed-size-ge", "user", {}, {}, {}, "web", {}, 1 << 20, {}},
	                                   {{"notify", {}, "every", 1}, {"rotate-session", "web", "once-after", 2}}}};
	return s;
}

std::string error_of(const std::string &text)
{
	try {
		parse_session_file(text);
	} catch (const DecodeError &e) {
		return e.what();
	}
	return "accepted";
}

TEST(SessionFile, TextRoundTripsAndIsIndented)
{
	const std::string text = session_file_text(example());
	EXPECT_EQ(parse_session_file(text), example());
	EXPECT_NE(text.find("\n  \"format\": 3,\n"), std::string::npos) << text;
	// Optional fields not set are not written.
	EXPECT_EQ(text.find("\"kernel\""), std::string::npos) << text;
	EXPECT_EQ(text.find("\"relay\""), std::string::npos) << text;
}

TEST(SessionFile, BadFilesNameTheJsonPath)
{
	nlohmann::json j = session_file_json(example());
	auto with = [&](const nlohmann::json::json_pointer &at, const nlohmann::json &value) {
		nlohmann::json copy = j;
		copy[at] = value;
		return copy.dump();
	};
	using P = nlohmann::json::json_pointer;
	EXPECT_EQ(error_of(with(P("/user/channels/0/subbuf_size"), "big")),
	          "session file: field 'user.channels[0].subbuf_size' is a string, expected an integer from 0 to "
	          "18446744073709551615");
	EXPECT_EQ(error_of(with(P("/user/channels/0/events/1/level"), 3)),
	          "session file: unknown field 'user.channels[0].events[1].level'");
	EXPECT_EQ(
		error_of(with(P("/user/tracking/1/values/0"), -1)),
		"session file: field 'user.tracking[1].values[0]' is -1, expected an integer from 0 to 18446744073709551615");
	EXPECT_EQ(error_of(with(P("/started"), "yes")),
	          "session file: field 'started' is a string, expected true or false");
	nlohmann::json missing = j;
	missing["user"].erase("channels");
	EXPECT_EQ(error_of(missing.dump()), "session file: missing field 'user.channels'");
}

TEST(SessionFile, LaterFormatsAreRefusedFirst)
{
	nlohmann::json j = session_file_json(example());
	j["format"] = 4;
	j["schedule"] = {{"size", 1000}}; // a later format's field: not the error
	EXPECT_EQ(error_of(j.dump()), "session file: format 4 is later than this tracery reads (3): load it with "
	                              "a newer tracery");
	j["format"] = 0;
	j.erase("schedule");
	EXPECT_EQ(error_of(j.dump()), "session file: field 'format' is 0, expected 1 to 3");
}

// A file of format 1 has none of format 2's fields: it reads the same.
TEST(SessionFile, FormatOneFilesRead)
{
	nlohmann::json j = session_file_json(example());
	j["format"] = 1;
	j.erase("rotation");
	j.erase("triggers");
	for (const char *key : {"switch_timer_us", "monitor_timer_us", "enabled"})
		j["user"]["channels"][0].erase(key);
	const SavedSession s = parse_session_file(j.dump());
	EXPECT_EQ(s.format, 1u);
	EXPECT_FALSE(s.rotation);
	EXPECT_FALSE(s.triggers);
	EXPECT_FALSE(s.user.channels.at(0).enabled);
	EXPECT_EQ(s.user.channels.at(0).tracefile_size, 65536u);
}

// Format 3: the kernel channel's monitor timer, written when set; a file of
// format 2, without it, reads as the default.
TEST(SessionFile, KernelMonitorTimer)
{
	SavedSession s = example();
	s.kernel = SavedKernelDomain{};
	s.kernel->channel = "kchan";
	s.kernel->monitor_timer_us = 0;
	const std::string text = session_file_text(s);
	EXPECT_NE(text.find("\"monitor_timer_us\": 0"), std::string::npos) << text;
	EXPECT_EQ(parse_session_file(text), s);
	nlohmann::json j = session_file_json(s);
	j["format"] = 2;
	j["kernel"].erase("monitor_timer_us");
	const SavedSession two = parse_session_file(j.dump());
	EXPECT_EQ(two.format, 2u);
	ASSERT_TRUE(two.kernel);
	EXPECT_FALSE(two.kernel->monitor_timer_us);
	EXPECT_EQ(two.kernel->channel, "kchan");
}

TEST(SessionFile, NotJsonTooLargeOrNotAnObject)
{
	EXPECT_NE(error_of("{\"format\": 1,").find("session file: not JSON: "), std::string::npos);
	EXPECT_NE(error_of("").find("session file: not JSON: "), std::string::npos);
	EXPECT_EQ(error_of("[1]"), "session file: the body is an array, expected an object");
	EXPECT_EQ(error_of(std::string(kMaxSessionFileBytes + 1, ' ')),
	          "session file: " + std::to_string(kMaxSessionFileBytes + 1) + " bytes, more than the " +
	                  std::to_string(kMaxSessionFileBytes) + " a session file may have");
	// Deeply nested arrays: refused, not a stack overflow.
	EXPECT_NE(error_of(std::string(100000, '[') + std::string(100000, ']')), "accepted");
}

TEST(SessionFile, DefaultDirectory)
{
	setenv("TRACERY_SESSIONS_DIR", "/tmp/x", 1);
	EXPECT_EQ(default_sessions_dir(), "/tmp/x");
	unsetenv("TRACERY_SESSIONS_DIR");
	if (geteuid() == 0) {
		EXPECT_EQ(default_sessions_dir(), kSystemSessionsDir);
	}
}

} // namespace
} // namespace tracery::control
