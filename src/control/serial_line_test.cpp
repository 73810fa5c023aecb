// Unit tests of the sender's end of a serial link (control/serial_line.hpp)
// over a pseudo-terminal, the test playing the relay's end on its master:
// HELLO repeated until ACCEPT, the relay connection's bytes carried both
// ways in numbered DATA frames, and the session's ends (a gap in the
// relay's numbers, the relay's RESET, the connection closed, nobody
// answering), each with its reason.
#include "control/serial_line.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

namespace tracery::control::serial {
namespace {

// A pseudo-terminal: the sender opens the device; the test is the relay's end on the master.
struct Pty {
	Pty()
	{
		int master = -1, slave = -1;
		EXPECT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
		device = ::ttyname(slave);
		slave_.reset(slave); // kept open: the device outlives the sender's close
		::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
		relay_end = std::make_unique<LineEnd>(base::Fd(master), 115200);
	}
	// The next frame from the sender (within 5 s).
	Frame next()
	{
		Frame f;
		const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		while (!relay_end->in.next(f)) {
			EXPECT_LT(std::chrono::steady_clock::now(), deadline) << "no frame from the sender";
			if (std::chrono::steady_clock::now() >= deadline)
				return {};
			pollfd p{relay_end->fd(), POLLIN, 0};
			::poll(&p, 1, 100);
			EXPECT_EQ(relay_end->read_some(), "");
		}
		return f;
	}
	void send(Kind kind, uint32_t link, uint32_t sequence, std::string_view payload = {})
	{
		relay_end->send(kind, link, sequence,
		                {reinterpret_cast<const uint8_t *>(payload.data()), payload.size()});
		EXPECT_EQ(relay_end->drain(2000), "");
	}

	std::string device;
	base::Fd slave_;
	std::unique_ptr<LineEnd> relay_end;
};

std::string read_socket(int fd, size_t want)
{
	std::string got;
	while (got.size() < want) {
		char buf[256];
		const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, want - got.size()), 0);
		if (n <= 0)
			break;
		got.append(buf, static_cast<size_t>(n));
	}
	return got;
}

bool at_eof(int fd)
{
	pollfd p{fd, POLLIN, 0};
	char c;
	return ::poll(&p, 1, 5000) == 1 && ::recv(fd, &c, 1, 0) == 0;
}

// Opens the sender's end, answering its second HELLO (the first one's ACCEPT "lost").
void open_link(Pty &pty, std::unique_ptr<SenderLink> *link, base::Fd *socket)
{
	auto opened = std::async(std::launch::async, [&] {
		return SenderLink::open({pty.device, 115200, false}, 5000, link, socket);
	});
	const Frame first = pty.next();
	EXPECT_EQ(first.kind, Kind::hello);
	EXPECT_NE(first.link, 0u);
	EXPECT_EQ(first.payload, (std::vector<uint8_t>{1, 0}));
	const Frame again = pty.next();
	EXPECT_EQ(again.kind, Kind::hello);
	EXPECT_EQ(again.link, first.link);
	pty.send(Kind::accept, first.link + 1, 0); // another session's: not ours
	pty.send(Kind::accept, first.link, 0);
	ASSERT_EQ(opened.get(), "");
}

// The first DATA frame from the sender, past the HELLOs sent before the ACCEPT came.
Frame first_data(Pty &pty)
{
	Frame f = pty.next();
	while (f.kind == Kind::hello)
		f = pty.next();
	return f;
}

TEST(SenderLink, CarriesBytesThenEndsAtAGap)
{
	Pty pty;
	std::unique_ptr<SenderLink> link;
	base::Fd socket;
	open_link(pty, &link, &socket);
	ASSERT_TRUE(link);
	ASSERT_EQ(::send(socket.get(), "abc", 3, 0), 3);
	Frame f = first_data(pty);
	EXPECT_EQ(f.kind, Kind::data);
	const uint32_t id = f.link;
	EXPECT_EQ(f.sequence, 0u);
	EXPECT_EQ(std::string(f.payload.begin(), f.payload.end()), "abc");
	pty.send(Kind::data, id, 0, "reply");
	EXPECT_EQ(read_socket(socket.get(), 5), "reply");
	pty.send(Kind::data, id + 1, 5, "stray"); // another session's: ignored
	pty.send(Kind::data, id, 2, "gap");       // frame 1 lost
	EXPECT_TRUE(at_eof(socket.get()));
	EXPECT_EQ(link->finish(),
	          "serial line " + pty.device + ": frames from the relay were lost (frame 2 came where 1 was due)");
	const Frame reset = pty.next();
	EXPECT_EQ(reset.kind, Kind::reset);
	EXPECT_EQ(reset.link, id);
}

