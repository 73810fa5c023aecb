// ctf/event_header.hpp — the per-event header (event class id + timestamp).
//
// LTTng-style "compact" header, little-endian, byte-aligned:
//   compact  (ids 0..30):  one 32-bit LE word = id | (ts & (2^27 - 1)) << 5
//                          -> 4 bytes
//   extended (any id):     byte 0 = 31 (bits 0-4; bits 5-7 zero),
//                          bytes 1-4 = uint32 id, bytes 5-12 = uint64 ts
//                          -> 13 bytes
// A reader rebuilds the full timestamp of a compact header from the previous
// timestamp it saw in the packet (timestamp_begin for the first event): the
// low 27 bits replace the previous low bits, plus 2^27 if they went backwards.
// So a compact header is correct only if 0 <= ts - previous < 2^27 ns
// (~134 ms): see can_use_compact_header(). That choice is the ring buffer's.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "base/byte_order.hpp"

namespace tracery::ctf {

inline constexpr size_t kCompactHeaderSize = 4;
inline constexpr size_t kExtendedHeaderSize = 13;
inline constexpr unsigned kCompactTsBits = 27;
inline constexpr uint64_t kCompactTsMask = (uint64_t{1} << kCompactTsBits) - 1;
inline constexpr uint32_t kMaxCompactId = 30;
inline constexpr uint32_t kExtendedHeaderTag = 31; // the 5-bit id of an extended header

inline constexpr size_t event_header_size(bool compact) noexcept
{
	return compact ? kCompactHeaderSize : kExtendedHeaderSize;
}

// True if a compact header for event `id` at time `ts` decodes back to `ts`
// when the previous timestamp the reader saw in this packet is `prev_ts`
// (the packet's timestamp_begin, or the timestamp of the previous event).
inline constexpr bool can_use_compact_header(uint32_t id, uint64_t prev_ts, uint64_t ts) noexcept
{
	return id <= kMaxCompactId && ts >= prev_ts && ((ts - prev_ts) >> kCompactTsBits) == 0;
}

// Writes the header at dst: kCompactHeaderSize bytes if compact (requires
// id <= kMaxCompactId), else kExtendedHeaderSize bytes.
inline void write_event_header(uint8_t *dst, uint32_t id, uint64_t ts, bool compact) noexcept
{
	if (compact) {
		assert(id <= kMaxCompactId);
		const uint32_t word = id | (static_cast<uint32_t>(ts & kCompactTsMask) << 5);
		base::store_le<uint32_t>(dst, word);
	} else {
		dst[0] = static_cast<uint8_t>(kExtendedHeaderTag);
		base::store_le<uint32_t>(dst + 1, id);
		base::store_le<uint64_t>(dst + 5, ts);
	}
}

} // namespace tracery::ctf
