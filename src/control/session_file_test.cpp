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
	                           3});
	s.user.tracking = {{"vpid", true, {}}, {"vuid", false, {1000}}, {"vgid", true, {}}};
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
	EXPECT_NE(text.find("\n  \"format\": 1,\n"), std::string::npos) << text;
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
	j["format"] = 2;
	j["rotation"] = {{"size", 1000}}; // a later format's field: not the error
	EXPECT_EQ(error_of(j.dump()), "session file: format 2 is later than this tracery reads (1): load it with "
	                              "a newer tracery");
	j["format"] = 0;
	j.erase("rotation");
	EXPECT_EQ(error_of(j.dump()), "session file: field 'format' is 0, expected 1 to 1");
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
