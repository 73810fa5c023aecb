// relay/fuzz/fuzz_live_requests.cpp — libFuzzer target: arbitrary bytes a
// hostile viewer could send to tracery-relayd's --live-port (the lttng-live
// viewer protocol, control/live_protocol.hpp). The relay parses a viewer's
// buffer one request at a time, as the bytes arrive; this does the same
// with the input cut in pieces drawn from its hash, and whole. Checks that
// both give the same requests and the same error, that an error says why,
// that parsing never consumes more than it was given nor less than a
// header, that needs_more comes only before a whole request, and that each
// request encodes back to exactly the bytes it was parsed from.
#include "base/fuzz_check.hpp"
#include "control/live_protocol.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace tracery::control::live;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_live_requests", what); }

struct Outcome {
	std::vector<Request> requests;
	std::string error;
	bool operator==(const Outcome &) const = default;
};

template <typename Pieces>
Outcome parse(const uint8_t *data, size_t size, Pieces next_piece)
{
	Outcome out;
	std::vector<uint8_t> buffer; // what the relay holds of one viewer
	size_t at = 0;
	while (at < size) {
		const size_t n = std::min(size - at, next_piece());
		buffer.insert(buffer.end(), data + at, data + at + n);
		at += n;
		for (;;) {
			Request r;
			size_t used = 0;
			std::string why;
			const ParseStatus st = parse_request(buffer, &r, &used, &why);
			if (st == ParseStatus::needs_more) {
				check(used == 0, "needs_more consumed bytes");
				break;
			}
			if (st == ParseStatus::error) {
				check(!why.empty(), "an error without a reason");
				out.error = why;
				return out;
			}
			check(used >= kHeaderSize && used <= buffer.size(), "a request of a size it was not given");
			check(used == kHeaderSize + payload_size(r.cmd),
			      "a request of another size than its command's");
			const std::vector<uint8_t> again = encode_request(r);
			// The command version is not kept: the rest must match.
			check(again.size() == used && memcmp(again.data(), buffer.data(), 12) == 0 &&
			              memcmp(again.data() + kHeaderSize, buffer.data() + kHeaderSize,
			                     used - kHeaderSize) == 0,
			      "a request re-encoded differs from its bytes");
			if (r.cmd == Command::get_packet)
				check(r.length > 0 && r.length <= kMaxPacketRead,
				      "a GET_PACKET of a length out of bounds");
			buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(used));
			out.requests.push_back(r);
		}
		check(buffer.size() < kHeaderSize + 20, "more than a request left unparsed");
	}
	return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const Outcome cut = parse(data, size, tracery::base::FuzzCuts(data, size, 17, 7, 64));
	const Outcome whole = parse(data, size, [] { return SIZE_MAX; });
	check(cut == whole, "the requests depend on how the bytes were cut");
	return 0;
}
