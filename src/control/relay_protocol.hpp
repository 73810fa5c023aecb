// control/relay_protocol.hpp — the relay protocol between traceryd and
// tracery-relayd (docs/relay-protocol.md): the frame header, every message,
// an encoder for each and one strict, incremental decoder of the bytes a
// sender puts on the connection. Stateless checks live here (lengths, names,
// paths, packet sizes); what depends on the session so far (ids, counts,
// order) is the relay's.
#pragma once

#include "control/auth.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tracery::control::relay {

inline constexpr uint32_t kMagic = 0x594C5254; // the bytes "TRLY" (little-endian)
inline constexpr uint16_t kVersion = 1;
inline constexpr uint16_t kMajor = 1, kMinor = 1; // of HELLO (minor 0: without its flags)
inline constexpr size_t kHeaderSize = 12;
inline constexpr uint32_t kMaxBody = 16u * 1024 * 1024 + 4096;
inline constexpr uint16_t kDefaultPort = 5342;
inline constexpr size_t kMaxName = 255;  // hostname, session, stream file name, one path component
inline constexpr size_t kMaxPath = 1024; // a trace's relative path
inline constexpr size_t kMaxPathComponents = 16;
inline constexpr size_t kMaxReplyText = 4096;
// The fixed part of a PACKET body: stream id and eight u64 index fields.
inline constexpr size_t kPacketFixed = 4 + 8 * 8;

enum class Type : uint16_t {
	hello = 1,
	hello_reply = 2,
	trace = 3,
	metadata = 4,
	stream = 5,
	packet = 6,
	beacon = 7,
	close_stream = 8,
	bye = 9,
	sync = 10,
	sync_reply = 11,
	notice = 12,
	auth_request = 13,
	auth_challenge = 14,
	auth_response = 15,
	auth_result = 16,
	drop_unwritten = 17,
	archive_trace = 18,
	stream_files = 19,
};
inline constexpr uint16_t kLastType = 19;

// HELLO's flags (minor 1 and later; a minor 0 HELLO has none).
inline constexpr uint32_t kHelloPublicLive = 1; // a live session served on the relay's plain lttng-live port too
inline constexpr uint32_t kHelloKnownFlags = kHelloPublicLive;
struct Hello {
	uint16_t major = kMajor, minor = kMinor;
	uint64_t creation_time_ns = 0; // since the Unix epoch
	uint64_t live_period_ns = 0;   // 0: not live
	std::string hostname, session;
	uint32_t flags = 0; // kHello*; sent from minor 1 on
	bool operator==(const Hello &) const = default;
};
struct HelloReply {
	bool accepted = false;
	std::string text; // the relay's path of the session, or why it was refused
	bool operator==(const HelloReply &) const = default;
};
struct Trace {
	uint32_t id = 0;
	std::string path; // relative: "ust/uid/1000/64-bit", "kernel"
	bool operator==(const Trace &) const = default;
};
struct Metadata {
	uint32_t trace_id = 0;
	std::string text; // appended to the trace's metadata file
	bool operator==(const Metadata &) const = default;
};
struct Stream {
	uint32_t id = 0, trace_id = 0;
	std::string file; // one name in the trace's directory
	bool operator==(const Stream &) const = default;
};
// A packet's index fields as the sender knows them (the offset is the relay's).
struct PacketIndex {
	uint64_t packet_size_bits = 0, content_size_bits = 0;
	uint64_t timestamp_begin = 0, timestamp_end = 0;
	uint64_t events_discarded = 0;
	uint64_t stream_class_id = 0, stream_instance_id = 0;
	uint64_t packet_seq_num = 0;
	bool operator==(const PacketIndex &) const = default;
};
struct Packet {
	uint32_t stream_id = 0;
	PacketIndex index;
	std::vector<uint8_t> bytes; // exactly index.packet_size_bits / 8
	bool operator==(const Packet &) const = default;
};
struct Beacon {
	uint32_t stream_id = 0;
	uint64_t timestamp = 0;
	bool operator==(const Beacon &) const = default;
};
struct CloseStream {
	uint32_t stream_id = 0;
	bool operator==(const CloseStream &) const = default;
};
struct Bye {
	bool operator==(const Bye &) const = default;
};
// The sender asks the relay to answer once everything it sent before this
// frame is written (stop and the end of a session wait for it).
struct Sync {
	uint64_t token = 0;
	bool operator==(const Sync &) const = default;
};
// The relay's answer to SYNC: the same token, and the packets of the session
// written so far.
struct SyncReply {
	uint64_t token = 0;
	uint64_t packets_written = 0;
	bool operator==(const SyncReply &) const = default;
};
// What the relay tells a sender between its replies.
enum class NoticeKind : uint8_t {
	writes_behind = 1, // the relay's disk is behind: it reads this connection only as fast as it writes
	caught_up = 2,     // it reads at full speed again
	write_failed = 3,  // its disk refuses the session's writes (full, I/O error): it keeps what it holds and
			   // retries; the sender sends no packets meanwhile; the text says why and where
	write_resumed = 4, // its writes succeed again: the sender sends its packets again
};
inline constexpr uint8_t kLastNoticeKind = 4;
struct Notice {
	NoticeKind kind = NoticeKind::writes_behind;
	std::string text; // one line for the sender's log, at most 4096 bytes
	bool operator==(const Notice &) const = default;
};

