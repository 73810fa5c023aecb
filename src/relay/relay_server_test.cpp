// Unit tests of RelayServer: with a slow disk (a writer-thread hook that
// sleeps before each frame, a tiny write queue) the sender is told NOTICE
// writes_behind and then caught_up, the log says both, SYNC is answered
// only once every packet before it is written, every packet is on disk, and
// a viewer is answered at once while the sender's writes are behind; a
// viewer that says nothing is closed after the deadline. Out of resources:
// a session whose writer thread cannot start is refused alone, and a relay
// out of descriptors at accept waits (one log line) instead of spinning, then
// serves the connection that waited. A sender closed for a bad frame whose
// frames are still being written counts against the cap on senders. A
// viewer silent after CONNECT is closed after viewer_idle_timeout_ms;
// accepted sockets have TCP keepalive. A disk that refuses writes holds its
// sender (NOTICE write_failed) until it takes them again (write_resumed), or
// until the sender asks it to drop what it did not write (DROP_UNWRITTEN).
// The authenticated viewer port, in clear: a viewer's key shows the live
// sessions sent with that key's name only; a wrong secret, a plain
// lttng-live client, frames out of turn and more than 4 KiB before
// admission are refused.
#include "relay/relay_server.hpp"

#include "base/test_temp_dir.hpp"
#include "control/live_client.hpp"
#include "control/live_protocol.hpp"
#include "control/relay_connection.hpp"
#include "relay/test_soft_limit.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace tracery::relay {
namespace {

namespace cr = control::relay;
namespace live = control::live;
using namespace std::chrono_literals;

struct Server {
	base::TestTempDir tmp{"tracery-relay-server-unit"};
	std::mutex mu;
	std::vector<std::string> lines;
	std::unique_ptr<RelayServer> server;
	std::thread thread;

