// Unit tests of the relay protocol (control/relay_protocol.hpp): the exact
// bytes of a frame, every message round-tripping whole and one byte at a
// time, and each refusal the decoder owes the relay (header, lengths, names,
// paths, packet sizes), with the reason it gives.
#include "control/relay_protocol.hpp"

#include <gtest/gtest.h>

namespace tracery::control::relay {
namespace {

// 32 bytes: first, first + 1, ...
std::array<uint8_t, 32> nonce(uint8_t first)
{
	std::array<uint8_t, 32> n;
	for (size_t i = 0; i < n.size(); i++)
		n[i] = static_cast<uint8_t>(first + i);
	return n;
}

std::vector<Frame> every_message()
{
	Packet p;
	p.stream_id = 7;
	p.index = {.packet_size_bits = 64,
	           .content_size_bits = 40,
	           .timestamp_begin = 1000,
	           .timestamp_end = 2000,
	           .events_discarded = 3,
	           .stream_class_id = 1,
	           .stream_instance_id = 2,
	           .packet_seq_num = 9};
	p.bytes = {1, 2, 3, 4, 5, 6, 7, 8};
	return {Hello{.major = 1,
	              .minor = 0,
	              .creation_time_ns = 1764000000123456789ull,
	              .live_period_ns = 1000000000,
	              .hostname = "host-1",
	              .session = "my_session"},
	        Hello{.major = 1,
	              .minor = 1,
	              .creation_time_ns = 1,
	              .live_period_ns = 500000000,
	              .hostname = "h",
	              .session = "public",
	              .flags = kHelloPublicLive},
	        HelloReply{.accepted = true, .text = "host-1/my_session-20251124-160000"},
	        HelloReply{.accepted = false, .text = "too many sessions"},
	        Trace{.id = 1, .path = "ust/uid/1000/64-bit"},
	        Metadata{.trace_id = 1, .text = "/* CTF 1.8 */\ntrace { major = 1; };\n"},
	        Stream{.id = 7, .trace_id = 1, .file = "chan_0"},
	        p,
	        Beacon{.stream_id = 7, .timestamp = 0xfedcba9876543210ull},
	        CloseStream{.stream_id = 7},
	        Bye{},
	        Sync{.token = 0x0102030405060708ull},
	        SyncReply{.token = 42, .packets_written = 1234567},
	        Notice{.kind = NoticeKind::writes_behind, .text = "writes behind by 64 MiB"},
	        Notice{.kind = NoticeKind::caught_up, .text = ""},
	        AuthRequest{.method = kAuthMethod, .request = {.key_name = "host-1", .client_nonce = nonce(1)}},
	        AuthChallenge{.challenge = {.server_nonce = nonce(2)}},
	        AuthResponse{.response = {.client_proof = nonce(3)}},
	        AuthResult{.result = {.accepted = true, .server_proof = nonce(4)}, .text = ""},
	        AuthResult{.result = {}, .text = "authentication refused"},
	        ArchiveTrace{.trace_id = 2, .archive = "20261129T001139+0000-20261129T001239+0000-1"},
	        StreamFiles{.stream_id = 7, .size = 65536, .count = 3}};
}

std::vector<Frame> decode_all(const std::vector<uint8_t> &bytes, size_t piece, std::string *error = nullptr)
{
	Decoder d;
	std::vector<Frame> out;
	for (size_t at = 0; at < bytes.size(); at += piece) {
		d.feed(std::span<const uint8_t>(bytes).subspan(at, std::min(piece, bytes.size() - at)));
		Frame f;
		Decoder::Status st;
		while ((st = d.next(f)) == Decoder::Status::frame)
			out.push_back(f);
		if (st == Decoder::Status::error) {
			if (error)
				*error = d.error();
			return out;
		}
	}
	EXPECT_EQ(d.buffered(), 0u);
	return out;
}

// The one error decoding these bytes gives ("" if none).
std::string error_of(const std::vector<uint8_t> &bytes)
{
	std::string e;
	decode_all(bytes, bytes.size() ? bytes.size() : 1, &e);
	return e;
}

TEST(RelayProtocol, HeaderBytes)
{
	const auto b = encode(Beacon{.stream_id = 0x01020304, .timestamp = 0x1112131415161718ull});
	ASSERT_EQ(b.size(), kHeaderSize + 12);
	EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "TRLY");
	EXPECT_EQ(b[4], 1);
	EXPECT_EQ(b[5], 0); // version 1, little-endian
	EXPECT_EQ(b[6], 7);
	EXPECT_EQ(b[7], 0); // BEACON
	EXPECT_EQ(b[8], 12);
	EXPECT_EQ(b[9] | b[10] | b[11], 0); // body length 12
	EXPECT_EQ(b[12], 0x04);
	EXPECT_EQ(b[15], 0x01);
	EXPECT_EQ(b[16], 0x18);
	EXPECT_EQ(b[23], 0x11);
}

TEST(RelayProtocol, PacketBodyLayout)
{
	const auto frames = every_message();
	const auto b = encode(frames[7]);
	ASSERT_EQ(b.size(), kHeaderSize + kPacketFixed + 8);
	// stream id, then packet size 64 bits, content size 40 bits
	EXPECT_EQ(b[12], 7);
	EXPECT_EQ(b[16], 64);
	EXPECT_EQ(b[24], 40);
	EXPECT_EQ(b[kHeaderSize + 4 + 7 * 8], 9); // packet seq num, the last index field
	EXPECT_EQ(b[kHeaderSize + kPacketFixed], 1);
}

TEST(RelayProtocol, PacketHeadThenBytesIsThePacketFrame)
{
	const auto p = std::get<Packet>(every_message()[7]);
	std::vector<uint8_t> b;
	append_packet_head(b, p.stream_id, p.index, p.bytes.size());
	EXPECT_EQ(b.size(), kHeaderSize + kPacketFixed);
	b.insert(b.end(), p.bytes.begin(), p.bytes.end());
	EXPECT_EQ(b, encode(p));
}

TEST(RelayProtocol, EveryMessageRoundTripsWholeAndByteByByte)
{
	const auto frames = every_message();
	std::vector<uint8_t> bytes;
	for (const auto &f : frames) {
		EXPECT_EQ(frame_error(f), "") << type_name(static_cast<uint16_t>(type_of(f)));
		append_frame(bytes, f);
	}
	for (size_t piece : {bytes.size(), size_t{1}, size_t{5}, size_t{13}}) {
		const auto back = decode_all(bytes, piece);
		ASSERT_EQ(back.size(), frames.size()) << piece;
		for (size_t i = 0; i < frames.size(); i++)
			EXPECT_TRUE(back[i] == frames[i]) << "frame " << i << ", pieces of " << piece;
	}
}

TEST(RelayProtocol, HeaderRefusals)
{
	auto b = encode(Bye{});
	b[0] = 'X';
	EXPECT_EQ(error_of(b), "bad magic (not a relay protocol frame)");
	b = encode(Bye{});
	b[4] = 2;
	EXPECT_EQ(error_of(b), "protocol version 2, this relay speaks 1");
	b = encode(Bye{});
	b[6] = static_cast<uint8_t>(kLastType + 1);
	EXPECT_EQ(error_of(b), "unknown frame type " + std::to_string(kLastType + 1));
	b[6] = 0;
	EXPECT_EQ(error_of(b), "unknown frame type 0");
	// An oversized length is refused from the header alone, before any body.
	b = encode(Bye{});
	b[8] = 0x01;
	b[9] = 0x10;
	b[10] = 0x00;
	b[11] = 0x01; // 16 MiB + 4097
	EXPECT_EQ(error_of(b), "BYE: body length 16781313 over the maximum 16781312");
	// A bad magic is seen in the first four bytes.
	Decoder d;
	const uint8_t junk[] = {'G', 'E', 'T', ' '};
	d.feed(junk);
	Frame f;
	EXPECT_EQ(d.next(f), Decoder::Status::error);
	d.feed(encode(Bye{}));
	EXPECT_EQ(d.next(f), Decoder::Status::error); // stays refused
}

TEST(RelayProtocol, BodyLengths)
{
	auto b = encode(CloseStream{.stream_id = 1});
	b.push_back(0);
	b[8] = 5;
	EXPECT_EQ(error_of(b), "CLOSE_STREAM: 1 bytes after the last field");
	b = encode(Beacon{.stream_id = 1, .timestamp = 2});
	b.pop_back();
	b[8] = 11;
	EXPECT_EQ(error_of(b), "BEACON: body too short for its fields");
	// A string that runs past the body.
	b = encode(Trace{.id = 1, .path = "kernel"});
	b[16] = 200;
	EXPECT_EQ(error_of(b), "TRACE: body too short for its fields");
	b = encode(Bye{});
	b.push_back(0);
	b[8] = 1;
	EXPECT_EQ(error_of(b), "BYE: 1 bytes after the last field");
	EXPECT_EQ(frame_error(Metadata{.trace_id = 1, .text = ""}), "METADATA: no bytes to append");
	b = encode(SyncReply{.token = 1, .packets_written = 2});
	b.pop_back();
	b[8] = 15;
	EXPECT_EQ(error_of(b), "SYNC_REPLY: body too short for its fields");
	b = encode(Notice{.kind = NoticeKind::caught_up, .text = "x"});
	b[kHeaderSize] = kLastNoticeKind + 1;
	EXPECT_EQ(error_of(b), "NOTICE: unknown kind 5");
	b[kHeaderSize] = 0;
	EXPECT_EQ(error_of(b), "NOTICE: unknown kind 0");
	EXPECT_EQ(frame_error(Notice{.kind = NoticeKind::writes_behind, .text = std::string(4097, 'x')}),
	          "NOTICE: text longer than 4096 bytes");
}

TEST(RelayProtocol, HelloFlagsFromMinorOne)
{
	// Minor 0: the body ends with the session name; minor 1 appends the flags.
	Hello h{.minor = 0, .creation_time_ns = 1, .live_period_ns = 2, .hostname = "h", .session = "s"};
	const auto old = encode(h);
	EXPECT_EQ(old.size(), kHeaderSize + 2 + 2 + 8 + 8 + 3 + 3);
	h.minor = 1;
	h.flags = kHelloPublicLive;
	auto b = encode(h);
	ASSERT_EQ(b.size(), old.size() + 4);
	EXPECT_EQ(b[old.size()], 1);
	EXPECT_EQ(b[old.size() + 1] | b[old.size() + 2] | b[old.size() + 3], 0);
	// A minor 1 HELLO without its flags, and flags this relay does not know.
	auto cut = old;
	cut[kHeaderSize + 2] = 1;
	EXPECT_EQ(error_of(cut), "HELLO: body too short for its fields");
	b[old.size()] = 3;
	EXPECT_EQ(error_of(b), "HELLO: flags 3 has bits this relay does not know (only 1, public live)");
	b[old.size()] = 0;
	b[old.size() + 3] = 0x80;
	EXPECT_EQ(error_of(b), "HELLO: flags 2147483648 has bits this relay does not know (only 1, public live)");
}

TEST(RelayProtocol, AuthFrames)
{
	// The exact bytes of AUTH_REQUEST: method, the key name as a string, the nonce.
	const auto b = encode(AuthRequest{.request = {.key_name = "k1", .client_nonce = nonce(9)}});
	ASSERT_EQ(b.size(), kHeaderSize + 1 + 2 + 2 + 32);
	EXPECT_EQ(b[6], 13);
	EXPECT_EQ(b[8], 37);
	EXPECT_EQ(b[kHeaderSize], 1);
	EXPECT_EQ(b[kHeaderSize + 1], 2);
	EXPECT_EQ(b[kHeaderSize + 3], 'k');
	EXPECT_EQ(b[kHeaderSize + 5], 9);
	EXPECT_EQ(b.back(), 9 + 31);
	EXPECT_EQ(encode(AuthChallenge{}).size(), kHeaderSize + 32);
	EXPECT_EQ(encode(AuthResponse{}).size(), kHeaderSize + 32);
	EXPECT_EQ(encode(AuthResult{.result = {}, .text = "no"}).size(), kHeaderSize + 1 + 32 + 2 + 2);

	EXPECT_EQ(frame_error(AuthRequest{.method = 2, .request = {.key_name = "k1"}}),
	          "AUTH_REQUEST: unknown method 2");
	for (const std::string &bad : std::vector<std::string>{"", ".k", "a/b", std::string(65, 'a')})
		EXPECT_EQ(frame_error(AuthRequest{.request = {.key_name = bad}}),
		          "AUTH_REQUEST: the key name is not a valid key name")
			<< bad;
	EXPECT_EQ(frame_error(AuthRequest{.request = {.key_name = std::string(64, 'a')}}), "");
	auto cut = encode(AuthChallenge{});
	cut.pop_back();
	cut[8] = 31;
	EXPECT_EQ(error_of(cut), "AUTH_CHALLENGE: body too short for its fields");
	auto longer = encode(AuthResponse{});
	longer.push_back(0);
	longer[8] = 33;
	EXPECT_EQ(error_of(longer), "AUTH_RESPONSE: 1 bytes after the last field");
	EXPECT_EQ(frame_error(AuthResult{.result = {.accepted = false, .server_proof = nonce(1)}, .text = ""}),
	          "AUTH_RESULT: a refusal with a proof");
	EXPECT_EQ(frame_error(AuthResult{.result = {.accepted = true}, .text = std::string(4097, 'x')}),
	          "AUTH_RESULT: text longer than 4096 bytes");
	auto status = encode(AuthResult{});
	status[kHeaderSize] = 2;
	EXPECT_EQ(error_of(status), "AUTH_RESULT: status 2 is neither 0 nor 1");
}

TEST(RelayProtocol, NamesAndPaths)
{
	EXPECT_TRUE(valid_relative_path("ust/uid/1000/64-bit"));
	EXPECT_TRUE(valid_relative_path("kernel"));
	for (const char *bad : {"", "/etc", "ust/../../etc", "..", "a//b", "a/", "a/./b", "a/.hidden", "a b", "a\\b",
	                        "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q"})
		EXPECT_FALSE(valid_relative_path(bad)) << bad;
	EXPECT_TRUE(valid_relative_path("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p"));
	EXPECT_FALSE(valid_name(std::string(256, 'a')));
	EXPECT_TRUE(valid_name(std::string(255, 'a')));
	EXPECT_FALSE(valid_name(std::string("a\0b", 3)));
	EXPECT_EQ(frame_error(Trace{.id = 1, .path = "../x"}), "TRACE: the path is not a relative path of valid names");
	EXPECT_EQ(frame_error(Stream{.id = 1, .trace_id = 1, .file = "a/b"}),
	          "STREAM: the file name is not a valid name");
	EXPECT_EQ(frame_error(Hello{.hostname = "..", .session = "s"}), "HELLO: the hostname is not a valid name");
	EXPECT_EQ(frame_error(Hello{.hostname = "h", .session = ""}), "HELLO: the session name is not a valid name");
	EXPECT_EQ(frame_error(HelloReply{.accepted = false, .text = std::string(4097, 'x')}),
	          "HELLO_REPLY: text longer than 4096 bytes");
	// A chunk's directory, named with its UTC offset as LTTng's are.
	EXPECT_TRUE(valid_relative_path("20261129T001139+0100-1/ust"));
	EXPECT_EQ(frame_error(ArchiveTrace{.trace_id = 1, .archive = "a/b"}),
	          "ARCHIVE_TRACE: the archive's name is not a valid name");
	EXPECT_EQ(frame_error(ArchiveTrace{.trace_id = 1, .archive = ".."}),
	          "ARCHIVE_TRACE: the archive's name is not a valid name");
	EXPECT_EQ(frame_error(StreamFiles{.stream_id = 1, .size = 0, .count = 2}), "STREAM_FILES: a file size of 0");
}

TEST(RelayProtocol, PacketSizes)
{
	auto p = std::get<Packet>(every_message()[7]);
	p.index.packet_size_bits = 63;
	EXPECT_EQ(frame_error(p), "PACKET: packet size 63 bits is not a positive whole number of bytes");
	p.index.packet_size_bits = 0;
	EXPECT_EQ(frame_error(p), "PACKET: packet size 0 bits is not a positive whole number of bytes");
	p.index.packet_size_bits = 64;
	p.index.content_size_bits = 72;
	EXPECT_EQ(frame_error(p), "PACKET: content size exceeds packet size");
	p.index.content_size_bits = 64;
	p.index.timestamp_end = 999;
	EXPECT_EQ(frame_error(p), "PACKET: timestamp end precedes timestamp begin");
	p.index.timestamp_end = 1000;
	p.bytes.push_back(0);
	EXPECT_EQ(frame_error(p), "PACKET: 9 bytes for a packet of 8");
	p.bytes.resize(8);
	EXPECT_EQ(frame_error(p), "");
	p.bytes.clear();
	EXPECT_EQ(frame_error(p), "PACKET: 0 bytes for a packet of 8");
}

TEST(RelayProtocol, DecoderHoldsOnlyWhatItWasGiven)
{
	// A header announcing the maximum body: the decoder waits, holding only the
	// bytes fed.
	std::vector<uint8_t> b = encode(Metadata{.trace_id = 1, .text = "x"});
	b.resize(kHeaderSize);
	b[8] = 0x00;
	b[9] = 0x10;
	b[10] = 0x00;
	b[11] = 0x01; // 16 MiB + 4096
	Decoder d;
	d.feed(b);
	Frame f;
	EXPECT_EQ(d.next(f), Decoder::Status::needs_more);
	EXPECT_EQ(d.buffered(), kHeaderSize);
}

} // namespace
} // namespace tracery::control::relay