// Authentication before HELLO (docs/relay-protocol.md, *Authentication*):
// the four messages of control/auth.hpp as frames. Method 1 is auth.hpp's
// HMAC-SHA-256 challenge-response, the only one.
inline constexpr uint8_t kAuthMethod = 1;
struct AuthRequest { // sender → relay
	uint8_t method = kAuthMethod;
	auth::Request request; // key name (a valid key name), sender's nonce
	bool operator==(const AuthRequest &) const = default;
};
struct AuthChallenge { // relay → sender
	auth::Challenge challenge;
	bool operator==(const AuthChallenge &) const = default;
};
struct AuthResponse { // sender → relay
	auth::Response response;
	bool operator==(const AuthResponse &) const = default;
};
struct AuthResult {          // relay → sender
	auth::Result result; // refused: its proof is all zero
	std::string text;    // why refused (the same whatever was wrong), at most 4096 bytes
	bool operator==(const AuthResult &) const = default;
};

// The sender, at the session's end, asks a relay whose disk refuses its
// writes to drop what it has not written: the relay writes nothing more of
// the connection, answers with a SYNC_REPLY of the same token whose
// packets_written is final (the sender counts the packets it sent after
// those as not written), then closes the connection. Nothing follows it.
struct DropUnwritten {
	uint64_t token = 0;
	bool operator==(const DropUnwritten &) const = default;
};

// Rotation: a trace of the session is complete (every stream of it closed,
// its metadata whole): the relay moves its directory into the session's
// archives/ARCHIVE/ (under the last component of its path: `ust`, `kernel`)
// and forgets it. The traces of one chunk are archived under one name.
struct ArchiveTrace {
	uint32_t trace_id = 0;
	std::string archive; // a name: the chunk's archive, BEGIN-END-ID
	bool operator==(const ArchiveTrace &) const = default;
};

// enable-channel --tracefile-size/--tracefile-count: the relay writes the
// stream as files of at most `size` bytes (a file's first packet goes in
// whatever its size), FILE_0, FILE_1, ..., each with its index, keeping the
// newest `count` (0: all). Sent after STREAM, before the stream's first packet.
struct StreamFiles {
	uint32_t stream_id = 0;
	uint64_t size = 0; // at least 1
	uint64_t count = 0;
	bool operator==(const StreamFiles &) const = default;
};

using Frame = std::variant<Hello, HelloReply, Trace, Metadata, Stream, Packet, Beacon, CloseStream, Bye, Sync,
                           SyncReply, Notice, AuthRequest, AuthChallenge, AuthResponse, AuthResult, DropUnwritten,
                           ArchiveTrace, StreamFiles>;

// The frame's type (the header's type field).
Type type_of(const Frame &f);
// "HELLO", "PACKET", ...; "unknown" for another value.
const char *type_name(uint16_t type);

// Appends the frame (header and body) to out. Encodes what it is given: a
// frame the decoder would refuse (a bad name, a packet whose bytes do not
// match its size) is encoded all the same, so tests can send it; the
// sender checks with frame_error() first.
void append_frame(std::vector<uint8_t> &out, const Frame &f);
std::vector<uint8_t> encode(const Frame &f);

// Why the decoder would refuse f, or "" if it would not.
std::string frame_error(const Frame &f);

// A PACKET without copying its bytes: appends the header and the fixed part
// of the body for a packet of byte_count bytes, which the caller sends next.
void append_packet_head(std::vector<uint8_t> &out, uint32_t stream_id, const PacketIndex &index, size_t byte_count);
// Why a PACKET with this index and byte count would be refused, or "".
std::string packet_error(const PacketIndex &index, size_t byte_count);

// A name: 1-255 bytes of [A-Za-z0-9._+-], not starting with '.'.
bool valid_name(std::string_view s);
// 1-16 names joined by '/', at most 1024 bytes.
bool valid_relative_path(std::string_view s);

// Decodes frames from bytes as they arrive, in pieces of any size:
//   feed(bytes); while (next(f) == Status::frame) use(f);
// After an error, next() keeps returning it and feed() ignores its input.
// It holds at most the frame being read plus the bytes fed beyond it (the
// caller bounds those by feeding what one read() returned, then draining).
class Decoder {
public:
	enum class Status { needs_more, frame, error };

	void feed(std::span<const uint8_t> bytes);
	Status next(Frame &out);
	// What was wrong (after Status::error).
	const std::string &error() const { return error_; }
	// Bytes fed but not yet decoded.
	size_t buffered() const { return buf_.size() - pos_; }

private:
	Status fail(std::string why);

	std::vector<uint8_t> buf_;
	size_t pos_ = 0; // start of the next frame in buf_
	std::string error_;
};

// Decodes one body of the given type (the header already checked); "" and out
// set, or why it is refused.
std::string decode_body(uint16_t type, std::span<const uint8_t> body, Frame &out);

} // namespace tracery::control::relay
