// Unit tests of the control protocol: framing with descriptors, version and
// garbage rejection.
#include "control/wire.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace tracery::control {
namespace {

struct Pair {
	base::Fd a, b;
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
	base::Fd r(pipefd[0]), w(pipefd[1]);
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

TEST(Wire, HexRoundTrips)
{
	const std::string bytes("\x00\x01\x7f\x80\xff TRFB", 9);
	EXPECT_EQ(control::to_hex(bytes), "00017f80ff20545246");
	std::string back;
	ASSERT_TRUE(control::from_hex(control::to_hex(bytes), back));
	EXPECT_EQ(back, bytes);
	EXPECT_FALSE(control::from_hex("abc", back)); // odd length
	EXPECT_FALSE(control::from_hex("0g", back));  // not a digit
	EXPECT_FALSE(control::from_hex("0A", back));  // uppercase is not what we write
}

} // namespace
} // namespace tracery::control
