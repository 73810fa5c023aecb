// control/fuzz/fuzz_live_replies.cpp — libFuzzer target: arbitrary bytes a
// hostile relay could send `tracery view --live` as the replies of the
// lttng-live protocol (control/live_protocol.hpp). The first byte picks the
// decoder, the next four the length a GET_PACKET asked; the rest is the reply
// part, of the decoder's size when there are enough bytes (else all of
// them: a reply cut short). Checks that a refusal says why and names the
// relay's reply, that a decoded reply keeps the bounds the client relies on
// (packet and metadata lengths, counts, NUL-free strings shorter than their
// arrays), and that a decoded index or connect reply encodes back to the
// same bytes.
#include "base/fuzz_check.hpp"
#include "control/live_protocol.hpp"

#include <cstring>
#include <span>
#include <string>
#include <vector>

using namespace tracery::control::live;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_live_replies", what); }

void text_ok(const std::string &s, size_t size)
{
	check(s.size() < size && s.find('\0') == std::string::npos, "a string out of its array");
}

void decode(uint8_t which, uint32_t asked, std::span<const uint8_t> b)
{
	switch (which % 9) {
	case 0: {
		const ConnectReply r = decode_connect_reply(b);
		std::vector<uint8_t> again;
		ReplyWriter(again).u64(r.viewer_session_id).u32(r.major).u32(r.minor).u32(kClientCommand);
		check(again.size() == b.size() && std::memcmp(again.data(), b.data(), b.size()) == 0,
		      "a CONNECT reply re-encoded differs");
		check(r.major == kMajor, "a CONNECT reply of another major");
		break;
	}
	case 1:
		check(decode_session_count(b) <= kMaxListEntries, "a session count out of bounds");
		break;
	case 2: {
		const SessionEntry e = decode_session_entry(b);
		text_ok(e.hostname, kHostNameSize);
		text_ok(e.name, kNameSize);
		break;
	}
	case 3:
	case 4: {
		const StreamsReply r = which % 9 == 3 ? decode_attach_reply(b) : decode_new_streams_reply(b);
		check(r.status >= 1 && r.count <= kMaxListEntries, "a stream list out of bounds");
		check(r.status == 1 || r.count == 0, "streams counted with a status that has none");
		break;
	}
	case 5: {
		const StreamEntry e = decode_stream_entry(b);
		text_ok(e.path, kPathSize);
		text_ok(e.name, kNameSize);
		break;
	}
	case 6: {
		const IndexReply r = decode_index_reply(b);
		std::vector<uint8_t> again;
		append_index_reply(again, r);
		check(again.size() == b.size() && std::memcmp(again.data(), b.data(), b.size()) == 0,
		      "an index reply re-encoded differs");
		if (r.status == IndexStatus::ok)
			check(r.packet_size > 0 && r.packet_size % 8 == 0 && r.packet_size / 8 <= kMaxPacketRead &&
			              r.content_size <= r.packet_size && r.timestamp_begin <= r.timestamp_end,
			      "an OK index out of bounds");
		check((r.flags & ~(kFlagNewMetadata | kFlagNewStream)) == 0, "an unknown flag");
		break;
	}
	case 7: {
		const MetadataReply r = decode_metadata_reply(b);
		check(r.status == MetadataStatus::ok ? r.length >= 1 && r.length <= kMaxMetadataChunk : r.length == 0,
		      "a metadata length out of bounds");
		break;
	}
	case 8: {
		const PacketReply r = decode_packet_reply(b, asked);
		check(r.status == PacketStatus::ok ? r.length == asked : r.length == 0, "a packet length not asked");
		break;
	}
	}
}

size_t part_size(uint8_t which)
{
	static const size_t sizes[] = {kConnectReplySize,     kCountReplySize,       kSessionEntrySize,
	                               kStatusCountReplySize, kStatusCountReplySize, kStreamEntrySize,
	                               kIndexReplySize,       kMetadataReplySize,    kPacketReplySize};
	return sizes[which % 9];
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 5)
		return 0;
	const uint8_t which = data[0];
	const uint32_t asked = get_be32(data + 1);
	std::span<const uint8_t> rest(data + 5, size - 5);
	if (rest.size() > part_size(which))
		rest = rest.first(part_size(which));
	try {
		decode(which, asked, rest);
	} catch (const ReplyError &e) {
		const std::string why = e.what();
		check(why.rfind("the relay's ", 0) == 0 && why.size() > 20, "a refusal that does not say why");
	}
	return 0;
}
