// ctf/packet.hpp — the packet header and packet context that start every
// packet of a stream file.
//
// On disk (little-endian, byte-aligned, no padding), 84 bytes:
//   offset  size  packet.header
//        0     4  magic = 0xC1FC1FC1
//        4    16  trace uuid
//       20     4  stream_id            (stream class)
//       24     8  stream_instance_id   (which stream of that class)
//          packet.context
//       32     8  timestamp_begin      (ticks of the clock named "monotonic")
//       40     8  timestamp_end
//       48     8  content_size         (bits, whole packet incl. these 84 bytes)
//       56     8  packet_size          (bits, == content_size: no padding)
//       64     8  packet_seq_num
//       72     8  events_discarded     (cumulative count for the stream)
//       80     4  cpu_id
//       84        events...
//
// A tick is what the trace's timestamps count (clock::TickUnit), chosen by
// whoever writes the metadata (traceryd per session, or the program itself
// without a daemon): TSC cycles where its trace clock uses a TSC backend,
// else nanoseconds. The metadata's clock is named "monotonic" either way; it
// declares the tick rate (freq: 1 GHz, or the calibrated TSC rate) and the
// time of day of tick 0 (metadata.hpp, base/tick_scale.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/byte_order.hpp"
#include "ctf/uuid.hpp"

namespace tracery::ctf {

inline constexpr uint32_t kPacketMagic = 0xC1FC1FC1;
inline constexpr size_t kPacketHeaderSize = 32;
inline constexpr size_t kPacketContextSize = 52;
inline constexpr size_t kPacketPrefixSize = kPacketHeaderSize + kPacketContextSize;
// PacketInfo::events of a packet whose events were not counted.
inline constexpr uint64_t kEventsUnknown = UINT64_MAX;
// Where the two sizes (in bits) sit in the prefix.
inline constexpr size_t kContentSizeOffset = 48;
inline constexpr size_t kPacketSizeOffset = 56;

struct PacketInfo {
	// Clock values (ticks) of the packet's first and last instants: every event
	// timestamp t must satisfy timestamp_begin <= t <= timestamp_end, and a
	// reader starts decoding compact timestamps from timestamp_begin.
	uint64_t timestamp_begin = 0;
	uint64_t timestamp_end = 0;
	// Events discarded in this stream since it began, up to the end of this
	// packet (CTF semantics: a running total; readers report the increase
	// between consecutive packets).
	uint64_t events_discarded = 0;
	// Packet sequence number in its stream, +1 per packet (a gap is reported
	// by readers as discarded packets).
	uint64_t seq = 0;
	uint32_t cpu_id = 0;
	// How many events the packet holds, when its writer counted them (the
	// kernel trace's consumer does; a user sub-buffer's records are not
	// counted, their sizes being in their layouts): not written in the
	// packet; a sink that cannot deliver the packet counts them.
	uint64_t events = kEventsUnknown;
};

// Writes the 84-byte header + context of a packet carrying event_bytes bytes
// of events.
inline void write_packet_prefix(uint8_t *dst, const Uuid &trace_uuid, uint32_t stream_id, uint64_t stream_instance_id,
                                const PacketInfo &info, uint64_t event_bytes) noexcept
{
	const uint64_t bits = (kPacketPrefixSize + event_bytes) * 8;
	base::store_le<uint32_t>(dst + 0, kPacketMagic);
	for (size_t i = 0; i < 16; ++i)
		dst[4 + i] = trace_uuid.bytes[i];
	base::store_le<uint32_t>(dst + 20, stream_id);
	base::store_le<uint64_t>(dst + 24, stream_instance_id);
	base::store_le<uint64_t>(dst + 32, info.timestamp_begin);
	base::store_le<uint64_t>(dst + 40, info.timestamp_end);
	base::store_le<uint64_t>(dst + kContentSizeOffset, bits);
	base::store_le<uint64_t>(dst + kPacketSizeOffset, bits);
	base::store_le<uint64_t>(dst + 64, info.seq);
	base::store_le<uint64_t>(dst + 72, info.events_discarded);
	base::store_le<uint32_t>(dst + 80, info.cpu_id);
}

} // namespace tracery::ctf