	explicit Server(ServerOptions o)
	{
		o.listen = "127.0.0.1";
		o.port = 0;
		o.live_port = 0;
		o.viewer_port = 0;
		o.output = tmp.path();
		server = std::make_unique<RelayServer>(o);
		server->log = [this](const std::string &l) {
			std::lock_guard lock(mu);
			lines.push_back(l);
		};
		thread = std::thread([this] { server->run(false); });
	}
	~Server()
	{
		server->stop();
		thread.join();
	}
	size_t count(const std::string &text)
	{
		std::lock_guard lock(mu);
		return static_cast<size_t>(std::count_if(lines.begin(), lines.end(),
		                                         [&](const std::string &l) { return l.find(text) != l.npos; }));
	}
	// count(text) once it reaches n, or after 10 s: for lines the server
	// logs after the client has seen what they are about.
	size_t count_once(const std::string &text, size_t n)
	{
		for (int i = 0; i < 1000 && count(text) < n; i++)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		return count(text);
	}
};

bool connect_to(int fd, uint16_t port)
{
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
}

// One request of a raw viewer and its reply's `size` bytes, each part within `ms`.
bool round_trip(int fd, const live::Request &r, uint8_t *reply, size_t size, int ms)
{
	const auto req = live::encode_request(r);
	bool ok = ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
	size_t got = 0;
	while (ok && got < size) {
		pollfd p{fd, POLLIN, 0};
		ok = ::poll(&p, 1, ms) == 1;
		const ssize_t n = ok ? ::recv(fd, reply + got, size - got, 0) : -1;
		ok = n > 0;
		got += ok ? static_cast<size_t>(n) : 0;
	}
	return ok;
}

// A raw viewer's CONNECT on a connected socket: answered with the major
// version within `ms`.
bool connected(int fd, int ms)
{
	uint8_t reply[20];
	return round_trip(fd, {.cmd = live::Command::connect, .major = 2, .minor = 4, .type = 1}, reply, sizeof reply,
	                  ms) &&
	       live::get_be32(reply + 8) == live::kMajor;
}

// The same, then closed.
bool answered(int fd, int ms)
{
	const bool ok = connected(fd, ms);
	::close(fd);
	return ok;
}

// The same on a new connection, within a second.
bool viewer_answered(uint16_t port)
{
	const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!connect_to(fd, port)) {
		::close(fd);
		return false;
	}
	return answered(fd, 1000);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// This process's address space (VmSize), bytes.
rlim_t address_space()
{
	std::ifstream in("/proc/self/status");
	std::string word;
	while (in >> word)
		if (word == "VmSize:") {
			rlim_t kib = 0;
			in >> kib;
			return kib * 1024;
		}
	return 0;
}

TEST(RelayServer, SlowDiskIsToldAndSyncWaitsForTheWrites)
{
	std::atomic<bool> slow{true};
	ServerOptions o;
	o.queue_high = 8 * 1024;
	o.queue_low = 2 * 1024;
	o.before_write = [&] {
		if (slow)
			std::this_thread::sleep_for(5ms);
	};
	Server s(o);

	cr::RelayConnection c;
	std::vector<cr::Notice> notices;
	c.on_notice = [&](const cr::Notice &n) { notices.push_back(n); };
	ASSERT_EQ(c.connect("127.0.0.1", s.server->port()), "");
	std::string dir;
	ASSERT_EQ(c.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "slow"}, &dir), "");
	ASSERT_EQ(c.add_trace(1, "t"), "");
	ASSERT_EQ(c.add_stream(1, 1, "c_0"), "");
	constexpr int kPackets = 60;
	const std::vector<uint8_t> bytes(1024, 0x5A);
	for (int i = 0; i < kPackets; i++) {
		cr::PacketIndex idx{.packet_size_bits = 1024 * 8,
		                    .content_size_bits = 1024 * 8,
		                    .timestamp_begin = static_cast<uint64_t>(i),
		                    .timestamp_end = static_cast<uint64_t>(i)};
		ASSERT_EQ(c.send_packet(1, idx, bytes), "");
		if (i == kPackets / 2) { // the queue is over its bound by now, and the disk still slow
			EXPECT_TRUE(viewer_answered(s.server->live_port()));
		}
	}
	uint64_t written = 0;
	ASSERT_EQ(c.sync(&written, 20000), "");
	EXPECT_EQ(written, static_cast<uint64_t>(kPackets)); // answered after every packet was written
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/c_0"), kPackets * 1024u);
	// Caught up follows the SYNC reply (sent as the last writes come back).
	for (int i = 0; i < 100 && (notices.empty() || notices.back().kind != cr::NoticeKind::caught_up); i++) {
		std::this_thread::sleep_for(10ms);
		ASSERT_EQ(c.poll_notices(), "");
	}
	ASSERT_FALSE(notices.empty());
	EXPECT_EQ(notices.front().kind, cr::NoticeKind::writes_behind);
	EXPECT_NE(notices.front().text.find("writes behind"), std::string::npos);
	EXPECT_EQ(notices.back().kind, cr::NoticeKind::caught_up);
	for (size_t i = 0; i < notices.size(); i++) // alternating
		EXPECT_EQ(notices[i].kind, i % 2 ? cr::NoticeKind::caught_up : cr::NoticeKind::writes_behind) << i;
	EXPECT_EQ(s.count("writes behind"), (notices.size() + 1) / 2);
	EXPECT_EQ(s.count("writes caught up"), notices.size() / 2);
	slow = false;
	ASSERT_EQ(c.bye(), "");
	for (int i = 0; i < 200 && !s.count("ended with BYE, 60 packets"); i++)
		std::this_thread::sleep_for(10ms);
	EXPECT_EQ(s.count("ended with BYE, 60 packets"), 1u);
}

// A sender of a relay of its own whose NOTICEs are kept in order: `open`
// connects, opens `session` and declares trace 1 ("t") and its stream "c_0".
struct NoticedSender {
	explicit NoticedSender(ServerOptions o = {}) : s(std::move(o))
	{
		c.on_notice = [this](const cr::Notice &n) { notices.push_back(n); };
	}
	void open(const char *session)
	{
		ASSERT_EQ(c.connect("127.0.0.1", s.server->port()), "");
		ASSERT_EQ(c.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = session},
		                  &dir),
		          "");
		ASSERT_EQ(c.add_trace(1, "t"), "");
		ASSERT_EQ(c.add_stream(1, 1, "c_0"), "");
	}

	Server s;
	cr::RelayConnection c;
	std::vector<cr::Notice> notices;
	std::string dir;
};