TEST(SenderLink, RelayEndsResetEndsTheSession)
{
	Pty pty;
	std::unique_ptr<SenderLink> link;
	base::Fd socket;
	open_link(pty, &link, &socket);
	ASSERT_EQ(::send(socket.get(), "x", 1, 0), 1);
	const Frame f = first_data(pty);
	pty.send(Kind::reset, f.link, 0);
	EXPECT_TRUE(at_eof(socket.get()));
	EXPECT_EQ(link->finish(), "serial line " + pty.device +
	                                  ": the relay's end lost frames of this link: the session goes on in a new "
	                                  "directory once connected again");
}

TEST(SenderLink, ClosedConnectionSendsItsBytesThenClose)
{
	Pty pty;
	std::unique_ptr<SenderLink> link;
	base::Fd socket;
	open_link(pty, &link, &socket);
	const std::string big(3000, 'b'); // three frames
	ASSERT_EQ(::send(socket.get(), big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
	socket.reset();
	std::string got;
	uint32_t sequence = 0;
	Frame f = first_data(pty);
	while (f.kind == Kind::data) {
		EXPECT_EQ(f.sequence, sequence++);
		EXPECT_LE(f.payload.size(), kMaxPayload);
		got.append(f.payload.begin(), f.payload.end());
		f = pty.next();
	}
	EXPECT_EQ(got, big);
	EXPECT_EQ(f.kind, Kind::close);
	EXPECT_EQ(link->finish(), "");
}

TEST(SenderLink, LineGoneEndsTheSession)
{
	Pty pty;
	std::unique_ptr<SenderLink> link;
	base::Fd socket;
	open_link(pty, &link, &socket);
	pty.relay_end.reset(); // the master closed: the device hangs up
	EXPECT_TRUE(at_eof(socket.get()));
	EXPECT_EQ(link->finish(), "serial line " + pty.device + ": the line hung up");
}

TEST(SenderLink, ConnectsAgainAfterALineCutMidFrame)
{
	// An earlier session's frame cut mid-way (its head claims 1000 bytes, 40
	// came): the HELLOs of the sender connecting again are taken for its
	// body until the relay's end gives the cut frame up, then found.
	Pty pty;
	{
		std::vector<uint8_t> cut;
		encode(Kind::data, 9, 3, std::vector<uint8_t>(1000, 'x'), cut);
		cut.resize(40);
		base::Fd earlier(::open(pty.device.c_str(), O_WRONLY | O_NOCTTY));
		ASSERT_TRUE(earlier);
		ASSERT_EQ(::write(earlier.get(), cut.data(), cut.size()), static_cast<ssize_t>(cut.size()));
	}
	// Read on the relay's end before the sender opens the line (which flushes what is unread).
	for (int i = 0; i < 100 && pty.relay_end->in.pending() < 40; ++i) {
		pollfd p{pty.relay_end->fd(), POLLIN, 0};
		::poll(&p, 1, 50);
		ASSERT_EQ(pty.relay_end->read_some(), "");
	}
	ASSERT_EQ(pty.relay_end->in.pending(), 40u);
	std::unique_ptr<SenderLink> link;
	base::Fd socket;
	open_link(pty, &link, &socket);
	EXPECT_EQ(pty.relay_end->in.frames_bad, 1u);
	EXPECT_GT(pty.relay_end->partial_limit().count(), 1000);
}

TEST(SenderLink, NobodyAnswering)
{
	Pty pty;
	std::unique_ptr<SenderLink> link;
	base::Fd socket;
	const std::string why = SenderLink::open({pty.device, 57600, false}, 700, &link, &socket);
	EXPECT_EQ(why, pty.device +
	                       ": no tracery-relayd --serial answered within 700 ms (is the other end listening, at "
	                       "57600 baud?)");
	EXPECT_FALSE(link);
	EXPECT_FALSE(socket);
	EXPECT_EQ(SenderLink::open({"/dev/absent-serial-device", 115200, false}, 100, &link, &socket),
	          "/dev/absent-serial-device: No such file or directory");
}

} // namespace
} // namespace tracery::control::serial
