// control/live_protocol.hpp — the lttng-live viewer protocol as tracery-relayd
// speaks it on --live-port (docs/relay-protocol.md, "Live viewers"): the
// request header and the fixed payload of each command, one strict
// incremental parser of the bytes a viewer sends, and the encoders of the
// replies. Everything on this wire is big-endian and packed. Stateless: what
// a request means for a session is live_viewer.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::control::live {

inline constexpr uint16_t kDefaultPort = 5344;
// tracery-relayd's authenticated viewer port (TLS and a key, then this protocol).
inline constexpr uint16_t kDefaultViewerPort = 5345;
// The protocol version the relay implements: 2.4, the one babeltrace2 2.0 speaks.
inline constexpr uint32_t kMajor = 2, kMinor = 4;
inline constexpr size_t kHeaderSize = 16; // u64 payload size, u32 command, u32 command version
// The most bytes one GET_PACKET may ask (the largest packet the relay takes).
inline constexpr uint32_t kMaxPacketRead = 16u * 1024 * 1024;
// The most metadata bytes one GET_METADATA reply carries (the viewer asks again).
inline constexpr uint64_t kMaxMetadataReply = 1024 * 1024;
// Fixed-size strings of the replies, NUL-terminated within.
inline constexpr size_t kHostNameSize = 64, kNameSize = 255, kPathSize = 4096;
inline constexpr size_t kSessionEntrySize = 8 + 4 + 4 + 4 + kHostNameSize + kNameSize;
inline constexpr size_t kStreamEntrySize = 8 + 8 + 4 + kPathSize + kNameSize;
inline constexpr size_t kIndexReplySize = 7 * 8 + 4 + 4;

enum class Command : uint32_t {
	connect = 1,
	list_sessions = 2,
	attach_session = 3,
	get_next_index = 4,
	get_packet = 5,
	get_metadata = 6,
	get_new_streams = 7,
	create_session = 8,
	detach_session = 9,
};
// "CONNECT", "GET_PACKET", ...; "unknown" for another value.
const char *command_name(uint32_t cmd);

// Reply statuses and flags (the values are the protocol's).
enum class AttachStatus : uint32_t { ok = 1, already = 2, unknown = 3, not_live = 4, seek_error = 5, no_session = 6 };
enum class IndexStatus : uint32_t { ok = 1, retry = 2, hup = 3, error = 4, inactive = 5, eof = 6 };
enum class PacketStatus : uint32_t { ok = 1, retry = 2, error = 3, eof = 4 };
enum class MetadataStatus : uint32_t { ok = 1, no_new = 2, error = 3 };
enum class NewStreamsStatus : uint32_t { ok = 1, no_new = 2, error = 3, hup = 4 };
enum class DetachStatus : uint32_t { ok = 1, unknown = 2, error = 3 };
inline constexpr uint32_t kFlagNewMetadata = 1, kFlagNewStream = 2;
inline constexpr uint32_t kSeekBeginning = 1, kSeekLast = 2;
inline constexpr uint32_t kClientCommand = 1;

// One request, its payload decoded (the fields its command has; others 0).
struct Request {
	Command cmd = Command::connect;
	// CONNECT: the viewer session id; ATTACH_SESSION, GET_NEW_STREAMS,
	// DETACH_SESSION: a session id; GET_NEXT_INDEX, GET_PACKET, GET_METADATA: a stream id.
	uint64_t id = 0;
	uint64_t offset = 0;                     // GET_PACKET (ATTACH_SESSION's is unused)
	uint32_t major = 0, minor = 0, type = 0; // CONNECT
	uint32_t seek = 0;                       // ATTACH_SESSION
	uint32_t length = 0;                     // GET_PACKET
	bool operator==(const Request &) const = default;
};

// The payload size each command must declare (the protocol's packed structs).
size_t payload_size(Command cmd);

// Parses the first request of `in`: needs_more (nothing consumed), request
// (*out and *consumed set), or error (*error says why: an unknown command, a
// payload size other than its command's, a GET_PACKET of 0 bytes or more than
// kMaxPacketRead). A viewer is never buffered more than one request.
enum class ParseStatus { needs_more, request, error };
ParseStatus parse_request(std::span<const uint8_t> in, Request *out, size_t *consumed, std::string *error);