// A disk that refuses the session's writes (here files over RLIMIT_FSIZE:
// EFBIG): the sender is told once (NOTICE write_failed, the path and the
// error), is not closed, its SYNC waits; once the disk takes the writes
// again it is told (write_resumed) and every packet is written once.
TEST(RelayServer, DiskRefusalHoldsTheSenderUntilWritesResume)
{
	NoticedSender sender;
	ASSERT_NO_FATAL_FAILURE(sender.open("full"));
	auto &[s, c, notices, dir] = sender;
	const std::vector<uint8_t> bytes(4096, 7);
	auto wait_for = [&sender](cr::NoticeKind kind) { // (clang 14 captures no structured binding)
		for (int i = 0; i < 300 && (sender.notices.empty() || sender.notices.back().kind != kind); i++)
			ASSERT_EQ(sender.c.poll_notices(10), "");
	};
	{
		SoftLimit full(RLIMIT_FSIZE, 10000); // two packets fit, the third is refused
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(
				c.send_packet(1, {.packet_size_bits = 4096 * 8, .content_size_bits = 4096 * 8}, bytes),
				"");
		wait_for(cr::NoticeKind::write_failed);
		ASSERT_EQ(notices.size(), 1u);
		EXPECT_EQ(notices[0].text.find("the disk refuses this session's writes (" + s.tmp.path() + "/" + dir +
		                               "/t/c_0: write failed: File too large)"),
		          0u)
			<< notices[0].text;
		std::this_thread::sleep_for(1200ms); // two more tries, said nothing
		ASSERT_EQ(c.poll_notices(), "");
		EXPECT_EQ(notices.size(), 1u);
		EXPECT_EQ(s.count("the disk refuses this session's writes"), 1u);
		EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/c_0"), 2 * 4096u);
	}
	wait_for(cr::NoticeKind::write_resumed);
	ASSERT_EQ(notices.size(), 2u);
	uint64_t written = 0;
	ASSERT_EQ(c.sync(&written), "");
	EXPECT_EQ(written, 4u);
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/c_0"), 4 * 4096u);
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/index/c_0.idx"), 16u + 4 * 72);
	EXPECT_EQ(s.count("the disk takes this session's writes again"), 1u);
	EXPECT_EQ(s.count("closed"), 0u);
}

// A frame the relay is in the middle of when its writes fall behind: the
// time the relay does not read it is not counted against its deadline.
TEST(RelayServer, FrameDeadlineWaitsWhileWritesAreBehind)
{
	std::atomic<bool> gate{true};
	ServerOptions o;
	o.frame_timeout_ms = 1000;
	o.queue_high = 1024;
	o.queue_low = 512;
	o.before_write = [&] {
		while (!gate)
			std::this_thread::sleep_for(1ms);
	};
	NoticedSender sender(o);
	ASSERT_NO_FATAL_FAILURE(sender.open("held"));
	auto &[s, c, notices, dir] = sender;
	ASSERT_EQ(c.sync(), "");
	const std::vector<uint8_t> bytes(4096, 3);
	const cr::PacketIndex index{.packet_size_bits = 4096 * 8, .content_size_bits = 4096 * 8};
	// The first packet (over queue_high: behind once queued) and half of the second, at once.
	std::vector<uint8_t> sent, second;
	cr::append_frame(sent, cr::Packet{.stream_id = 1, .index = index, .bytes = bytes});
	cr::append_frame(second, cr::Packet{.stream_id = 1, .index = index, .bytes = bytes});
	sent.insert(sent.end(), second.begin(), second.begin() + static_cast<ptrdiff_t>(second.size() / 2));
	gate = false; // a disk that takes nothing for now
	ASSERT_EQ(c.send_raw(sent), "");
	for (int i = 0; i < 300 && notices.empty(); i++)
		ASSERT_EQ(c.poll_notices(10), "");
	ASSERT_EQ(notices.size(), 1u);
	EXPECT_EQ(notices[0].kind, cr::NoticeKind::writes_behind);
	std::this_thread::sleep_for(1500ms); // past the frame's deadline, had it run
	EXPECT_EQ(s.count("a frame not whole"), 0u);
	gate = true;
	for (int i = 0; i < 300 && notices.size() < 2; i++)
		ASSERT_EQ(c.poll_notices(10), "");
	ASSERT_EQ(notices.size(), 2u);
	EXPECT_EQ(notices[1].kind, cr::NoticeKind::caught_up);
	ASSERT_EQ(c.send_raw({second.data() + second.size() / 2, second.size() - second.size() / 2}), "");
	uint64_t written = 0;
	ASSERT_EQ(c.sync(&written), "");
	EXPECT_EQ(written, 2u);
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/c_0"), 2 * 4096u);
	EXPECT_EQ(s.count("closed"), 0u);
}

