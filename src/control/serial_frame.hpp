// control/serial_frame.hpp — the frames that carry the relay protocol over a
// serial line (docs/relay-protocol.md, "Over a serial line"): a sync marker,
// the kind, the link id, a sequence number, the payload's length, the
// payload and a CRC-32 of all that. The decoder takes the line's bytes as
// they come, in any cuts, and finds frames again after noise, lost bytes or
// a corrupt frame by scanning for the next marker; what it skipped is
// counted. No state beyond the bytes of one frame: the link's sessions and
// sequence numbers are serial_line's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tracery::control::serial {

// The sync marker, the first four bytes of every frame.
inline constexpr uint8_t kMarker[4] = {0xA5, 0x5A, 'T', 's'};
inline constexpr size_t kFrameHead = 16; // marker, kind, flags, link id, sequence, payload length
inline constexpr size_t kFrameTail = 4;  // CRC-32
inline constexpr size_t kMaxPayload = 1024;
inline constexpr size_t kMaxFrame = kFrameHead + kMaxPayload + kFrameTail;

enum class Kind : uint8_t {
	hello = 1,  // sender → relay: a new link session (its id); payload: u16 link version
	accept = 2, // relay → sender: the session of that id is open
	data = 3,   // the relay protocol's bytes, in order (sequence numbers from 0, each direction)
	reset = 4,  // the session is over because frames were lost; payload: u32 sequence due, u32 sequence seen
	close = 5,  // the session is over: the relay connection (or the sender) closed
};
inline constexpr uint8_t kLastKind = 5;
inline constexpr uint16_t kLinkVersion = 1;

struct Frame {
	Kind kind = Kind::data;
	uint32_t link = 0;
	uint32_t sequence = 0;
	std::vector<uint8_t> payload; // at most kMaxPayload bytes
	bool operator==(const Frame &) const = default;
};

// CRC-32 (IEEE 802.3, as zlib's crc32) of the bytes.
uint32_t crc32(std::span<const uint8_t> bytes);

// Appends the frame's bytes to out; payload at most kMaxPayload bytes.
void encode(Kind kind, uint32_t link, uint32_t sequence, std::span<const uint8_t> payload, std::vector<uint8_t> &out);

class FrameDecoder {
public:
	// Takes the bytes that came; any amount (kept until decoded, at most
	// one frame's worth beyond what next() has consumed).
	void feed(std::span<const uint8_t> bytes);
	// The next whole, intact frame into out: true; false when more bytes
	// are needed. Noise before a marker, and a frame whose CRC, kind or
	// length is wrong (then the search resumes one byte after its marker),
	// are skipped and counted.
	bool next(Frame &out);
	// Bytes fed but not yet decoded or skipped.
	size_t pending() const { return buf_.size() - start_; }
	// Where the frame next() waits the rest of (its head came, whole and
	// plausible, its body and CRC not yet), counted in bytes fed since the
	// start; kNoPartial when it waits for no such frame. A line cut mid-frame
	// leaves one waiting for bytes that never come as its own: the line's end
	// gives it up when it has waited too long (serial_line).
	static constexpr uint64_t kNoPartial = UINT64_MAX;
	uint64_t partial_at() const;
	// Counts the waiting frame as bad and resumes the search one byte after
	// its marker, in the bytes that came since (found there again: what the
	// cut frame's length had claimed).
	void abandon_partial();

	uint64_t bytes_skipped = 0; // not part of an intact frame
	uint64_t frames_bad = 0;    // began with a marker but failed their checks

private:
	std::vector<uint8_t> buf_;
	size_t start_ = 0;
	uint64_t erased_ = 0; // bytes fed and dropped from buf_'s front
};

} // namespace tracery::control::serial
