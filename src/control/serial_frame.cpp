// control/serial_frame.cpp — see serial_frame.hpp.
#include "control/serial_frame.hpp"

#include "base/byte_order.hpp"

#include <algorithm>
#include <array>

namespace tracery::control::serial {

namespace {

constexpr std::array<uint32_t, 256> make_crc_table()
{
	std::array<uint32_t, 256> table{};
	for (uint32_t i = 0; i < 256; ++i) {
		uint32_t c = i;
		for (int bit = 0; bit < 8; ++bit)
			c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

template <class T>
void put_le(std::vector<uint8_t> &out, T v)
{
	out.resize(out.size() + sizeof v);
	base::store_le(out.data() + out.size() - sizeof v, v);
}

} // namespace

uint32_t crc32(std::span<const uint8_t> bytes)
{
	uint32_t c = 0xFFFFFFFFu;
	for (const uint8_t b : bytes)
		c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

void encode(Kind kind, uint32_t link, uint32_t sequence, std::span<const uint8_t> payload, std::vector<uint8_t> &out)
{
	const size_t begin = out.size();
	out.insert(out.end(), std::begin(kMarker), std::end(kMarker));
	out.push_back(static_cast<uint8_t>(kind));
	out.push_back(0); // flags
	put_le(out, link);
	put_le(out, sequence);
	put_le(out, static_cast<uint16_t>(payload.size()));
	out.insert(out.end(), payload.begin(), payload.end());
	put_le(out, crc32({out.data() + begin, out.size() - begin}));
}

void FrameDecoder::feed(std::span<const uint8_t> bytes)
{
	// Drop what was consumed before the buffer grows.
	if (start_ > 0 && (start_ == buf_.size() || start_ >= kMaxFrame)) {
		buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
		erased_ += start_;
		start_ = 0;
	}
	buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

// A frame head at `f` (at least kFrameHead bytes) that could begin a frame.
static bool plausible_head(const uint8_t *f)
{
	return std::equal(std::begin(kMarker), std::end(kMarker), f) && f[4] >= 1 && f[4] <= kLastKind && f[5] == 0 &&
	       base::load_le<uint16_t>(f + 14) <= kMaxPayload;
}

uint64_t FrameDecoder::partial_at() const
{
	const size_t left = buf_.size() - start_;
	if (left < kFrameHead || !plausible_head(buf_.data() + start_))
		return kNoPartial;
	const size_t length = base::load_le<uint16_t>(buf_.data() + start_ + 14);
	return left < kFrameHead + length + kFrameTail ? erased_ + start_ : kNoPartial;
}

void FrameDecoder::abandon_partial()
{
	if (partial_at() == kNoPartial)
		return;
	++frames_bad;
	++bytes_skipped;
	++start_;
}

bool FrameDecoder::next(Frame &out)
{
	for (;;) {
		const uint8_t *data = buf_.data() + start_;
		const size_t have = buf_.size() - start_;
		// Up to the next marker (or a tail that may begin one).
		const uint8_t *found = std::search(data, data + have, std::begin(kMarker), std::end(kMarker));
		size_t skip = static_cast<size_t>(found - data);
		if (found == data + have) {
			// Keep the last bytes: they may be the start of a marker.
			skip = have > sizeof kMarker - 1 ? have - (sizeof kMarker - 1) : 0;
			bytes_skipped += skip;
			start_ += skip;
			return false;
		}
		bytes_skipped += skip;
		start_ += skip;
		const uint8_t *f = buf_.data() + start_;
		const size_t left = buf_.size() - start_;
		if (left < kFrameHead)
			return false;
		const uint8_t kind = f[4];
		const size_t length = base::load_le<uint16_t>(f + 14);
		const bool head_ok = plausible_head(f);
		if (head_ok && left < kFrameHead + length + kFrameTail)
			return false;
		if (!head_ok || crc32({f, kFrameHead + length}) != base::load_le<uint32_t>(f + kFrameHead + length)) {
			// Not a frame: look for the next marker after this one.
			++frames_bad;
			++bytes_skipped;
			++start_;
			continue;
		}
		out.kind = static_cast<Kind>(kind);
		out.link = base::load_le<uint32_t>(f + 6);
		out.sequence = base::load_le<uint32_t>(f + 10);
		out.payload.assign(f + kFrameHead, f + kFrameHead + length);
		start_ += kFrameHead + length + kFrameTail;
		return true;
	}
}

} // namespace tracery::control::serial
