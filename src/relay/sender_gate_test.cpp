// Unit tests of the relay's sender gate (relay/sender_gate.hpp): which listen
// addresses are loopback and when the relay refuses to start; the per-sender
// limits over time (sessions open at once, directories per window, the window
// sliding, senders counted apart, what a closed session gives back); the gate
// over a socket pair: HELLO refused without authentication where keys are
// required, the exchange accepted with the right key (the sender's side being
// control's ClientExchange) and the sender then counted by its key name.
#include "relay/sender_gate.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

namespace tracery::relay {
namespace {

namespace cr = control::relay;
namespace auth = control::auth;
using Clock = SenderLimits::Clock;

TEST(SenderGate, LoopbackAndPolicy)
{
	for (const char *a : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"})
		EXPECT_TRUE(is_loopback(a)) << a;
	for (const char *a : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "localhost", ""})
		EXPECT_FALSE(is_loopback(a)) << a;
	SenderPolicy open;
	EXPECT_EQ(check_policy("127.0.0.1", open), "");
	EXPECT_EQ(check_policy("0.0.0.0", open)
	                  .rfind("--listen 0.0.0.0 reaches beyond loopback, and without "
	                         "--auth-keys anyone who reaches it could send sessions: give "
	                         "--auth-keys FILE",
	                         0),
	          0u);
	open.allow_unauthenticated = true;
	EXPECT_EQ(check_policy("0.0.0.0", open), "");
	SenderPolicy keyed;
	keyed.keys = std::make_shared<auth::Keyring>();
	EXPECT_EQ(check_policy("::", keyed), "");
}

class Gates : public ::testing::Test {
protected:
	void SetUp() override
	{
		auth::Key k;
		k.name = "host-1";
		ASSERT_EQ(auth::parse_secret(std::string(64, 'a'), &k.secret), "");
		auto ring = std::make_shared<auth::Keyring>();
		ASSERT_EQ(ring->add(k), "");
		key = k;
		keyed.keys = ring;
		int sv[2];
		ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		relay_fd = sv[0];
		sender_fd = sv[1];
	}
	void TearDown() override
	{
		::close(relay_fd);
		::close(sender_fd);
	}
	// What the relay sent on the socket pair, decoded.
	std::vector<cr::Frame> sent()
	{
		uint8_t buf[4096];
		const ssize_t n = ::recv(sender_fd, buf, sizeof buf, 0);
		cr::Decoder d;
		if (n > 0)
			d.feed({buf, static_cast<size_t>(n)});
		std::vector<cr::Frame> out;
		cr::Frame f;
		while (d.next(f) == cr::Decoder::Status::frame)
			out.push_back(f);
		return out;
	}

