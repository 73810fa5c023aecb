// relay/live_protocol.cpp — the lttng-live viewer protocol's bytes: the
// request parser (strict: a known command, its exact payload size, bounded
// reads) and the big-endian reply writers.
#include "relay/live_protocol.hpp"

#include "base/byte_order.hpp"
#include "base/cat.hpp"

#include <algorithm>
#include <cstring>

namespace tracery::relay::live {

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

} // namespace tracery::relay::live
