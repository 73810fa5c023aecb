// Unit tests of the control protocol: framing with descriptors, version and
// garbage rejection, the incremental frame decoder fed in pieces, and the
// program limit against a hello of 10,000 events.
#include "control/wire.hpp"

#include "event/schema.hpp"

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
	ASSERT_TRUE(send_message(p.a.get(), Kind::program, {{"type", "x"}, {"n", 42}}, fds));
	ASSERT_TRUE(send_message(p.a.get(), Kind::program, {{"type", "y"}}));
	Message m;
	std::string why;
	ASSERT_EQ(recv_message(p.b.get(), Kind::program, m, &why), RecvStatus::ok) << why;
	EXPECT_EQ(m.body["n"], 42);
	ASSERT_EQ(m.fds.size(), 2u);
	ASSERT_EQ(write(m.fds[0].get(), "ok", 2), 2); // the received write end feeds our read end
	char buf[2];
	ASSERT_EQ(read(r.get(), buf, 2), 2);
	EXPECT_EQ(memcmp(buf, "ok", 2), 0);
	ASSERT_EQ(recv_message(p.b.get(), Kind::program, m, &why), RecvStatus::ok);
	EXPECT_EQ(m.body["type"], "y");
	EXPECT_TRUE(m.fds.empty());
	p.a.reset();
	EXPECT_EQ(recv_message(p.b.get(), Kind::program, m, &why), RecvStatus::eof);
}

TEST(Wire, RejectsOtherVersionsAndGarbage)
{
	Pair p;
	const uint32_t header[3] = {kMagic, 1, 2}; // version 1, reserved 0
	ASSERT_EQ(write(p.a.get(), header, sizeof header), static_cast<ssize_t>(sizeof header));
	Message m;
	std::string why;
	EXPECT_EQ(recv_message(p.b.get(), Kind::command, m, &why), RecvStatus::error);
	EXPECT_EQ(why, "protocol version 1, expected " + std::to_string(kProtocolVersion) +
	                       ": traceryd, tracery and libtracery must come from the same release");

	Pair q;
	ASSERT_EQ(write(q.a.get(), "GET / HTTP/1.0\r\n", 16), 16);
	EXPECT_EQ(recv_message(q.b.get(), Kind::command, m, &why), RecvStatus::error);
	EXPECT_EQ(why, "not a tracery control message (bad magic)");

	Pair r; // a program's message where a command's reply belongs
	ASSERT_TRUE(send_message(r.a.get(), Kind::program, {{"type", "x"}}));
	EXPECT_EQ(recv_message(r.b.get(), Kind::command, m, &why), RecvStatus::error);
	EXPECT_EQ(why, "a program message on a command connection");
}

// Feeds `bytes` to a decoder in pieces of the sizes in `cuts` (then the
// rest), as recv() may deliver them, and collects the messages.
struct Fed {
	std::vector<Message> messages;
	FrameDecoder::State state;
	std::string error;
};
Fed feed(FrameDecoder &d, const std::string &bytes, std::vector<size_t> cuts)
{
	Fed out;
	size_t at = 0, cut = 0;
	while (at < bytes.size() && d.state() != FrameDecoder::State::error) {
		std::span<char> space = d.space();
		EXPECT_FALSE(space.empty());
		size_t n = std::min(space.size(), bytes.size() - at);
		if (cut < cuts.size())
			n = std::min(n, cuts[cut++]);
		memcpy(space.data(), bytes.data() + at, n);
		at += n;
		if (d.received(n) == FrameDecoder::State::complete) {
			Message m;
			if (parse_frame(d.take(), m, &out.error))
				out.messages.push_back(std::move(m));
		}
	}
	out.state = d.state();
	if (out.state == FrameDecoder::State::error)
		out.error = d.error();
	return out;
}

TEST(FrameDecoder, AssemblesFramesSplitAnywhere)
{
	const std::string a = encode_frame(Kind::command, R"({"cmd":"list"})");
	const std::string b = encode_frame(Kind::command, R"({"cmd":"status","session":"s"})");
	const std::string both = a + b;
	// Every split of the two frames into three pieces: in the header, at its
	// end, in the body, across the frames.
	for (size_t i = 1; i < both.size(); i++)
		for (size_t j = 1; i + j < both.size(); j += 7) {
			FrameDecoder d(kDaemonLimits);
			const Fed fed = feed(d, both, {i, j, 1, 1, 3});
			ASSERT_EQ(fed.messages.size(), 2u) << i << " " << j << ": " << fed.error;
			EXPECT_EQ(fed.messages[0].body["cmd"], "list");
			EXPECT_EQ(fed.messages[1].body["session"], "s");
			EXPECT_TRUE(d.at_boundary());
		}
}

