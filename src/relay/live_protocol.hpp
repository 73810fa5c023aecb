// relay/live_protocol.hpp — the lttng-live viewer protocol as tracery-relayd
// speaks it on --live-port (docs/relay-protocol.md, "Live viewers"): the
// request header and the fixed payload of each command, one strict
// incremental parser of the bytes a viewer sends, and the encoders of the
// replies. Everything on this wire is big-endian and packed. Stateless: what
// a request means for a session is live_viewer.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::relay::live {

inline constexpr uint16_t kDefaultPort = 5344;
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

} // namespace tracery::relay::live
