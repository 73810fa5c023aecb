// control/fuzz/fuzz_serial_frames.cpp — libFuzzer target: arbitrary bytes
// arriving on a serial line (noise, cut or corrupted frames;
// control/serial_frame.hpp). The bytes go to control::serial::FrameDecoder
// twice: in pieces of sizes drawn from the input's hash (as read() may cut
// them) and whole. Checks that both give the same frames and the same
// counts, that every byte is accounted for (in a frame, skipped, or still
// pending), that the decoder never holds more than a frame and a piece, and
// that each frame re-encoded gives back exactly the bytes it came from. A
// third pass gives up each frame still waiting at the end of a piece (as a
// line's end does after a cut) and checks the same accounting.
#include "base/fuzz_check.hpp"
#include "control/serial_frame.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace tracery::control::serial;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_serial_frames", what); }

struct Outcome {
	std::vector<std::vector<uint8_t>> frames; // each re-encoded
	uint64_t skipped = 0, bad = 0;
	bool operator==(const Outcome &) const = default;
};

template <typename Pieces>
Outcome decode(const uint8_t *data, size_t size, Pieces next_piece, bool give_up = false)
{
	Outcome out;
	FrameDecoder d;
	size_t at = 0, in_frames = 0;
	while (at < size) {
		const size_t n = std::min(size - at, next_piece());
		d.feed({data + at, n});
		at += n;
		Frame f;
		for (;;) {
			while (d.next(f)) {
				check(f.payload.size() <= kMaxPayload, "a payload over the maximum");
				std::vector<uint8_t> again;
				encode(f.kind, f.link, f.sequence, f.payload, again);
				const size_t begin = at - d.pending() - again.size();
				check(memcmp(again.data(), data + begin, again.size()) == 0,
				      "a frame re-encoded differs from its bytes");
				in_frames += again.size();
				out.frames.push_back(std::move(again));
			}
			const uint64_t waiting = d.partial_at();
			if (waiting == FrameDecoder::kNoPartial)
				break;
			check(waiting == at - d.pending(), "the waiting frame is not where the pending bytes begin");
			if (!give_up)
				break;
			const uint64_t bad = d.frames_bad;
			d.abandon_partial();
			check(d.frames_bad == bad + 1, "a frame given up is not counted");
		}
		check(d.bytes_skipped + in_frames + d.pending() == at, "the decoder lost or invented bytes");
		check(d.pending() < kMaxFrame, "the decoder holds more than a frame");
	}
	out.skipped = d.bytes_skipped;
	out.bad = d.frames_bad;
	return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const Outcome cut = decode(data, size, tracery::base::FuzzCuts(data, size, 17, 11, 4096));
	const Outcome whole = decode(data, size, [] { return SIZE_MAX; });
	check(cut == whole, "the frames depend on how the bytes were cut");
	decode(data, size, tracery::base::FuzzCuts(data, size, 17, 11, 4096), true);
	return 0;
}
