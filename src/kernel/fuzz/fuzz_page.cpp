// kernel/fuzz/fuzz_page.cpp — libFuzzer target: arbitrary bytes as a page
// read from trace_pipe_raw (a partial read, a hostile or damaged page),
// decoded by PageDecoder (page_decoder.hpp) with this kernel's layout.
// Checks that decoding ends, that every payload lies inside the page's data,
// that each event takes at least 8 bytes of it, that a lost count is known
// only when events were lost, and that an error names an offset inside the
// bytes given.
#include "base/fuzz_check.hpp"
#include "kernel/page_decoder.hpp"

#include <span>

using namespace tracery::kernel;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_page", what); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const PageDecoder decoder{PageLayout{}};
	const uint8_t *begin = data + decoder.layout().data_offset;
	uint32_t events = 0;
	uint64_t payload_bytes = 0;
	const PageResult r = decoder.decode(std::span(data, size), [&](const RawEvent &e) {
		check(e.payload >= begin && e.payload + e.size <= data + size, "a payload outside the page");
		check(e.size % 4 == 0, "a payload not a multiple of 4 bytes");
		++events;
		payload_bytes += e.size;
	});
	check(r.events == events, "events counted are not events seen");
	if (size < decoder.layout().data_offset) {
		check(r.error != nullptr && events == 0, "a page shorter than its header decoded");
		return 0;
	}
	check(r.data_size <= size - decoder.layout().data_offset, "data beyond the page");
	check(payload_bytes + 4 * uint64_t{events} <= r.data_size, "events larger than the data");
	check(uint64_t{events} * 8 <= r.data_size, "an event shorter than 8 bytes");
	check(!r.lost_count_known || r.events_lost, "a lost count without lost events");
	check(r.error == nullptr || r.error_offset < size, "an error outside the page");
	return 0;
}
