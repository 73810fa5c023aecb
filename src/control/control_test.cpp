// Unit tests of the control protocol: framing with descriptors, version and
// garbage rejection, event schemas round-tripping into descriptors.
#include "control/event_schema.hpp"
#include "control/wire.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace tracery::control {
namespace {

struct Pair {
	Fd a, b;
	Pair()
	{
		int sv[2];
		EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		a.reset(sv[0]);
		b.reset(sv[1]);
	}
};

TEST(Wire, MessageWithDescriptorsRoundTrips)
{
	Pair p;
	int pipefd[2];
	ASSERT_EQ(pipe(pipefd), 0);
	Fd r(pipefd[0]), w(pipefd[1]);
	const int fds[] = {w.get(), r.get()};
	ASSERT_TRUE(send_message(p.a.get(), {{"type", "x"}, {"n", 42}}, fds));
	ASSERT_TRUE(send_message(p.a.get(), {{"type", "y"}}));
	Message m;
	std::string why;
	ASSERT_EQ(recv_message(p.b.get(), m, &why), RecvStatus::ok) << why;
	EXPECT_EQ(m.body["n"], 42);
	ASSERT_EQ(m.fds.size(), 2u);
	ASSERT_EQ(write(m.fds[0].get(), "ok", 2), 2); // the received write end feeds our read end
	char buf[2];
	ASSERT_EQ(read(r.get(), buf, 2), 2);
	EXPECT_EQ(memcmp(buf, "ok", 2), 0);
	ASSERT_EQ(recv_message(p.b.get(), m, &why), RecvStatus::ok);
	EXPECT_EQ(m.body["type"], "y");
	EXPECT_TRUE(m.fds.empty());
	p.a.reset();
	EXPECT_EQ(recv_message(p.b.get(), m, &why), RecvStatus::eof);
}

TEST(Wire, RejectsOtherVersionsAndGarbage)
{
	Pair p;
	const uint32_t header[3] = {kMagic, uint32_t{kProtocolVersion + 1}, 2};
	ASSERT_EQ(write(p.a.get(), header, sizeof header), static_cast<ssize_t>(sizeof header));
	Message m;
	std::string why;
	EXPECT_EQ(recv_message(p.b.get(), m, &why), RecvStatus::error);
	EXPECT_NE(why.find("protocol version"), std::string::npos) << why;

	Pair q;
	ASSERT_EQ(write(q.a.get(), "GET / HTTP/1.0\r\n", 16), 16);
	EXPECT_EQ(recv_message(q.b.get(), m, &why), RecvStatus::error);
	EXPECT_NE(why.find("bad magic"), std::string::npos) << why;
}

TRACERY_ENUM_LABELS(test_color, {"red", 0, 0}, {"many", 2, 200});
const tracery_field_desc kFields[] = {
	{"id", TRACERY_TYPE_U64, 0, 0, nullptr},
	{"path", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 3, nullptr},
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U32, 0, nullptr},
	{"c", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &test_color},
};
tracery_event_desc kDesc = {"app", "req", kFields, 5, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

TEST(Wire, HexRoundTrips)
{
	const std::string bytes("\x00\x01\x7f\x80\xff TRFB", 9);
	EXPECT_EQ(control::to_hex(bytes), "00017f80ff20545246");
	std::string back;
	ASSERT_TRUE(control::from_hex(control::to_hex(bytes), back));
	EXPECT_EQ(back, bytes);
	EXPECT_FALSE(control::from_hex("abc", back));  // odd length
	EXPECT_FALSE(control::from_hex("0g", back));   // not a digit
	EXPECT_FALSE(control::from_hex("0A", back));   // uppercase is not what we write
}

TEST(EventSchema, RoundTripsThroughJson)
{
	const nlohmann::json schema = schema_of(kDesc);
	OwnedEventDesc owned(nlohmann::json::parse(schema.dump()));
	EXPECT_EQ(schema_of(owned.desc()), schema);
	EXPECT_EQ(full_name(schema), "app:req");
	EXPECT_EQ(fields_summary(schema), "id u64, path string, arr array<s16>, seq sequence<u32>, c enum<u8>");
	EXPECT_STREQ(owned.desc().fields[4].enum_desc->entries[1].label, "many");
	EXPECT_EQ(owned.desc().fields[4].enum_desc->entries[1].end, 200);
}

TEST(EventSchema, KeyTellsVersionsApart)
{
	nlohmann::json a = schema_of(kDesc), b = a;
	b["fields"][0]["type"] = "u32";
	EXPECT_NE(schema_key(a), schema_key(b));
	EXPECT_EQ(schema_key(a).rfind("app:req#", 0), 0u);
}

TEST(EventSchema, RejectsBadSchemas)
{
	nlohmann::json s = schema_of(kDesc);
	s["fields"][0]["type"] = "u128";
	EXPECT_THROW(OwnedEventDesc{s}, std::invalid_argument);
	EXPECT_THROW(OwnedEventDesc{nlohmann::json::object()}, std::invalid_argument);
	nlohmann::json many = schema_of(kDesc);
	for (int i = 0; i < 20; i++)
		many["fields"].push_back({{"name", "f" + std::to_string(i)}, {"type", "u8"}});
	EXPECT_THROW(OwnedEventDesc{many}, std::invalid_argument);
}

} // namespace
} // namespace tracery::control
