// Unit tests of the control protocol's messages (messages.hpp, codec.hpp):
// every message round-trips, empty and with every field set; the bodies are
// the ones the daemon, the command and libtracery have always sent; and the
// decoder's strictness errors (unknown field, missing field, wrong type,
// number out of range, wrong tag), each with its exact message.
#include "control/messages.hpp"
#include "control/round_trip_testing.hpp"

#include <gtest/gtest.h>

namespace tracery::control {
namespace {

using message_testing::round_trip;
using nlohmann::json;

RelayStatus relay()
{
	return {"relay.example:5342",
	        500000000,
	        true,
	        "host/s-1",
	        2,
	        10,
	        9,
	        1,
	        4096,
	        1,
	        7,
	        1,
	        3,
	        "reset",
	        "disk full (No space left on device) writing host/s-1/ust/c_0"};
}

// A message with every field set.
template <class T>
T full();

template <>
ErrorReply full()
{
	return {"no session named 's'"};
}
template <>
Create full()
{
	return {"s",
	        true,
	        "/tmp/t",
	        "net://h",
	        true,
	        1000000000,
	        true,
	        "host-1",
	        std::string(64, 'a'),
	        "-----BEGIN CERTIFICATE-----"};
}
template <>
CreateReply full()
{
	return {"s", "/tmp/t", true, relay()};
}
template <>
Destroy full()
{
	return {true, "s"};
}
template <>
DestroyReply full()
{
	return {{"a", "b"}};
}
template <>
EnableChannel full()
{
	return {"s", "c", 4096, 8, true, true, -1, 1 << 20, 3, 250000, 0};
}
template <>
EnableChannelReply full()
{
	return {"s", "c", 1 << 20};
}
EventRules rules() { return {"s", {"app:*", "b:c"}, true, "c", "x > 1", std::vector<std::string>{"app:debug_*"}}; }
EventRulesReply rules_reply() { return {"s", "c", {"app:*"}, std::vector<ProgramRefusal>{{42, "app:e", "bad"}}}; }
template <>
EnableEvent full()
{
	return {rules()};
}
template <>
EnableEventReply full()
{
	return {rules_reply()};
}
template <>
DisableEvent full()
{
	return {rules()};
}
template <>
DisableEventReply full()
{
	return {rules_reply()};
}
template <>
AddContext full()
{
	return {"s", "c", {"vpid", "procname"}};
}
template <>
AddContextReply full()
{
	return {"s"};
}
template <>
Start full()
{
	return {{"s"}};
}
template <>
StartReply full()
{
	return {"s", 3, {7}, {{8, std::nullopt, "c", "over quota"}}, {{9, "app:e", "bad"}}};
}
template <>
Stop full()
{
	return {{"s"}};
}
template <>
StopReply full()
{
	return {"s",
	        {{"c", 5, WriteLoss{4, 1, 2, false, "disk full (No space left on device) writing /t/c_0"}}},
	        {7},
	        {{"uid1000", "cpu 0: bad", "c"}},
	        "drain failed",
	        relay(),
	        "timeout"};
}
template <>
Status full()
{
	return {{"s"}};
}
DomainTracking domain_tracking() { return {"kernel", {{"pid", false, {1, 2}}, {"vuid", true, {}}}, true}; }
RotationStatus rotation_status()
{
	return {1'000'000'000, 1 << 20, 3, "/tmp/t/20260101T000000+0000-3", "/tmp/t/archives/x-y-2"};
}
template <>
StatusReply full()
{
	ChannelStatus c{"c",
	                4096,
	                8,
	                "discard",
	                "per-uid",
	                {"vpid"},
	                {"app:*", "b:c (filter: x > 1)"},
	                {"b:d"},
	                {{"app:e", 0}},
	                3,
	                WriteLoss{3, 0, 0, true, "I/O error (Input/output error) writing /t/c_1"},
	                1 << 15,
	                {{8, 1000, std::nullopt, "over quota"}},
	                9,
	                {{"pid7", "bad", {}}},
	                20000,
	                4,
	                1500,
	                1 << 20,
	                3,
	                250000,
	                1000000,
	                true};
	ProbeStatus p{"p", "elf:/bin/true:main", 1, {"argc (int)"}, "DWARF", 10, 4};
	KernelStatus k{{"sched_switch"},
	               {"*"},
	               {{"sched_switch", "prev_tid == 1"}},
	               {p},
	               "k",
	               4096,
	               4,
	               "overwrite",
	               {1, 2},
	               false,
	               std::vector<std::string>{"sched:sched_switch"},
	               100,
	               2,
	               WriteLoss{2, 0, 1, false, "disk full (No space left on device) writing /tmp/t/kernel/k_0"},
	               "/tmp/t/kernel",
	               KernelTrackedStatus{3, 4, 5, 6, 7, 8},
	               1 << 20,
	               0,
	               true,
	               250000};
	return {"s",
	        "/tmp/t",
	        "started",
	        1000,
	        false,
	        {c},
	        2,
	        k,
	        "/tmp/t/ust",
	        relay(),
	        {7, 8},
	        {1000, 1 << 30, 4096},
	        {domain_tracking()},
	        rotation_status()};
}
template <>
List full()
{
	return {};
}
template <>
ListReply full()
{
	return {{{"s", 1000, "/tmp/t", "created", true, std::nullopt}, {"r", 0, "", "started", false, relay()}}};
}
template <>
ListEvents full()
{
	return {};
}
template <>
ListEventsReply full()
{
	return {{{42, 1000, "app", {{"app:e", "x: u32"}}}}};
}
template <>
SnapshotRecord full()
{
	return {"s", "before-upgrade", 1 << 20, "/t/snapshots"};
}
template <>
SnapshotRecordReply full()
{
	return {"s", "/tmp/t/snapshot-1"};
}
KernelEvents kernel_events()
{
	return {"s", "k", "x > 1", {{"irq:*"}}, {{"openat"}}, true, "elf:/bin/true:main", "p", "a", 256};
}
KernelEventsReply kernel_reply()
{
	return {"s", "k", {"irq:*"}, std::vector<std::string>{"irq:x"}, 2, "DWARF", std::vector<std::string>{"note"}};
}
template <>
KernelEnableEvent full()
{
	return {kernel_events()};
}
template <>
KernelEnableEventReply full()
{
	return {kernel_reply()};
}
template <>
KernelDisableEvent full()
{
	return {kernel_events()};
}
template <>
KernelDisableEventReply full()
{
	return {kernel_reply()};
}
template <>
KernelEnableChannel full()
{
	return {"s", "k", 4096, 4, true, 1 << 20, 3, 250000};
}
template <>
KernelEnableChannelReply full()
{
	return {"s", "k", 16384, true};
}
template <>
KernelTrack full()
{
	return {{"s", {1, 2}, false}};
}
template <>
KernelTrackReply full()
{
	return {{"s", {1, 2}, false}};
}
template <>
KernelUntrack full()
{
	return {{"s", {1}, std::nullopt}};
}
template <>
KernelUntrackReply full()
{
	return {{"s", {2}, true}};
}
template <>
Track full()
{
	return {{"s", "kernel", {{"pid", false, {7}}, {"vgid", true, {}}}, false}};
}
template <>
TrackReply full()
{
	return {{"s", domain_tracking()}};
}
template <>
Untrack full()
{
	return {{"s", "user", {{"vuid", false, {0, 1000}}}, std::nullopt}};
}
template <>
UntrackReply full()
{
	return {{"s", {"user", {{"vpid", false, {}}, {"vuid", true, {}}, {"vgid", true, {}}}, std::nullopt}}};
}
template <>
KernelList full()
{
	return {};
}
template <>
KernelListReply full()
{
	return {{"irq:irq_handler_entry"}, {"openat"}};
}
template <>
KernelAddContext full()
{
	return {"s", "k", {"tid", "procname"}};
}
template <>
KernelAddContextReply full()
{
	return {"s", {"tid", "pid", "procname"}};
}
json schema() { return {{"provider", "app"}, {"name", "e"}, {"fields", json::array()}}; }
template <>
Hello full()
{
	return {"app", {schema()}, 1, 1000, 100};
}
template <>
NewEvents full()
{
	return {3, {schema()}};
}
template <>
Ack full()
{
	return {4, 1, true, {{"app:e", "bad"}}};
}
template <>
Ready full()
{
	return {};
}
ChannelRules channel_rules()
{
	return {0,
	        {{"app:e#1", 0}},
	        {{"app:e#1", {"00ff"}}},
	        false,
	        ContextFlags{true, false, true, {"ip", "perf:thread:page-fault"}},
	        "tsc",
	        -1};
}
template <>
StartSession full()
{
	return {1, 4, "s", {channel_rules()}};
}
template <>
Update full()
{
	return {1, 5, {channel_rules()}};
}
template <>
Ids full()
{
	return {3, {{1, {channel_rules()}}}};
}
template <>
StopSession full()
{
	return {1, 6};
}
template <>
Rotate full()
{
	return {"s", true};
}
template <>
RotateReply full()
{
	return {"s", "/tmp/t/archives/x-y-0"};
}
template <>
EnableRotation full()
{
	return {"s", 1'000'000'000, 1 << 20};
}
template <>
EnableRotationReply full()
{
	return {{"s", rotation_status()}};
}
template <>
DisableRotation full()
{
	return {"s", true, true};
}
template <>
DisableRotationReply full()
{
	return {{"s", rotation_status()}};
}
template <>
Clear full()
{
	return {{"s"}};
}
template <>
ClearReply full()
{
	return {"s", 4};
}

SavedSession saved_session()
{
	SavedSession s;
	s.name = "s";
	s.output = "/t/s";
	s.relay = SavedRelay{"net://relay.example:5342", 1000000000, true};
	s.started = true;
	s.user.channels.push_back({"c",
	                           4096,
	                           8,
	                           true,
	                           true,
	                           {"vpid"},
	                           {{"app:*", "x > 1", std::vector<std::string>{"app:d"}}},
	                           {"b:*"},
	                           500,
	                           1 << 20,
	                           4,
	                           250000,
	                           0,
	                           false});
	s.user.tracking.push_back({"vpid", false, {1, 2}});
	s.kernel = SavedKernelDomain{"k",
	                             4096,
	                             4,
	                             false,
	                             {"tid"},
	                             {{"sched_switch", "prev_tid == 1"}},
	                             {{"*", std::nullopt}},
	                             {{"p", "elf:/bin/true:main", "x=%di:s32", std::nullopt}},
	                             256,
	                             {{"pid", false, {7}}},
	                             false,
	                             1 << 20,
	                             2,
	                             false,
	                             0};
	s.snapshot_outputs.push_back({"o", "/t/snapshots", 1 << 20});
	s.rotation = SavedRotation{1000000000, 1 << 20};
	s.triggers = std::vector<SavedTrigger>{{"full",
	                                        {"channel-buffer-usage-ge", "user", {}, {}, {}, "s", "c", {}, 75},
	                                        {{"notify", {}, "every", 1}}}};
	return s;
}
template <>
Save full()
{
	return {false, "s"};
}
template <>
SaveReply full()
{
	return {{saved_session()}};
}
template <>
Load full()
{
	return {saved_session(), "/home/u/.tracery/sessions/s.json", true};
}
template <>
LoadReply full()
{
	return {"s", "/t/s", true};
}

SnapshotOutputsReply snapshot_outputs() { return {"s", {{"o", "/t/snapshots", 1 << 20}}}; }
template <>
SnapshotAddOutput full()
{
	return {"s", {"o", "/t/snapshots", 1 << 20}};
}
template <>
SnapshotAddOutputReply full()
{
	return {snapshot_outputs()};
}
template <>
SnapshotDelOutput full()
{
	return {"s", "1"};
}
template <>
SnapshotDelOutputReply full()
{
	return {snapshot_outputs()};
}
template <>
SnapshotListOutput full()
{
	return {{"s"}};
}
template <>
SnapshotListOutputReply full()
{
	return {snapshot_outputs()};
}
template <>
DisableChannel full()
{
	return {"s", "c", true};
}
template <>
DisableChannelReply full()
{
	return {"s", "c"};
}

TEST(Messages, EveryMessageRoundTrips)
{
	std::apply(
		[](auto... m) {
			(round_trip(m), ...);
			(round_trip(full<decltype(m)>()), ...);
		},
		AllMessages{});
}

// What the command, the daemon and libtracery sent before these structs.
TEST(Messages, BodiesAreTheSameAsBefore)
{
	EnableChannel channel;
	channel.session = "s";
	channel.channel = "c";
	EXPECT_EQ(encode(channel).dump(),
	          R"({"channel":"c","cmd":"enable-channel","overwrite":false,"per_pid":false,"session":"s"})");
	Destroy all;
	all.all = true;
	EXPECT_EQ(encode(all).dump(), R"({"all":true,"cmd":"destroy"})");
	EXPECT_EQ(encode(Ready{}).dump(), R"({"type":"ready"})");
	EXPECT_EQ(encode(ErrorReply{"why"}).dump(), R"({"error":"why","ok":false})");
	ListReply list{{{"s", 1000, "/t", "created", false, std::nullopt}}};
	EXPECT_EQ(
		encode(list).dump(),
		R"({"ok":true,"sessions":[{"name":"s","output":"/t","owner":1000,"relay":null,"snapshot":false,"state":"created"}]})");
	ChannelRules update{1, {{"k", 3}}, {}, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
	EXPECT_EQ(encode(Update{2, 9, {update}}).dump(),
	          R"({"channels":[{"filters":{},"ids":{"k":3},"index":1}],"seq":9,"session":2,"type":"update"})");
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

TEST(Messages, DecodingIsStrict)
{
	json create = encode(full<Create>());
	create["colour"] = "red";
	EXPECT_EQ(error_of([&] { decode<Create>(create); }), "create: unknown field 'colour'");

	json start = encode(full<Start>());
	start.erase("session");
	EXPECT_EQ(error_of([&] { decode<Start>(start); }), "start: missing field 'session'");

	json channel = encode(full<EnableChannel>());
	channel["subbuf_size"] = "4k";
	EXPECT_EQ(
		error_of([&] { decode<EnableChannel>(channel); }),
		"enable-channel: field 'subbuf_size' is a string, expected an integer from 0 to 18446744073709551615");
	channel["subbuf_size"] = -1;
	EXPECT_EQ(error_of([&] { decode<EnableChannel>(channel); }),
	          "enable-channel: field 'subbuf_size' is -1, expected an integer from 0 to 18446744073709551615");

	json status = encode(full<StatusReply>());
	status["channels"][0]["events"][0]["id"] = 4294967296;
	EXPECT_EQ(
		error_of([&] { decode<StatusReply>(status); }),
		"status reply: field 'channels[0].events[0].id' is 4294967296, expected an integer from 0 to 4294967295");
	status = encode(full<StatusReply>());
	status["kernel"]["probes"][0]["hits"] = true;
	EXPECT_EQ(
		error_of([&] { decode<StatusReply>(status); }),
		"status reply: field 'kernel.probes[0].hits' is true, expected an integer from 0 to 18446744073709551615");
	status = encode(full<StatusReply>());
	status["relay"]["extra"] = 1;
	EXPECT_EQ(error_of([&] { decode<StatusReply>(status); }), "status reply: unknown field 'relay.extra'");

	json ack = encode(full<Ack>());
	ack["refused"][0].erase("reason");
	EXPECT_EQ(error_of([&] { decode<Ack>(ack); }), "ack: missing field 'refused[0].reason'");
	ack = encode(full<Ack>());
	ack["tracing"] = "yes";
	EXPECT_EQ(error_of([&] { decode<Ack>(ack); }), "ack: field 'tracing' is a string, expected true or false");

	json session = encode(full<StartSession>());
	session["channels"][0]["filters"]["app:e#1"][0] = 7;
	EXPECT_EQ(error_of([&] { decode<StartSession>(session); }),
	          "start_session: field 'channels[0].filters.app:e#1[0]' is 7, expected a string");

	EXPECT_EQ(error_of([&] { decode<Hello>(json::array()); }), "hello: the body is an array, expected an object");
	EXPECT_EQ(error_of([&] { decode<Hello>(encode(full<NewEvents>())); }), "hello: field 'type' is not \"hello\"");
	EXPECT_EQ(error_of([&] { decode<ListReply>(encode(ErrorReply{"x"})); }), "list reply: field 'ok' is not true");
	EXPECT_EQ(error_of([&] { decode<ErrorReply>(json{{"ok", false}}); }), "error reply: missing field 'error'");
	EXPECT_FALSE(is<ListReply>(encode(ErrorReply{"x"})));
	EXPECT_TRUE(is<ErrorReply>(encode(ErrorReply{"x"})));
}

} // namespace
} // namespace tracery::control
