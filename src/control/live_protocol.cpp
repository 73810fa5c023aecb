// relay/live_protocol.cpp — the lttng-live viewer protocol's bytes: the
// request parser (strict: a known command, its exact payload size, bounded
// reads) and the big-endian reply writers.
#include "control/live_protocol.hpp"

#include "base/byte_order.hpp"
#include "base/cat.hpp"

#include <algorithm>
#include <cstring>

namespace tracery::control::live {

namespace {

template <class T>
T to_be(T v)
{
	return base::kHostIsLittleEndian ? base::byteswap(v) : v;
}

} // namespace

void put_be32(uint8_t *p, uint32_t v) { base::store_le(p, to_be(v)); }
void put_be64(uint8_t *p, uint64_t v) { base::store_le(p, to_be(v)); }
uint32_t get_be32(const uint8_t *p) { return to_be(base::load_le<uint32_t>(p)); }
uint64_t get_be64(const uint8_t *p) { return to_be(base::load_le<uint64_t>(p)); }

const char *command_name(uint32_t cmd)
{
	static const char *const names[] = {"CONNECT",         "LIST_SESSIONS",  "ATTACH_SESSION",
	                                    "GET_NEXT_INDEX",  "GET_PACKET",     "GET_METADATA",
	                                    "GET_NEW_STREAMS", "CREATE_SESSION", "DETACH_SESSION"};
	return cmd >= 1 && cmd <= 9 ? names[cmd - 1] : "unknown";
}

size_t payload_size(Command cmd)
{
	switch (cmd) {
	case Command::connect:
	case Command::attach_session:
	case Command::get_packet:
		return 20;
	case Command::get_next_index:
	case Command::get_metadata:
	case Command::get_new_streams:
	case Command::detach_session:
		return 8;
	case Command::list_sessions:
	case Command::create_session:
		return 0;
	}
	return 0;
}

ParseStatus parse_request(std::span<const uint8_t> in, Request *out, size_t *consumed, std::string *error)
{
	if (in.size() < kHeaderSize)
		return ParseStatus::needs_more;
	const uint64_t size = get_be64(in.data());
	const uint32_t cmd = get_be32(in.data() + 8);
	if (cmd < 1 || cmd > 9) {
		*error = base::cat("unknown command ", std::to_string(cmd));
		return ParseStatus::error;
	}
	Request r;
	r.cmd = static_cast<Command>(cmd);
	if (size != payload_size(r.cmd)) {
		*error = base::cat(command_name(cmd), " with a payload of ", std::to_string(size), " bytes, not ",
		                   std::to_string(payload_size(r.cmd)));
		return ParseStatus::error;
	}
	if (in.size() < kHeaderSize + size)
		return ParseStatus::needs_more;
	const uint8_t *p = in.data() + kHeaderSize;
	switch (r.cmd) {
	case Command::connect:
		r.id = get_be64(p);
		r.major = get_be32(p + 8);
		r.minor = get_be32(p + 12);
		r.type = get_be32(p + 16);
		break;
	case Command::attach_session:
		r.id = get_be64(p);
		r.offset = get_be64(p + 8);
		r.seek = get_be32(p + 16);
		break;
	case Command::get_packet:
		r.id = get_be64(p);
		r.offset = get_be64(p + 8);
		r.length = get_be32(p + 16);
		if (r.length == 0 || r.length > kMaxPacketRead) {
			*error = base::cat("GET_PACKET of ", std::to_string(r.length), " bytes");
			return ParseStatus::error;
		}
		break;
	case Command::get_next_index:
	case Command::get_metadata:
	case Command::get_new_streams:
	case Command::detach_session:
		r.id = get_be64(p);
		break;
	case Command::list_sessions:
	case Command::create_session:
		break;
	}
	*out = r;
	*consumed = kHeaderSize + size;
	return ParseStatus::request;
}

std::vector<uint8_t> encode_request(const Request &r)
{
	std::vector<uint8_t> out;
	ReplyWriter w(out);
	w.u64(payload_size(r.cmd)).u32(static_cast<uint32_t>(r.cmd)).u32(0);
	switch (r.cmd) {
	case Command::connect:
		w.u64(r.id).u32(r.major).u32(r.minor).u32(r.type);
		break;
	case Command::attach_session:
		w.u64(r.id).u64(r.offset).u32(r.seek);
		break;
	case Command::get_packet:
		w.u64(r.id).u64(r.offset).u32(r.length);
		break;
	case Command::get_next_index:
	case Command::get_metadata:
	case Command::get_new_streams:
	case Command::detach_session:
		w.u64(r.id);
		break;
	case Command::list_sessions:
	case Command::create_session:
		break;
	}
	return out;
}

ReplyWriter &ReplyWriter::u32(uint32_t v)
{
	out_.resize(out_.size() + 4);
	put_be32(out_.data() + out_.size() - 4, v);
	return *this;
}

ReplyWriter &ReplyWriter::u64(uint64_t v)
{
	out_.resize(out_.size() + 8);
	put_be64(out_.data() + out_.size() - 8, v);
	return *this;
}

ReplyWriter &ReplyWriter::text(std::string_view s, size_t size)
{
	const size_t n = std::min(s.size(), size - 1);
	const size_t at = out_.size();
	out_.resize(at + size, 0);
	std::memcpy(out_.data() + at, s.data(), n);
	return *this;
}

void append_index_reply(std::vector<uint8_t> &out, const IndexReply &r)
{
	ReplyWriter(out)
		.u64(r.offset)
		.u64(r.packet_size)
		.u64(r.content_size)
		.u64(r.timestamp_begin)
		.u64(r.timestamp_end)
		.u64(r.events_discarded)
		.u64(r.stream_class_id)
		.u32(static_cast<uint32_t>(r.status))
		.u32(r.flags);
}

namespace {

// Reads one reply part field by field, after checking its size once.
class Fields {
public:
	Fields(std::span<const uint8_t> b, size_t size, const char *what) : b_(b), what_(what)
	{
		if (b.size() != size)
			fail(base::cat(std::to_string(b.size()), " bytes, not ", std::to_string(size)));
	}
	uint32_t u32()
	{
		const uint32_t v = get_be32(b_.data() + at_);
		at_ += 4;
		return v;
	}
	uint64_t u64()
	{
		const uint64_t v = get_be64(b_.data() + at_);
		at_ += 8;
		return v;
	}
	// A NUL-terminated string in a char array of `size` bytes.
	std::string text(size_t size, const char *name)
	{
		const auto *p = reinterpret_cast<const char *>(b_.data() + at_);
		const void *nul = std::memchr(p, 0, size);
		if (!nul)
			fail(base::cat("its ", name, " has no NUL in its ", std::to_string(size), " bytes"));
		at_ += size;
		return std::string(p, static_cast<const char *>(nul));
	}
	// A status from 1 to last.
	uint32_t status(uint32_t last)
	{
		const uint32_t v = u32();
		if (v < 1 || v > last)
			fail(base::cat("status ", std::to_string(v), ", which the protocol does not have"));
		return v;
	}
	uint32_t count()
	{
		const uint32_t v = u32();
		if (v > kMaxListEntries)
			fail(base::cat("a count of ", std::to_string(v), " (at most ", std::to_string(kMaxListEntries),
			               ")"));
		return v;
	}
	[[noreturn]] void fail(const std::string &why) const
	{
		throw ReplyError(base::cat("the relay's ", what_, " reply: ", why));
	}

private:
	std::span<const uint8_t> b_;
	const char *what_;
	size_t at_ = 0;
};

uint32_t flags(Fields &f)
{
	const uint32_t v = f.u32();
	if (v & ~(kFlagNewMetadata | kFlagNewStream))
		f.fail(base::cat("flags ", std::to_string(v), ", which the protocol does not have"));
	return v;
}

// A status (1 to last; 1 is OK in both lists) and a count of stream
// entries, which follow an OK status only.
StreamsReply streams_reply(std::span<const uint8_t> b, const char *what, uint32_t last)
{
	Fields f(b, kStatusCountReplySize, what);
	StreamsReply r;
	r.status = f.status(last);
	r.count = f.count();
	if (r.status != 1)
		r.count = 0;
	return r;
}

} // namespace

ConnectReply decode_connect_reply(std::span<const uint8_t> b)
{
	Fields f(b, kConnectReplySize, "CONNECT");
	ConnectReply r;
	r.viewer_session_id = f.u64();
	r.major = f.u32();
	r.minor = f.u32();
	if (f.u32() != kClientCommand)
		f.fail("not a command connection");
	if (r.major != kMajor)
		f.fail(base::cat("protocol ", std::to_string(r.major), ".", std::to_string(r.minor), ", not 2.x"));
	return r;
}

uint32_t decode_session_count(std::span<const uint8_t> b)
{
	Fields f(b, kCountReplySize, "LIST_SESSIONS");
	return f.count();
}

SessionEntry decode_session_entry(std::span<const uint8_t> b)
{
	Fields f(b, kSessionEntrySize, "LIST_SESSIONS");
	SessionEntry e;
	e.id = f.u64();
	e.live_timer_us = f.u32();
	e.clients = f.u32();
	e.streams = f.u32();
	e.hostname = f.text(kHostNameSize, "host name");
	e.name = f.text(kNameSize, "session name");
	return e;
}

StreamsReply decode_attach_reply(std::span<const uint8_t> b)
{
	return streams_reply(b, "ATTACH_SESSION", static_cast<uint32_t>(AttachStatus::no_session));
}

StreamsReply decode_new_streams_reply(std::span<const uint8_t> b)
{
	return streams_reply(b, "GET_NEW_STREAMS", static_cast<uint32_t>(NewStreamsStatus::hup));
}

StreamEntry decode_stream_entry(std::span<const uint8_t> b)
{
	Fields f(b, kStreamEntrySize, "stream list");
	StreamEntry e;
	e.id = f.u64();
	e.trace_id = f.u64();
	const uint32_t metadata = f.u32();
	if (metadata > 1)
		f.fail(base::cat("a metadata flag of ", std::to_string(metadata)));
	e.metadata = metadata == 1;
	e.path = f.text(kPathSize, "path");
	e.name = f.text(kNameSize, "stream name");
	return e;
}

IndexReply decode_index_reply(std::span<const uint8_t> b)
{
	Fields f(b, kIndexReplySize, "GET_NEXT_INDEX");
	IndexReply r;
	r.offset = f.u64();
	r.packet_size = f.u64();
	r.content_size = f.u64();
	r.timestamp_begin = f.u64();
	r.timestamp_end = f.u64();
	r.events_discarded = f.u64();
	r.stream_class_id = f.u64();
	r.status = static_cast<IndexStatus>(f.status(static_cast<uint32_t>(IndexStatus::eof)));
	r.flags = flags(f);
	if (r.status == IndexStatus::ok) {
		const std::string sizes = base::cat("a packet of ", std::to_string(r.packet_size), " bits with ",
		                                    std::to_string(r.content_size), " bits of content");
		if (r.packet_size == 0 || r.packet_size % 8 != 0 || r.packet_size / 8 > kMaxPacketRead)
			f.fail(base::cat(sizes, " (whole bytes, 1 to ", std::to_string(kMaxPacketRead), ")"));
		if (r.content_size > r.packet_size)
			f.fail(sizes);
		if (r.timestamp_end < r.timestamp_begin)
			f.fail(base::cat("a packet ending at ", std::to_string(r.timestamp_end),
			                 ", before its beginning at ", std::to_string(r.timestamp_begin)));
	}
	return r;
}

MetadataReply decode_metadata_reply(std::span<const uint8_t> b)
{
	Fields f(b, kMetadataReplySize, "GET_METADATA");
	MetadataReply r;
	r.length = f.u64();
	r.status = static_cast<MetadataStatus>(f.status(static_cast<uint32_t>(MetadataStatus::error)));
	if (r.status == MetadataStatus::ok && (r.length == 0 || r.length > kMaxMetadataChunk))
		f.fail(base::cat("a length of ", std::to_string(r.length), " (1 to ", std::to_string(kMaxMetadataChunk),
		                 ")"));
	if (r.status != MetadataStatus::ok && r.length != 0)
		f.fail(base::cat("a length of ", std::to_string(r.length), " without data"));
	return r;
}

PacketReply decode_packet_reply(std::span<const uint8_t> b, uint32_t asked)
{
	Fields f(b, kPacketReplySize, "GET_PACKET");
	PacketReply r;
	r.status = static_cast<PacketStatus>(f.status(static_cast<uint32_t>(PacketStatus::eof)));
	r.length = f.u32();
	r.flags = flags(f);
	if (r.status == PacketStatus::ok && r.length != asked)
		f.fail(base::cat(std::to_string(r.length), " bytes of the ", std::to_string(asked), " asked"));
	if (r.status != PacketStatus::ok)
		r.length = 0;
	return r;
}

} // namespace tracery::control::live