TEST(FrameDecoder, SaysWhatComesOnceTheHeaderIsWhole)
{
	FrameDecoder d(kDaemonLimits);
	const std::string frame = encode_frame(Kind::program, R"({"type":"hello"})");
	EXPECT_EQ(d.space().size(), kHeaderSize);
	memcpy(d.space().data(), frame.data(), 5);
	EXPECT_EQ(d.received(5), FrameDecoder::State::header);
	EXPECT_EQ(d.space().size(), kHeaderSize - 5); // never past the header
	memcpy(d.space().data(), frame.data() + 5, kHeaderSize - 5);
	EXPECT_EQ(d.received(kHeaderSize - 5), FrameDecoder::State::body);
	EXPECT_EQ(d.kind(), Kind::program);
	EXPECT_EQ(d.length(), frame.size() - kHeaderSize);
	EXPECT_EQ(d.space().size(), frame.size() - kHeaderSize); // never past the frame
	EXPECT_TRUE(d.ended());                                  // a close now cuts a message
	EXPECT_EQ(d.error(), "the connection closed after 0 of the 16 bytes of a message");
}

TEST(FrameDecoder, RefusesBadHeadersFromTheirTwelveBytes)
{
	struct Case {
		std::string bytes;
		std::string error;
		std::optional<Kind> kind; // a header of this version naming a kind
	};
	auto header = [](uint32_t magic, uint16_t version, uint16_t kind, uint32_t length) {
		std::string h(kHeaderSize, '\0');
		memcpy(h.data(), &magic, 4);
		memcpy(h.data() + 4, &version, 2);
		memcpy(h.data() + 6, &kind, 2);
		memcpy(h.data() + 8, &length, 4);
		return h;
	};
	const uint16_t v = kProtocolVersion;
	const Case cases[] = {
		{header(0x1234, v, 1, 2), "not a tracery control message (bad magic)", std::nullopt},
		{header(kMagic, v + 1, 1, 2),
	         "protocol version " + std::to_string(v + 1) + ", expected " + std::to_string(v) +
	                 ": traceryd, tracery and libtracery must come from the same release",
	         std::nullopt},
		{header(kMagic, v, 0, 2), "unknown connection kind 0 (1: a command, 2: a program)", std::nullopt},
		{header(kMagic, v, 1, (1u << 20) + 1),
	         "a command message of 1048577 bytes is over the limit of 1048576 bytes", Kind::command},
		{header(kMagic, v, 2, (16u << 20) + 1),
	         "a program message of 16777217 bytes is over the limit of 16777216 bytes", Kind::program},
	};
	for (const Case &c : cases) {
		EXPECT_EQ(header_kind(c.bytes.data()), c.kind) << c.error; // what a refusal at accept answers in
		FrameDecoder d(kDaemonLimits);
		const Fed fed = feed(d, c.bytes + std::string(64, 'x'), {3}); // the body is never asked for
		EXPECT_EQ(fed.state, FrameDecoder::State::error);
		EXPECT_EQ(fed.error, c.error);
		EXPECT_TRUE(d.space().empty());
		EXPECT_LE(d.buffered(), 64u); // nothing allocated for the claimed body
	}
	// A command's largest body is accepted, and a program's.
	FrameDecoder d(kDaemonLimits);
	EXPECT_EQ(feed(d, header(kMagic, v, 1, 1u << 20), {}).state, FrameDecoder::State::body);
	FrameDecoder e(kDaemonLimits);
	EXPECT_EQ(feed(e, header(kMagic, v, 2, 16u << 20), {}).state, FrameDecoder::State::body);
}

TEST(FrameDecoder, KeepsTheKindOfTheConnection)
{
	FrameDecoder d(kDaemonLimits);
	d.expect(Kind::program);
	const Fed fed = feed(d, encode_frame(Kind::program, "{}") + encode_frame(Kind::command, "{}"), {});
	EXPECT_EQ(fed.messages.size(), 1u);
	EXPECT_EQ(fed.error, "a command message on a program connection");
}

TEST(FrameDecoder, RefusesBodiesThatAreNotObjects)
{
	for (const char *body : {"[1]", "{\"a\":", "\"x\"", "\xff"}) {
		FrameDecoder d(kDaemonLimits);
		const Fed fed = feed(d, encode_frame(Kind::command, body), {});
		EXPECT_TRUE(fed.messages.empty()) << body;
		EXPECT_EQ(fed.error, "malformed message body (not a JSON object)") << body;
		EXPECT_TRUE(d.at_boundary()); // the frame was whole: the next one could follow
	}
}

