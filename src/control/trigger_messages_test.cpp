// Unit tests of the messages of triggers and notifications
// (trigger_messages.hpp): every one round-trips, empty and with every field
// set; the decoder is as strict with them as with the others.
#include "control/trigger_messages.hpp"
#include "control/round_trip_testing.hpp"

#include <gtest/gtest.h>

namespace tracery::control {
namespace {

using message_testing::round_trip;
using nlohmann::json;

TriggerCondition condition()
{
	return {"event-rule-matches", "user", "app:request", "ms > 500", {"ms", "path"}, "s", "channel0", 4096, 75};
}
TriggerAction action() { return {"snapshot-session", "flight", "once-after", 3}; }

template <class T>
T full();
template <>
AddTrigger full()
{
	return {"slow", condition(), {action(), {"notify", std::nullopt, "every", 1}}};
}
template <>
AddTriggerReply full()
{
	return {"slow"};
}
template <>
ListTriggers full()
{
	return {};
}
template <>
ListTriggersReply full()
{
	return {{{"slow", 1000, condition(), {{action(), 5, 1, 1, "no session named 'flight'"}}, 5, 2}}};
}
template <>
RemoveTrigger full()
{
	return {"slow"};
}
template <>
RemoveTriggerReply full()
{
	return {"slow"};
}
template <>
Watch full()
{
	return {{"slow", "fast"}};
}
template <>
WatchReply full()
{
	return {{"slow"}};
}
template <>
Triggers full()
{
	return {{{7, "app:*", "ms > 500", {"ms"}}, {8, "db:query", std::nullopt, {}}}};
}
template <>
Notification full()
{
	return {7, 1700000000123456789, "app:request", {{"ms", 900}, {"path", "/x"}, {"gone", nullptr}}, 4};
}
template <>
TriggerFired full()
{
	return {"slow", 1700000000123456789, "app:request", 4242, {{"ms", 900}, {"ids", json::array({1, 2})}}, 4};
}

TEST(TriggerMessages, EveryMessageRoundTrips)
{
	std::apply(
		[](auto... m) {
			(round_trip(m), ...);
			(round_trip(full<decltype(m)>()), ...);
		},
		TriggerMessages{});
}

std::string error_of(auto decoder)
{
	try {
		decoder();
	} catch (const DecodeError &e) {
		return e.what();
	}
	return "no error";
}

TEST(TriggerMessages, DecodingIsStrict)
{
	json add = encode(full<AddTrigger>());
	add["actions"][0]["count"] = -1;
	EXPECT_EQ(error_of([&] { decode<AddTrigger>(add); }),
	          "add-trigger: field 'actions[0].count' is -1, expected an integer from 0 to 18446744073709551615");
	add = encode(full<AddTrigger>());
	add["condition"]["colour"] = "red";
	EXPECT_EQ(error_of([&] { decode<AddTrigger>(add); }), "add-trigger: unknown field 'condition.colour'");
	json note = encode(full<Notification>());
	note.erase("trigger");
	EXPECT_EQ(error_of([&] { decode<Notification>(note); }), "notification: missing field 'trigger'");
	EXPECT_EQ(encode(Triggers{}).dump(), R"({"triggers":[],"type":"triggers"})");
}

} // namespace
} // namespace tracery::control