// A sender whose disk refuses is still read, so that at its session's end
// DROP_UNWRITTEN comes through: the relay drops the frame the disk refuses
// and those after it, answers with the packets it wrote, says what it
// dropped and closes the connection.
TEST(RelayServer, DropUnwrittenEndsASessionTheDiskRefuses)
{
	NoticedSender sender;
	ASSERT_NO_FATAL_FAILURE(sender.open("drop"));
	auto &[s, c, notices, dir] = sender;
	const std::vector<uint8_t> bytes(4096, 9);
	const cr::PacketIndex index{.packet_size_bits = 4096 * 8, .content_size_bits = 4096 * 8};
	{
		SoftLimit full(RLIMIT_FSIZE, 10000); // two packets fit, the third is refused
		for (int i = 0; i < 3; i++)
			ASSERT_EQ(c.send_packet(1, index, bytes), "");
		for (int i = 0; i < 300 && notices.empty(); i++)
			ASSERT_EQ(c.poll_notices(10), "");
		ASSERT_EQ(notices.size(), 1u);
		EXPECT_EQ(notices[0].kind, cr::NoticeKind::write_failed);
		// Read still: one more packet, then the end.
		ASSERT_EQ(c.send_packet(1, index, bytes), "");
		uint64_t written = 0;
		ASSERT_EQ(c.drop_unwritten(7, &written, 5000), "");
		EXPECT_EQ(written, 2u);
	}
	for (int i = 0; i < 300 && !s.count("ended with DROP_UNWRITTEN"); i++)
		std::this_thread::sleep_for(10ms);
	EXPECT_EQ(s.count("ended with DROP_UNWRITTEN, 2 packets written"), 1u);
	EXPECT_EQ(s.count("dropped at the sender's request (the disk refusing: "), 1u);
	EXPECT_EQ(s.count(" 2 packets (8 KiB) of t/c_0;"), 1u);
	EXPECT_EQ(c.poll_notices(1000), "the relay closed the connection");
	// Nothing more of it is written once the disk has room.
	std::this_thread::sleep_for(600ms);
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/c_0"), 2 * 4096u);
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/" + dir + "/t/index/c_0.idx"), 16u + 2 * 72);
}

TEST(RelayServer, SilentViewerIsClosed)
{
	ServerOptions o;
	o.hello_timeout_ms = 100;
	Server s(o);
	const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(connect_to(fd, s.server->live_port()));
	pollfd p{fd, POLLIN, 0};
	ASSERT_EQ(::poll(&p, 1, 5000), 1); // closed by the relay (the loop wakes at least once a second)
	char c;
	EXPECT_EQ(::recv(fd, &c, 1, 0), 0);
	::close(fd);
	for (int i = 0; i < 100 && !s.count("no CONNECT in time"); i++)
		std::this_thread::sleep_for(10ms);
	EXPECT_EQ(s.count("no CONNECT in time"), 1u);
	EXPECT_TRUE(viewer_answered(s.server->live_port())); // one that speaks is served
}

