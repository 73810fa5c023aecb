// Unit tests of App's sends to a program: they never block; what the socket
// does not take waits, in order, descriptors with their own message, until
// flush(); a program that lets too much wait is dropped.
#include "daemon/app.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace tracery::daemon {
namespace {

using nlohmann::json;

struct Linked {
	App app;
	base::Fd program; // the program's end
	int blocked = 0;
	Linked()
	{
		int sv[2];
		EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		app.sock.reset(sv[0]);
		program.reset(sv[1]);
		app.on_blocked = [this] { blocked++; };
	}
};

TEST(App, SendsNeverBlockAndArriveInOrderWithTheirDescriptors)
{
	Linked l;
	const std::string pad(1024, 'p');
	constexpr int kMessages = 2000; // 2 MB: far more than a socket buffer
	int pipefd[2];
	ASSERT_EQ(pipe(pipefd), 0);
	base::Fd read_end(pipefd[0]);
	// Messages numbered by their seq, padded by their name.
	const auto message = [&](int i) {
		return control::encode(control::StartSession{1, static_cast<uint64_t>(i), pad, {}});
	};
	for (int i = 0; i < kMessages; i++) {
		if (i == kMessages / 2) { // queued behind others by now: sent later, with its message
			const int fds[] = {pipefd[1]};
			ASSERT_TRUE(l.app.send(message(i), fds));
			close(pipefd[1]); // the App keeps its own copy until it is sent
		} else {
			ASSERT_TRUE(l.app.send(message(i)));
		}
	}
	EXPECT_GT(l.blocked, 0);
	EXPECT_TRUE(l.app.wants_write());

	std::vector<int> order;
	std::thread reader([&] {
		for (int i = 0; i < kMessages; i++) {
			control::Message m;
			std::string why;
			ASSERT_EQ(control::recv_message(l.program.get(), control::Kind::program, m, &why),
			          control::RecvStatus::ok)
				<< why;
			const int n = static_cast<int>(control::decode<control::StartSession>(m.body).seq);
			order.push_back(n);
			EXPECT_EQ(m.fds.size(), n == kMessages / 2 ? 1u : 0u) << n;
			if (!m.fds.empty()) {
				ASSERT_EQ(write(m.fds[0].get(), "ok", 2), 2);
			}
		}
	});
	while (l.app.wants_write()) {
		ASSERT_TRUE(l.app.flush());
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	reader.join();
	ASSERT_EQ(order.size(), size_t{kMessages});
	for (int i = 0; i < kMessages; i++)
		ASSERT_EQ(order[static_cast<size_t>(i)], i);
	char buf[2];
	ASSERT_EQ(read(read_end.get(), buf, 2), 2); // the descriptor that arrived is the pipe's write end
	EXPECT_EQ(std::string(buf, 2), "ok");
}

TEST(App, AProgramThatDoesNotReadIsDropped)
{
	Linked l;
	const std::string mib(1 << 20, 'm');
	size_t sent = 0;
	while (l.app.send(control::encode(control::StartSession{1, 1, mib, {}})))
		ASSERT_LE(++sent, App::kMaxQueued / mib.size() + 64) << "never dropped";
	EXPECT_GE(sent, App::kMaxQueued / mib.size() - 1);
	EXPECT_FALSE(l.app.wants_write()); // what waited is dropped with it
	// Its end of the connection is shut: the program reads what had been
	// sent, then the end.
	char buf[65536];
	ssize_t r;
	while ((r = read(l.program.get(), buf, sizeof buf)) > 0) {
	}
	EXPECT_EQ(r, 0);
}

} // namespace
} // namespace tracery::daemon
