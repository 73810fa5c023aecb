// Unit tests of the lttng-live client's side (control/live_protocol.hpp's
// reply decoders, control/live_client.hpp): each reply part decoded from the
// bytes the relay's encoders make, and refused cut short, oversized, with a
// status or flag the protocol does not have, a count or length out of
// bounds, a string without its NUL; the URL's forms; and LiveClient against
// a scripted relay on loopback: a conversation, a reply cut by the relay
// going away, a relay that does not answer.
#include "control/live_client.hpp"
#include "control/live_protocol.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

namespace tracery::control::live {
namespace {

std::vector<uint8_t> index_bytes(const IndexReply &r)
{
	std::vector<uint8_t> out;
	append_index_reply(out, r);
	return out;
}

IndexReply ok_index()
{
	return {.offset = 4096,
	        .packet_size = 8 * 4096,
	        .content_size = 8 * 4000,
	        .timestamp_begin = 100,
	        .timestamp_end = 200,
	        .events_discarded = 3,
	        .stream_class_id = 0,
	        .status = IndexStatus::ok,
	        .flags = kFlagNewMetadata};
}

// The message of the ReplyError that decoding throws ("" if none).
std::string refusal(const std::function<void()> &decode)
{
	try {
		decode();
	} catch (const ReplyError &e) {
		return e.what();
	}
	return "";
}

TEST(LiveReplies, IndexRoundTrips)
{
	const IndexReply r = decode_index_reply(index_bytes(ok_index()));
	EXPECT_EQ(r.offset, 4096u);
	EXPECT_EQ(r.packet_size, 8u * 4096);
	EXPECT_EQ(r.content_size, 8u * 4000);
	EXPECT_EQ(r.timestamp_end, 200u);
	EXPECT_EQ(r.events_discarded, 3u);
	EXPECT_EQ(r.status, IndexStatus::ok);
	EXPECT_EQ(r.flags, kFlagNewMetadata);
	// Not OK: the sizes are not looked at.
	IndexReply inactive{.timestamp_end = 5000, .status = IndexStatus::inactive};
	EXPECT_EQ(decode_index_reply(index_bytes(inactive)).timestamp_end, 5000u);
}

TEST(LiveReplies, IndexRefusals)
{
	std::vector<uint8_t> b = index_bytes(ok_index());
	const auto cut = std::span<const uint8_t>(b).first(b.size() - 1);
	EXPECT_EQ(refusal([&] { decode_index_reply(cut); }), "the relay's GET_NEXT_INDEX reply: 63 bytes, not 64");
	b.push_back(0);
	EXPECT_NE(refusal([&] { decode_index_reply(b); }), "");
	const auto with = [](auto change) {
		IndexReply r = ok_index();
		change(r);
		return refusal([&] { decode_index_reply(index_bytes(r)); });
	};
	EXPECT_EQ(with([](IndexReply &r) { r.status = static_cast<IndexStatus>(7); }),
	          "the relay's GET_NEXT_INDEX reply: status 7, which the protocol does not have");
	EXPECT_EQ(with([](IndexReply &r) { r.status = static_cast<IndexStatus>(0); }),
	          "the relay's GET_NEXT_INDEX reply: status 0, which the protocol does not have");
	EXPECT_EQ(with([](IndexReply &r) { r.flags = 4; }),
	          "the relay's GET_NEXT_INDEX reply: flags 4, which the protocol does not have");
	EXPECT_EQ(with([](IndexReply &r) { r.packet_size = 8ull * (kMaxPacketRead + 1); }),
	          "the relay's GET_NEXT_INDEX reply: a packet of 134217736 bits with 32000 bits of content (whole "
	          "bytes, 1 to 16777216)");
	EXPECT_NE(with([](IndexReply &r) { r.packet_size = 0; }), "");
	EXPECT_NE(with([](IndexReply &r) { r.packet_size = 8 * 4096 + 1; }), "");
	EXPECT_NE(with([](IndexReply &r) { r.content_size = r.packet_size + 8; }), "");
	EXPECT_EQ(with([](IndexReply &r) { r.timestamp_end = 99; }),
	          "the relay's GET_NEXT_INDEX reply: a packet ending at 99, before its beginning at 100");
}

TEST(LiveReplies, ListsAndStrings)
{
	std::vector<uint8_t> b;
	ReplyWriter(b).u64(9).u32(200000).u32(0).u32(3).text("testhost", kHostNameSize).text("whole", kNameSize);
	const SessionEntry e = decode_session_entry(b);
	EXPECT_EQ(e.id, 9u);
	EXPECT_EQ(e.streams, 3u);
	EXPECT_EQ(e.hostname, "testhost");
	EXPECT_EQ(e.name, "whole");
	std::fill(b.begin() + 20, b.begin() + 20 + kHostNameSize, 'x');
	EXPECT_EQ(refusal([&] { decode_session_entry(b); }),
	          "the relay's LIST_SESSIONS reply: its host name has no NUL in its 64 bytes");

	std::vector<uint8_t> count;
	ReplyWriter(count).u32(kMaxListEntries + 1);
	EXPECT_EQ(refusal([&] { decode_session_count(count); }),
	          "the relay's LIST_SESSIONS reply: a count of 16385 (at most 16384)");

	std::vector<uint8_t> s;
	ReplyWriter(s).u64(5).u64(1).u32(1).text("ust/uid/1000/64-bit", kPathSize).text("metadata", kNameSize);
	const StreamEntry se = decode_stream_entry(s);
	EXPECT_TRUE(se.metadata);
	EXPECT_EQ(se.path, "ust/uid/1000/64-bit");
	EXPECT_EQ(se.name, "metadata");
	s[19] = 2;
	EXPECT_EQ(refusal([&] { decode_stream_entry(s); }), "the relay's stream list reply: a metadata flag of 2");

	std::vector<uint8_t> attach;
	ReplyWriter(attach).u32(static_cast<uint32_t>(AttachStatus::unknown)).u32(12);
	EXPECT_EQ(decode_attach_reply(attach).count, 0u); // a refusal lists nothing
	std::vector<uint8_t> streams;
	ReplyWriter(streams).u32(5).u32(0);
	EXPECT_EQ(refusal([&] { decode_new_streams_reply(streams); }),
	          "the relay's GET_NEW_STREAMS reply: status 5, which the protocol does not have");
}

TEST(LiveReplies, MetadataAndPacketLengths)
{
	const auto metadata = [](uint64_t length, MetadataStatus st) {
		std::vector<uint8_t> b;
		ReplyWriter(b).u64(length).u32(static_cast<uint32_t>(st));
		return b;
	};
	EXPECT_EQ(decode_metadata_reply(metadata(2433, MetadataStatus::ok)).length, 2433u);
	EXPECT_EQ(refusal([&] { decode_metadata_reply(metadata(kMaxMetadataChunk + 1, MetadataStatus::ok)); }),
	          "the relay's GET_METADATA reply: a length of 16777217 (1 to 16777216)");
	EXPECT_NE(refusal([&] { decode_metadata_reply(metadata(0, MetadataStatus::ok)); }), "");
	EXPECT_NE(refusal([&] { decode_metadata_reply(metadata(5, MetadataStatus::no_new)); }), "");

	const auto packet = [](uint32_t st, uint32_t length) {
		std::vector<uint8_t> b;
		ReplyWriter(b).u32(st).u32(length).u32(0);
		return b;
	};
	EXPECT_EQ(decode_packet_reply(packet(1, 4096), 4096).length, 4096u);
	EXPECT_EQ(refusal([&] { decode_packet_reply(packet(1, 4097), 4096); }),
	          "the relay's GET_PACKET reply: 4097 bytes of the 4096 asked");
	EXPECT_EQ(decode_packet_reply(packet(2, 77), 4096).length, 0u); // RETRY: no bytes follow
	EXPECT_NE(refusal([&] { decode_packet_reply(packet(9, 4096), 4096); }), "");
}

TEST(LiveReplies, Connect)
{
	std::vector<uint8_t> b;
	ReplyWriter(b).u64(3).u32(2).u32(15).u32(1);
	EXPECT_EQ(decode_connect_reply(b).minor, 15u);
	b[11] = 3; // major 3
	EXPECT_EQ(refusal([&] { decode_connect_reply(b); }), "the relay's CONNECT reply: protocol 3.15, not 2.x");
}

TEST(LiveUrl, Forms)
{
	LiveUrl u = parse_live_url("net://localhost/host/testhost/whole");
	EXPECT_EQ(u.host, "localhost");
	EXPECT_EQ(u.port, kDefaultPort);
	EXPECT_EQ(u.hostname, "testhost");
	EXPECT_EQ(u.session, "whole");
	u = parse_live_url("net://127.0.0.1:6000/host/h/s");
	EXPECT_EQ(u.host, "127.0.0.1");
	EXPECT_EQ(u.port, 6000);
	u = parse_live_url("net://[::1]:7000/host/h/s");
	EXPECT_EQ(u.host, "::1");
	EXPECT_EQ(u.port, 7000);
	for (const char *bad : {"http://x/host/h/s", "net:///host/h/s", "net://x", "net://x/host/h", "net://x/host/h/",
	                        "net://x:/host/h/s", "net://x:70000/host/h/s", "net://x:1a/host/h/s",
	                        "net://[::1/host/h/s", "net://x/session/h/s"})
		EXPECT_THROW(parse_live_url(bad), std::invalid_argument) << bad;
}

// A relay on loopback that answers each request with the next scripted
// reply (read whole first; an empty one: silence for a second), then closes.
class ScriptedRelay {
public:
	explicit ScriptedRelay(std::vector<std::vector<uint8_t>> replies) : replies_(std::move(replies))
	{
		listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof a;
		EXPECT_EQ(::bind(listen_, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
		EXPECT_EQ(::listen(listen_, 1), 0);
		::getsockname(listen_, reinterpret_cast<sockaddr *>(&a), &len);
		port_ = ntohs(a.sin_port);
		thread_ = std::thread([this] { serve(); });
	}
	~ScriptedRelay()
	{
		thread_.join();
		::close(listen_);
	}
	uint16_t port() const { return port_; }

private:
	void serve()
	{
		const int fd = ::accept(listen_, nullptr, nullptr);
		for (const std::vector<uint8_t> &reply : replies_) {
			uint8_t header[kHeaderSize];
			if (::recv(fd, header, sizeof header, MSG_WAITALL) != static_cast<ssize_t>(sizeof header))
				break;
			std::vector<uint8_t> payload(get_be64(header));
			if (!payload.empty())
				::recv(fd, payload.data(), payload.size(), MSG_WAITALL);
			if (reply.empty()) // silence, longer than the tests' deadline
				std::this_thread::sleep_for(std::chrono::seconds(1));
			else
				::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
		}
		::close(fd);
	}

	std::vector<std::vector<uint8_t>> replies_;
	int listen_ = -1;
	uint16_t port_ = 0;
	std::thread thread_;
};

std::vector<uint8_t> connect_reply()
{
	std::vector<uint8_t> b;
	ReplyWriter(b).u64(1).u32(2).u32(4).u32(1);
	return b;
}

TEST(LiveClient, Conversation)
{
	std::vector<uint8_t> sessions;
	ReplyWriter(sessions).u32(1).u64(4).u32(1000).u32(0).u32(1).text("h", kHostNameSize).text("s", kNameSize);
	std::vector<uint8_t> attach;
	ReplyWriter(attach).u32(1).u32(1).u64(8).u64(1).u32(1).text("ust", kPathSize).text("metadata", kNameSize);
	std::vector<uint8_t> metadata;
	ReplyWriter(metadata).u64(5).u32(1);
	metadata.insert(metadata.end(), {'/', '*', ' ', '*', '/'});
	std::vector<uint8_t> no_new;
	ReplyWriter(no_new).u64(0).u32(2);
	std::vector<uint8_t> packet;
	ReplyWriter(packet).u32(1).u32(4096).u32(0);
	packet.resize(packet.size() + 4096, 0xab);
	std::vector<uint8_t> created{0, 0, 0, 1};
	ScriptedRelay relay(
		{connect_reply(), sessions, created, attach, metadata, no_new, index_bytes(ok_index()), packet});
	LiveClient c;
	c.connect("127.0.0.1", relay.port(), 5000);
	const std::vector<SessionEntry> s = c.list_sessions();
	ASSERT_EQ(s.size(), 1u);
	EXPECT_EQ(s[0].name, "s");
	c.create_session();
	const std::vector<StreamEntry> streams = c.attach(4, kSeekBeginning);
	ASSERT_EQ(streams.size(), 1u);
	EXPECT_TRUE(streams[0].metadata);
	std::string text;
	EXPECT_EQ(c.metadata(8, &text, 1024), MetadataStatus::ok);
	EXPECT_EQ(c.metadata(8, &text, 1024), MetadataStatus::no_new);
	EXPECT_EQ(text, "/* */");
	const IndexReply index = c.next_index(9);
	std::vector<uint8_t> bytes;
	EXPECT_EQ(c.packet(9, index, &bytes).status, PacketStatus::ok);
	EXPECT_EQ(bytes, std::vector<uint8_t>(4096, 0xab));
}

TEST(LiveClient, ReplyCutByTheRelayGoingAway)
{
	std::vector<uint8_t> packet;
	ReplyWriter(packet).u32(1).u32(4096).u32(0);
	packet.resize(packet.size() + 100, 0); // then the relay closes
	ScriptedRelay relay({connect_reply(), index_bytes(ok_index()), packet});
	LiveClient c;
	c.connect("127.0.0.1", relay.port(), 5000);
	const IndexReply index = c.next_index(9);
	std::vector<uint8_t> bytes;
	try {
		c.packet(9, index, &bytes);
		FAIL() << "no error";
	} catch (const LiveError &e) {
		EXPECT_EQ(std::string(e.what()),
		          "the relay 127.0.0.1:" + std::to_string(relay.port()) +
		                  " went away: connection closed after 100 of the 4096 bytes of its GET_PACKET reply");
	}
}

TEST(LiveClient, OversizedMetadataAndSilence)
{
	std::vector<uint8_t> metadata;
	ReplyWriter(metadata).u64(2000).u32(1);
	ScriptedRelay relay({connect_reply(), metadata, {}});
	LiveClient c;
	c.connect("127.0.0.1", relay.port(), 300);
	std::string text(100, ' ');
	EXPECT_THROW(c.metadata(8, &text, 1024), LiveError); // 100 + 2000 > 1024
	// The relay's silence: the reply's deadline.
	try {
		c.next_index(9);
		FAIL() << "no error";
	} catch (const LiveError &e) {
		EXPECT_NE(std::string(e.what()).find("did not answer GET_NEXT_INDEX within"), std::string::npos)
			<< e.what();
	}
}

} // namespace
} // namespace tracery::control::live