// The request's bytes (header and payload), for tests and the fuzz target.
std::vector<uint8_t> encode_request(const Request &r);

// Big-endian writers of the replies.
void put_be32(uint8_t *p, uint32_t v);
void put_be64(uint8_t *p, uint64_t v);
uint32_t get_be32(const uint8_t *p);
uint64_t get_be64(const uint8_t *p);

// Builds one reply in `out`: fields appended in order.
class ReplyWriter {
public:
	explicit ReplyWriter(std::vector<uint8_t> &out) : out_(out) {}
	ReplyWriter &u32(uint32_t v);
	ReplyWriter &u64(uint64_t v);
	// A fixed-size char array of `size` bytes: s cut to size - 1, then NULs.
	ReplyWriter &text(std::string_view s, size_t size);

private:
	std::vector<uint8_t> &out_;
};

// The fields of one index reply (GET_NEXT_INDEX).
struct IndexReply {
	uint64_t offset = 0, packet_size = 0, content_size = 0;
	uint64_t timestamp_begin = 0, timestamp_end = 0, events_discarded = 0;
	uint64_t stream_class_id = 0;
	IndexStatus status = IndexStatus::retry;
	uint32_t flags = 0;
};
void append_index_reply(std::vector<uint8_t> &out, const IndexReply &r);

// The client's side. Each decoder takes exactly the bytes of one reply's
// fixed part (or of one list entry) and throws ReplyError saying what was
// wrong: a size other than the part's, a status or flag the protocol does
// not have, a count, length or packet size out of bounds, a string without
// its NUL.
class ReplyError : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// The most entries of one list the client takes (sessions, streams).
inline constexpr uint32_t kMaxListEntries = 16384;
// The most metadata bytes of one GET_METADATA reply the client takes.
inline constexpr uint64_t kMaxMetadataChunk = 16u * 1024 * 1024;
inline constexpr size_t kConnectReplySize = 20, kCountReplySize = 4, kStatusCountReplySize = 8;
inline constexpr size_t kMetadataReplySize = 12, kPacketReplySize = 12;

struct ConnectReply {
	uint64_t viewer_session_id = 0;
	uint32_t major = 0, minor = 0;
};
ConnectReply decode_connect_reply(std::span<const uint8_t> b);

struct SessionEntry {
	uint64_t id = 0;
	uint32_t live_timer_us = 0, clients = 0, streams = 0;
	std::string hostname, name;
};
// LIST_SESSIONS: the count, then each entry (kSessionEntrySize bytes).
uint32_t decode_session_count(std::span<const uint8_t> b);
SessionEntry decode_session_entry(std::span<const uint8_t> b);

// ATTACH_SESSION and GET_NEW_STREAMS: a status and a count of stream entries
// (the count only read with an OK status).
struct StreamsReply {
	uint32_t status = 0;
	uint32_t count = 0;
};
StreamsReply decode_attach_reply(std::span<const uint8_t> b);
StreamsReply decode_new_streams_reply(std::span<const uint8_t> b);

struct StreamEntry {
	uint64_t id = 0, trace_id = 0;
	bool metadata = false;
	std::string path, name;
};
StreamEntry decode_stream_entry(std::span<const uint8_t> b);

// GET_NEXT_INDEX (kIndexReplySize bytes): an OK index has a packet of 1 byte
// to kMaxPacketRead, whole bytes, its content inside it, its end not before
// its beginning.
IndexReply decode_index_reply(std::span<const uint8_t> b);

// GET_METADATA: the length of the bytes that follow (OK: 1 to kMaxMetadataChunk; else 0).
struct MetadataReply {
	MetadataStatus status = MetadataStatus::no_new;
	uint64_t length = 0;
};
MetadataReply decode_metadata_reply(std::span<const uint8_t> b);

// GET_PACKET of `asked` bytes: OK has exactly that length; flags as an index's.
struct PacketReply {
	PacketStatus status = PacketStatus::error;
	uint32_t length = 0, flags = 0;
};
PacketReply decode_packet_reply(std::span<const uint8_t> b, uint32_t asked);

} // namespace tracery::control::live
