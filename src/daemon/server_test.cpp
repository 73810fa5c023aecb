// Unit tests of the daemon's socket server with small limits: a real Daemon
// and Server on a socket in a temporary directory, spoken to by this
// process (its own user, so it may send commands and register programs):
// the per-user caps on waiting connections, registered programs and bytes
// held, the time a first message has, and that commands are answered
// alongside.
#include "daemon/server.hpp"

#include "base/test_temp_dir.hpp"
#include "control/messages.hpp"

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace tracery::daemon {
namespace {

using nlohmann::json;

class Running {
public:
	explicit Running(ServerLimits limits)
		: daemon_(DaemonOptions{dir_.path(), false, 0, "tracing", 500, 1u << 30}),
		  path_(dir_.path() + "/traceryd.sock"), stop_(eventfd(0, EFD_CLOEXEC)),
		  server_(daemon_, control::listen_unix(path_, 0600), limits),
		  thread_([this] { server_.run(stop_.get(), [] {}); })
	{
	}
	~Running()
	{
		const uint64_t one = 1;
		EXPECT_EQ(write(stop_.get(), &one, sizeof one), 8);
		thread_.join();
	}

	base::Fd connect() const
	{
		base::Fd fd = control::connect_unix(path_);
		EXPECT_TRUE(fd) << strerror(errno);
		timeval tv{5, 0}; // a test that fails does not hang
		setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		return fd;
	}
	// The reply to `list` (an ErrorReply saying why if it could not be sent: a connection refused at accept
	// may be closed before the command goes out).
	json list() const
	{
		base::Fd fd = connect();
		if (!control::send_message(fd.get(), control::Kind::command, control::encode(control::List{})))
			return control::encode(control::ErrorReply{std::string("send: ") + strerror(errno)});
		return reply(fd.get(), control::Kind::command);
	}
	// A message received (an ErrorReply saying why if none came).
	static json reply(int fd, control::Kind kind)
	{
		control::Message m;
		std::string why;
		if (control::recv_message(fd, kind, m, &why) != control::RecvStatus::ok)
			return control::encode(control::ErrorReply{"recv: " + (why.empty() ? "end of stream" : why)});
		return m.body;
	}
	// A registered program's connection (its hello answered with ready).
	base::Fd program() const
	{
		base::Fd fd = connect();
		EXPECT_TRUE(control::send_message(fd.get(), control::Kind::program,
		                                  control::encode(control::Hello{"p", {}, {}, {}, {}})));
		return fd;
	}

private:
	base::TestTempDir dir_{"tracery-server-test"};
	Daemon daemon_;
	std::string path_;
	base::Fd stop_;
	Server server_;
	std::thread thread_;
};

// The error a reply carries, or the reply itself.
std::string error_of(const json &reply)
{
	return control::is<control::ErrorReply>(reply) ? control::decode<control::ErrorReply>(reply).error
	                                               : reply.dump();
}
bool is_ready(const json &reply) { return control::is<control::Ready>(reply); }

std::string uid_text() { return "uid " + std::to_string(geteuid()) + " has "; }

TEST(Server, AUserWithTooManyWaitingConnectionsIsRefusedAtAccept)
{
	ServerLimits limits;
	limits.pending_per_user = 3;
	Running r(limits);
	std::vector<base::Fd> idle;
	for (int i = 0; i < 3; i++)
		idle.push_back(r.connect());
	base::Fd fourth = r.connect();
	EXPECT_EQ(error_of(Running::reply(fourth.get(), control::Kind::command)),
	          uid_text() + "3 connections waiting or in a request, the most a user may have: try again when they "
	                       "are answered");
	idle.pop_back();
	// Once the daemon saw one go, a command is answered again.
	json reply;
	for (int i = 0; i < 100; i++) {
		reply = r.list();
		if (control::is<control::ListReply>(reply))
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	EXPECT_EQ(reply, control::encode(control::ListReply{}));
}

TEST(Server, AFirstMessageMustBeWholeInTime)
{
	ServerLimits limits;
	limits.request_timeout_ms = 300;
	Running r(limits);
	base::Fd half = r.connect();
	ASSERT_EQ(write(half.get(), "TRCY\x02", 5), 5);
	const auto start = std::chrono::steady_clock::now();
	char byte;
	EXPECT_EQ(read(half.get(), &byte, 1), 0); // closed by the daemon, without a word
	const auto waited = std::chrono::steady_clock::now() - start;
	EXPECT_GE(waited, std::chrono::milliseconds(250));
	EXPECT_LT(waited, std::chrono::milliseconds(3000));
	// A registered program may then be silent for longer.
	base::Fd program = r.program();
	EXPECT_TRUE(is_ready(Running::reply(program.get(), control::Kind::program)));
	std::this_thread::sleep_for(std::chrono::milliseconds(700));
	EXPECT_EQ(recv(program.get(), &byte, 1, MSG_DONTWAIT), -1); // nothing, and not closed
	EXPECT_EQ(errno, EAGAIN);
}

TEST(Server, BytesHeldForAUserAreBounded)
{
	ServerLimits limits;
	limits.buffered_per_user = 200 << 10;
	Running r(limits);
	base::Fd fd = r.connect();
	const std::string frame = control::encode_frame(control::Kind::program, std::string(1 << 20, ' '));
	// The daemon refuses and closes when over: the send may be cut short.
	(void)send(fd.get(), frame.data(), 300 << 10, MSG_NOSIGNAL);
	const json reply = Running::reply(fd.get(), control::Kind::program);
	const std::string error = error_of(reply);
	EXPECT_EQ(error.rfind(uid_text(), 0), 0u) << reply;
	EXPECT_NE(error.find(" bytes of unfinished messages, over the limit of 204800 per user"), std::string::npos)
		<< reply;
	EXPECT_TRUE(control::is<control::ListReply>(r.list()));
}

TEST(Server, ProgramsOfAUserAreBounded)
{
	ServerLimits limits;
	limits.programs_per_user = 2;
	Running r(limits);
	std::vector<base::Fd> programs;
	for (int i = 0; i < 2; i++) {
		programs.push_back(r.program());
		EXPECT_TRUE(is_ready(Running::reply(programs.back().get(), control::Kind::program)));
	}
	base::Fd third = r.program();
	EXPECT_EQ(error_of(Running::reply(third.get(), control::Kind::program)),
	          uid_text() + "2 programs registered, the most a user may have");
	EXPECT_TRUE(control::is<control::ListReply>(r.list())); // programs do not count against commands
}

TEST(Server, TheEventSchemasOfAUsersProgramsAreBounded)
{
	ServerLimits limits;
	limits.schemas_per_user = 1000;
	Running r(limits);
	const json hello = control::encode(control::Hello{std::string(500, 'p'), {}, {}, {}, {}});
	auto registered = [&](const base::Fd &fd) {
		EXPECT_TRUE(control::send_message(fd.get(), control::Kind::program, hello));
		return Running::reply(fd.get(), control::Kind::program);
	};
	base::Fd first = r.connect();
	EXPECT_TRUE(is_ready(registered(first)));
	base::Fd second = r.connect(); // two hellos of 542 bytes: over
	EXPECT_EQ(error_of(registered(second)),
	          "the event schemas of the programs of uid " + std::to_string(geteuid()) + " would take " +
	                  std::to_string(2 * hello.dump().size()) + " bytes, over the limit of 1000");
	first.reset(); // its schemas are given back once it is gone
	json reply;
	for (int i = 0; i < 100 && !is_ready(reply); i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		base::Fd third = r.connect();
		reply = registered(third);
	}
	EXPECT_TRUE(is_ready(reply)) << reply;
}

} // namespace
} // namespace tracery::daemon