TEST(FrameDecoder, GrowsWithWhatArrivesNotWithWhatIsClaimed)
{
	const std::string body = R"({"pad":")" + std::string(3u << 20, 'p') + R"("})";
	FrameDecoder d(kDaemonLimits);
	const std::string frame = encode_frame(Kind::program, body);
	size_t at = 0;
	while (d.state() != FrameDecoder::State::complete) {
		const std::span<char> space = d.space();
		ASSERT_FALSE(space.empty());
		const size_t n = std::min<size_t>(space.size(), 4096);
		memcpy(space.data(), frame.data() + at, n);
		at += n;
		d.received(n);
		EXPECT_LE(d.buffered(), std::max<size_t>(2 * (at - std::min(at, kHeaderSize)), 64 * 1024) + 64)
			<< "after " << at << " bytes";
	}
	Message m;
	std::string why;
	ASSERT_TRUE(parse_frame(d.take(), m, &why)) << why;
	EXPECT_EQ(m.body["pad"].get<std::string>().size(), 3u << 20);
	EXPECT_LT(d.buffered(), 64u); // given back once taken
}

TEST(FrameDecoder, DescriptorsComeWithTheFirstByteOnly)
{
	auto pipe_fd = [] {
		int p[2];
		EXPECT_EQ(pipe(p), 0);
		close(p[1]);
		std::vector<base::Fd> fds;
		fds.emplace_back(p[0]);
		return fds;
	};
	const std::string frame = encode_frame(Kind::program, R"({"type":"start_session"})");
	FrameDecoder d(kPeerLimits);
	memcpy(d.space().data(), frame.data(), 4);
	d.received(4, pipe_fd());
	const Fed fed = feed(d, frame.substr(4), {2, 9});
	ASSERT_EQ(fed.messages.size(), 1u) << fed.error;
	EXPECT_EQ(fed.messages[0].fds.size(), 1u);

	FrameDecoder late(kPeerLimits);
	memcpy(late.space().data(), frame.data(), 4);
	late.received(4);
	memcpy(late.space().data(), frame.data() + 4, 4);
	EXPECT_EQ(late.received(4, pipe_fd()), FrameDecoder::State::error);
	EXPECT_EQ(late.error(), "descriptors in the middle of a message");

	FrameDecoder daemon(kDaemonLimits); // the daemon takes none
	memcpy(daemon.space().data(), frame.data(), 4);
	EXPECT_EQ(daemon.received(4, pipe_fd()), FrameDecoder::State::error);
	EXPECT_EQ(daemon.error(), "descriptors are not accepted here");

	FrameDecoder cut(kPeerLimits); // the kernel dropped some (MSG_CTRUNC)
	memcpy(cut.space().data(), frame.data(), 4);
	EXPECT_EQ(cut.received(4, pipe_fd(), true), FrameDecoder::State::error);
	EXPECT_EQ(cut.error(), "more than 64 descriptors with a message");
}

TEST(FrameDecoder, EndOfStreamBetweenFramesIsNotAnError)
{
	FrameDecoder d(kDaemonLimits);
	EXPECT_FALSE(d.ended());
	EXPECT_EQ(d.state(), FrameDecoder::State::header);
	memcpy(d.space().data(), "TRC", 3);
	d.received(3);
	EXPECT_TRUE(d.ended());
	EXPECT_EQ(d.error(), "the connection closed in the middle of a message header");
}

// The program limit holds a hello of 10,000 events of 8 fields (an enum of
// 4 labels, a string, a sequence, five integers) with names as long as real
// ones (5.2 MB), three times over.
TEST(Limits, AProgramWithTenThousandEventsFitsWithMargin)
{
	const tracery_enum_entry entries[] = {
		{"state_idle", 0, 0}, {"state_running", 1, 1}, {"state_blocked", 2, 2}, {"state_zombie", 3, 100}};
	const tracery_enum_desc state{"task_state", entries, 4};
	const tracery_field_desc fields[] = {
		{"request_id", TRACERY_TYPE_U64, 0, 0, nullptr},
		{"path_name", TRACERY_TYPE_STRING, 0, 0, nullptr},
		{"payload_len", TRACERY_TYPE_U32, 0, 0, nullptr},
		{"payload", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U8, 0, nullptr},
		{"cpu_id", TRACERY_TYPE_U16, 0, 0, nullptr},
		{"state", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &state},
		{"error_code", TRACERY_TYPE_S32, 0, 0, nullptr},
		{"latency_ns", TRACERY_TYPE_S64, 0, 0, nullptr},
	};
	json events = json::array();
	std::vector<std::string> names;
	for (int i = 0; i < 10000; i++)
		names.push_back("subsystem_component_operation_" + std::to_string(i));
	for (const std::string &name : names) {
		tracery_event_desc desc{};
		desc.provider = "my_application_provider";
		desc.name = name.c_str();
		desc.fields = fields;
		desc.nr_fields = 8;
		events.push_back(event::schema_of(desc));
	}
	const json hello = {{"type", "hello"}, {"procname", "a_program_name"}, {"events", events}};
	const size_t size = hello.dump().size();
	EXPECT_LT(size * 3, kDaemonLimits.program) << size;
	EXPECT_GT(size, 4u << 20) << "the events are not as large as real ones"; // not a trivially small hello
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