	SenderPolicy open, keyed;
	auth::Key key;
	int relay_fd = -1, sender_fd = -1;
};

TEST_F(Gates, LimitsCountPerSenderOverTime)
{
	open.max_sessions_per_sender = 2;
	open.max_dirs_per_sender = 3;
	open.dir_window = std::chrono::seconds(100);
	SenderGate a(open, relay_fd, "10.0.0.1:1000"), b(open, relay_fd, "10.0.0.1:1001"),
		c(open, relay_fd, "10.0.0.1:1002"), other(open, relay_fd, "10.0.0.2:1000");
	EXPECT_EQ(a.sender(), "address 10.0.0.1");
	SenderLimits limits;
	const Clock::time_point t0{};
	EXPECT_EQ(limits.open_session(a, open, t0), "");
	EXPECT_TRUE(a.counted);
	EXPECT_EQ(limits.open_session(b, open, t0), "");
	EXPECT_EQ(limits.open_session(c, open, t0), "refused: address 10.0.0.1 already has 2 sessions open, the most "
	                                            "a sender may (--max-sessions-per-sender)");
	EXPECT_FALSE(c.counted);
	EXPECT_EQ(limits.open_session(other, open, t0), ""); // another address, its own counts
	EXPECT_EQ(limits.open_sessions("address 10.0.0.1"), 2u);
	limits.close_session(a);
	EXPECT_FALSE(a.counted);
	limits.close_session(a); // once only
	EXPECT_EQ(limits.open_sessions("address 10.0.0.1"), 1u);
	EXPECT_EQ(limits.open_session(c, open, t0 + std::chrono::seconds(10)), ""); // the third directory
	limits.close_session(c);
	limits.close_session(b);
	EXPECT_EQ(limits.open_sessions("address 10.0.0.1"), 0u);
	// Three directories made within 100 s: a fourth waits until the first is 100 s old.
	EXPECT_EQ(limits.open_session(a, open, t0 + std::chrono::seconds(99)),
	          "refused: address 10.0.0.1 made 3 session directories within 100 s, the most a sender may "
	          "(--max-dirs-per-sender)");
	// The two made at t0 are 100 s old: room for two more.
	EXPECT_EQ(limits.open_session(a, open, t0 + std::chrono::seconds(100)), "");
	limits.close_session(a);
	EXPECT_EQ(limits.open_session(b, open, t0 + std::chrono::seconds(101)), "");
	limits.close_session(b);
	// Made at 10, 100 and 101 s: full until the one of 10 s is 100 s old.
	EXPECT_NE(limits.open_session(c, open, t0 + std::chrono::seconds(109)), "");
	EXPECT_EQ(limits.open_session(c, open, t0 + std::chrono::seconds(110)), "");
}

TEST_F(Gates, HelloWithoutAuthenticationIsRefusedWhereKeysAreRequired)
{
	SenderGate gate(keyed, relay_fd, "127.0.0.1:5000");
	bool taken = true;
	std::string note;
	EXPECT_EQ(gate.on_frame(cr::Hello{.hostname = "h", .session = "s"}, &taken, &note),
	          "refused: HELLO without authentication (this relay has --auth-keys)");
	const auto frames = sent();
	ASSERT_EQ(frames.size(), 1u);
	EXPECT_EQ(std::get<cr::HelloReply>(frames[0]).text,
	          "this relay takes authenticated senders only: give the sender a key the relay knows (tracery create "
	          "--relay-key FILE)");
	// With --allow-unauthenticated it passes, counted by its address.
	keyed.allow_unauthenticated = true;
	SenderGate allowed(keyed, relay_fd, "127.0.0.1:5001");
	EXPECT_EQ(allowed.on_frame(cr::Hello{.hostname = "h", .session = "s"}, &taken, &note), "");
	EXPECT_FALSE(taken);
	EXPECT_EQ(allowed.sender(), "address 127.0.0.1");
	// A relay without keys refuses AUTH_REQUEST.
	SenderGate keyless(open, relay_fd, "127.0.0.1:5002");
	EXPECT_EQ(keyless.on_frame(cr::AuthRequest{.request = {.key_name = "host-1"}}, &taken, &note),
	          "refused: AUTH_REQUEST to a relay without --auth-keys");
	EXPECT_FALSE(std::get<cr::AuthResult>(sent().at(0)).result.accepted);
}

TEST_F(Gates, RightKeyIsAdmittedAndCountedByItsName)
{
	SenderGate gate(keyed, relay_fd, "127.0.0.1:5000");
	auth::ClientExchange client(auth::Service::relay_sender, key);
	bool taken = false;
	std::string note;
	cr::AuthRequest request;
	ASSERT_EQ(client.request(&request.request), "");
	ASSERT_EQ(gate.on_frame(request, &taken, &note), "");
	EXPECT_TRUE(taken);
	const auto challenge = sent();
	ASSERT_EQ(challenge.size(), 1u);
	cr::AuthResponse response;
	ASSERT_EQ(client.respond(std::get<cr::AuthChallenge>(challenge[0]).challenge, &response.response), "");
	ASSERT_EQ(gate.on_frame(response, &taken, &note), "");
	EXPECT_EQ(note, "authenticated as key host-1");
	const auto result = sent();
	ASSERT_EQ(result.size(), 1u);
	EXPECT_EQ(client.check(std::get<cr::AuthResult>(result[0]).result), "");
	EXPECT_EQ(gate.sender(), "key host-1");
	EXPECT_EQ(gate.on_frame(cr::Hello{.hostname = "h", .session = "s"}, &taken, &note), "");
	EXPECT_FALSE(taken);
	EXPECT_EQ(gate.on_frame(request, &taken, &note), "a second AUTH_REQUEST");
	// Out of turn: a response with no request.
	SenderGate fresh(keyed, relay_fd, "127.0.0.1:5001");
	EXPECT_EQ(fresh.on_frame(response, &taken, &note), "AUTH_RESPONSE out of turn");
}

} // namespace
} // namespace tracery::relay