TEST(RelayServer, FastDiskSaysNothing)
{
	Server s(ServerOptions{});
	cr::RelayConnection c;
	std::vector<cr::Notice> notices;
	c.on_notice = [&](const cr::Notice &n) { notices.push_back(n); };
	ASSERT_EQ(c.connect("127.0.0.1", s.server->port()), "");
	ASSERT_EQ(c.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "fast"}), "");
	ASSERT_EQ(c.add_trace(1, "t"), "");
	ASSERT_EQ(c.add_stream(1, 1, "c_0"), "");
	const std::vector<uint8_t> bytes(1024, 1);
	for (int i = 0; i < 60; i++)
		ASSERT_EQ(c.send_packet(1, {.packet_size_bits = 8192, .content_size_bits = 8192}, bytes), "");
	uint64_t written = 0;
	ASSERT_EQ(c.sync(&written), "");
	EXPECT_EQ(written, 60u);
	EXPECT_TRUE(notices.empty());
	EXPECT_EQ(s.count("writes behind"), 0u);
}

// A writer thread that cannot start (no address space left for its stack)
// refuses that HELLO and closes that connection; before, the exception ended
// the relay and every session with it.
TEST(RelayServer, SessionWhoseWriterCannotStartIsRefusedAlone)
{
	if (kAddressSanitizer)
		GTEST_SKIP() << "ASan's shadow mappings leave no room for an address-space limit";
	Server s(ServerOptions{});
	cr::RelayConnection first, refused, later;
	ASSERT_EQ(first.connect("127.0.0.1", s.server->port()), "");
	ASSERT_EQ(first.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "first"}), "");
	ASSERT_EQ(refused.connect("127.0.0.1", s.server->port()), "");
	{
		SoftLimit as(RLIMIT_AS, address_space() + 2 * 1024 * 1024); // less than a thread's stack
		EXPECT_NE(refused.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "no"}),
		          "");
	}
	for (int i = 0; i < 100 && !s.count("could not start the session's writer"); i++)
		std::this_thread::sleep_for(10ms);
	EXPECT_EQ(s.count("could not start the session's writer"), 1u);
	// The relay goes on: the first session still writes, a new one is accepted.
	ASSERT_EQ(first.add_trace(1, "t"), "");
	ASSERT_EQ(first.add_stream(1, 1, "c_0"), "");
	ASSERT_EQ(first.send_packet(1, {.packet_size_bits = 8192, .content_size_bits = 8192},
	                            std::vector<uint8_t>(1024, 1)),
	          "");
	uint64_t written = 0;
	ASSERT_EQ(first.sync(&written), "");
	EXPECT_EQ(written, 1u);
	ASSERT_EQ(later.connect("127.0.0.1", s.server->port()), "");
	EXPECT_EQ(later.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "later"}), "");
}

// Every descriptor taken: accept fails (EMFILE) with the connection still
// pending. The relay stops watching that socket for a moment and says so
// once, instead of waking at once again and again (a CPU spun and a log
// line each time, before); with descriptors again, the connection that
// waited is served.
TEST(RelayServer, OutOfDescriptorsAtAcceptWaitsQuietly)
{
	Server s(ServerOptions{});
	const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(fd, 0);
	{
		int highest = fd;
		for (const auto &e : std::filesystem::directory_iterator("/proc/self/fd"))
			highest = std::max(highest, std::stoi(e.path().filename().string()));
		SoftLimit nofile(RLIMIT_NOFILE, static_cast<rlim_t>(highest) + 1);
		std::vector<int> filler; // the free numbers below the limit
		for (int d; (d = ::dup(fd)) >= 0;)
			filler.push_back(d);
		ASSERT_TRUE(connect_to(fd, s.server->live_port())); // pending: accept has no descriptor to give
		std::this_thread::sleep_for(1500ms);
		EXPECT_EQ(s.count("accept: "), 1u);
		EXPECT_EQ(s.count("Too many open files"), 1u);
		for (int d : filler)
			::close(d);
	}
	EXPECT_TRUE(answered(fd, 3000));
}

