// control/fuzz/fuzz_relay_frames.cpp — libFuzzer target: arbitrary bytes a
// hostile sender could put on a relay connection (docs/relay-protocol.md).
// The bytes go to control::relay::Decoder twice: in pieces of sizes drawn
// from the input's hash (as recv() may cut them) and whole. Checks that both
// give the same frames and the same error, that an error says why, that the
// decoder never holds more than the frame it is reading plus one piece, that
// every frame accepted passes frame_error(), and that encoding it again gives
// back exactly the bytes it was decoded from (one encoding per frame).
#include "base/fuzz_check.hpp"
#include "control/relay_protocol.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace tracery::control::relay;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_relay_frames", what); }

struct Outcome {
	std::vector<std::vector<uint8_t>> frames; // each re-encoded
	std::string error;
	bool operator==(const Outcome &) const = default;
};

template <typename Pieces>
Outcome decode(const uint8_t *data, size_t size, Pieces next_piece)
{
	Outcome out;
	Decoder d;
	size_t at = 0, consumed = 0;
	while (at < size) {
		const size_t n = std::min(size - at, next_piece());
		d.feed({data + at, n});
		at += n;
		Frame f;
		Decoder::Status st;
		while ((st = d.next(f)) == Decoder::Status::frame) {
			check(frame_error(f).empty(), "a frame accepted that frame_error() refuses");
			std::vector<uint8_t> again = encode(f);
			check(again.size() <= at - consumed, "a frame longer than the bytes left");
			check(memcmp(again.data(), data + consumed, again.size()) == 0,
			      "a frame re-encoded differs from its bytes");
			consumed += again.size();
			out.frames.push_back(std::move(again));
		}
		if (st == Decoder::Status::error) {
			check(!d.error().empty(), "an error without a reason");
			out.error = d.error();
			return out;
		}
		check(d.buffered() == at - consumed, "the decoder lost or invented bytes");
		check(d.buffered() < kHeaderSize + kMaxBody + n, "the decoder holds more than a frame and a piece");
	}
	return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const Outcome cut = decode(data, size, tracery::base::FuzzCuts(data, size, 17, 11, 4096));
	const Outcome whole = decode(data, size, [] { return SIZE_MAX; });
	check(cut == whole, "the frames depend on how the bytes were cut");
	return 0;
}