// A sender closed for a malformed frame while its writes wait on a slow disk
// still holds its queue and writer thread: it counts against
// max_connections until they are written, so a sender that is closed and
// reconnects again and again cannot pile them up. Before, it did not count.
TEST(RelayServer, ClosedSenderStillWritingCountsAgainstTheCap)
{
	std::atomic<bool> slow{true};
	ServerOptions o;
	o.max_connections = 1;
	o.before_write = [&] {
		while (slow)
			std::this_thread::sleep_for(1ms);
	};
	Server s(o);
	cr::RelayConnection bad;
	ASSERT_EQ(bad.connect("127.0.0.1", s.server->port()), "");
	ASSERT_EQ(bad.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "bad"}), "");
	ASSERT_EQ(bad.add_trace(1, "t"), "");
	ASSERT_EQ(bad.add_stream(1, 1, "c_0"), "");
	ASSERT_EQ(bad.send_packet(1, {.packet_size_bits = 8192, .content_size_bits = 8192},
	                          std::vector<uint8_t>(1024, 1)),
	          "");
	const std::vector<uint8_t> garbage(12, 'X');
	ASSERT_EQ(bad.send_raw(garbage), "");
	for (int i = 0; i < 200 && !s.count("malformed frame"); i++)
		std::this_thread::sleep_for(10ms);
	ASSERT_EQ(s.count("malformed frame"), 1u);

	cr::RelayConnection again; // while the bad one's frames wait for the disk
	ASSERT_EQ(again.connect("127.0.0.1", s.server->port()), "");
	EXPECT_NE(again.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "again"}), "");
	EXPECT_EQ(s.count("refused, already 0 senders and 1 closed ones still being written"), 1u);

	slow = false; // written: room again
	bool accepted = false;
	for (int i = 0; i < 100 && !accepted; i++) {
		cr::RelayConnection later;
		accepted =
			later.connect("127.0.0.1", s.server->port()).empty() &&
			later.hello({.creation_time_ns = 1, .live_period_ns = 0, .hostname = "h", .session = "later"})
				.empty();
		if (!accepted)
			std::this_thread::sleep_for(20ms);
	}
	EXPECT_TRUE(accepted);
	EXPECT_EQ(std::filesystem::file_size(s.tmp.path() + "/h/bad-19700101-000000/t/c_0"), 1024u);
}

// A viewer past CONNECT that sends nothing is closed after
// viewer_idle_timeout_ms (before, only a viewer without CONNECT was: 64
// silent ones held every viewer out, one attached held its session); one
// that keeps asking stays.
TEST(RelayServer, ViewerSilentAfterConnectIsClosed)
{
	ServerOptions o;
	o.viewer_idle_timeout_ms = 1500; // far above the talker's gaps, even on a loaded machine under ASan
	Server s(o);
	const int talker = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	const int silent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(connect_to(talker, s.server->live_port()));
	ASSERT_TRUE(connect_to(silent, s.server->live_port()));
	ASSERT_TRUE(connected(talker, 1000));
	ASSERT_TRUE(connected(silent, 1000));
	for (int i = 0; i < 35; i++) { // 3.5 s of LIST_SESSIONS, one every 100 ms
		std::this_thread::sleep_for(100ms);
		uint8_t count[4];
		ASSERT_TRUE(round_trip(talker, {.cmd = live::Command::list_sessions}, count, sizeof count, 1000)) << i;
	}
	pollfd p{silent, POLLIN, 0};
	ASSERT_EQ(::poll(&p, 1, 0), 1); // closed meanwhile
	char c;
	EXPECT_EQ(::recv(silent, &c, 1, 0), 0);
	EXPECT_EQ(s.count("nothing sent or read for 1500 ms"), 1u);
	::close(silent);
	::close(talker);
}

// The relay's end of the connection from local port `client` to `port`: the
// timer field of its /proc/net/tcp line ("02": keepalive), or "".
std::string relay_side_timer(uint16_t port, uint16_t client)
{
	char local[8], remote[8];
	std::snprintf(local, sizeof local, ":%04X", port);
	std::snprintf(remote, sizeof remote, ":%04X", client);
	std::ifstream in("/proc/net/tcp");
	std::string line;
	while (std::getline(in, line)) {
		std::istringstream fields(line);
		std::string sl, l, r, st, queues, timer;
		fields >> sl >> l >> r >> st >> queues >> timer;
		if (l.ends_with(local) && r.ends_with(remote))
			return timer.substr(0, 2);
	}
	return "";
}

// Accepted sockets, senders' and viewers', have TCP keepalive: a peer gone
// without a word is found out and closed.
TEST(RelayServer, AcceptedSocketsHaveKeepalive)
{
	Server s(ServerOptions{});
	for (const uint16_t port : {s.server->port(), s.server->live_port()}) {
		const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ASSERT_TRUE(connect_to(fd, port));
		sockaddr_in me{};
		socklen_t len = sizeof me;
		ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&me), &len), 0);
		std::string timer;
		for (int i = 0; i < 200 && (timer = relay_side_timer(port, ntohs(me.sin_port))) != "02"; i++)
			std::this_thread::sleep_for(10ms);
		EXPECT_EQ(timer, "02") << port;
		::close(fd);
	}
}

TEST(RelayServer, ViewerPortShowsTheSessionsOfTheViewersKey)
{
	namespace auth = control::auth;
	const auto key = [](const std::string &name, uint8_t fill) {
		return auth::Key{.name = name, .secret = auth::Secret(std::vector<uint8_t>(32, fill))};
	};
	auto keys = std::make_shared<auth::Keyring>();
	ASSERT_EQ(keys->add(key("alice", 1)), "");
	ASSERT_EQ(keys->add(key("bob", 2)), "");
	ServerOptions o;
	o.senders.keys = keys;
	Server s(o);
	ASSERT_NE(s.server->viewer_port(), 0);
	cr::RelayConnection alice;
	ASSERT_EQ(alice.connect("127.0.0.1", s.server->port(), 5000, {.key = key("alice", 1), .tls = {}}), "");
	ASSERT_EQ(alice.hello({.creation_time_ns = 1, .live_period_ns = 1000000, .hostname = "h", .session = "mine"}),
	          "");
	const auto listed = [&](const auth::Key &k) {
		live::LiveClient c;
		c.connect("127.0.0.1", s.server->viewer_port(), 5000, {.key = k, .tls = {}});
		std::vector<std::string> names;
		for (const live::SessionEntry &e : c.list_sessions())
			names.push_back(e.hostname + "/" + e.name);
		return names;
	};
	EXPECT_EQ(listed(key("alice", 1)), std::vector<std::string>{"h/mine"});
	EXPECT_EQ(listed(key("bob", 2)), std::vector<std::string>{});
	try {
		listed(key("alice", 3));
		ADD_FAILURE() << "a wrong secret was taken";
	} catch (const live::LiveError &e) {
		EXPECT_NE(std::string(e.what()).find("did not authenticate the key alice: "), std::string::npos)
			<< e.what();
	}
	EXPECT_EQ(s.count_once("authentication refused: a wrong proof for the key alice", 1), 1u);
	// A plain lttng-live viewer (babeltrace2's first bytes): closed at once, nothing listed.
	live::LiveClient plain;
	EXPECT_THROW(plain.connect("127.0.0.1", s.server->viewer_port(), 5000), live::LiveError);
	EXPECT_EQ(s.count_once("not an authenticated viewer", 1), 1u);
	EXPECT_EQ(s.count_once("authenticated as key alice", 2), 2u); // the sender, the first viewer
	// Frames out of turn, and more than the gate holds before admission: closed, each said.
	const auto closed_after = [&](const std::vector<uint8_t> &bytes) {
		const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		EXPECT_TRUE(connect_to(fd, s.server->viewer_port()));
		EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
		pollfd p{fd, POLLIN, 0};
		char c;
		const bool closed = ::poll(&p, 1, 5000) == 1 && ::recv(fd, &c, 1, 0) <= 0;
		::close(fd);
		return closed;
	};
	EXPECT_TRUE(closed_after(cr::encode(cr::Hello{.hostname = "h", .session = "s"})));
	EXPECT_EQ(s.count_once("HELLO where AUTH_REQUEST was due", 1), 1u);
	EXPECT_TRUE(closed_after(cr::encode(cr::AuthResponse{})));
	EXPECT_EQ(s.count_once("AUTH_RESPONSE before AUTH_REQUEST", 1), 1u);
	const std::vector<uint8_t> big = cr::encode(cr::Metadata{.trace_id = 1, .text = std::string(8000, 'x')});
	EXPECT_TRUE(closed_after(big));
	EXPECT_EQ(s.count_once("more than 4096 bytes before it was authenticated", 1), 1u);
}

} // namespace
} // namespace tracery::relay
