// kernel/page_decoder.hpp — decodes one page of a tracefs ring buffer (what
// a read() of per_cpu/cpuN/trace_pipe_raw returns) into timestamped events.
//
// A page (layout from events/header_page; here: 4096 bytes):
//
//   0  u64 timestamp        time of the page's first event (trace clock)
//   8  u64 commit           bits 0-26: bytes of data
//                           bit 31: events were lost before this page
//                           bit 30: their count is stored after the data
//  16  data                 events, back to back, 4-byte aligned
//  16+size  u64 lost        (bit 30 only) events lost before this page
//
// An event (layout from events/header_event), little-endian u32 header
// {type_len:5, time_delta:27}, then:
//
//   type_len 1..28   payload of type_len*4 bytes; time += time_delta
//   type_len 0       u32 length L (including itself), payload of L-4 bytes
//                    rounded up to 4; time += time_delta
//   29 padding       time_delta 0: the rest of the page is padding (end);
//                    else u32 length L: skip L bytes after the header word,
//                    time += time_delta (a discarded event keeps its delta)
//   30 time extend   u32 high: time += high << 27 | time_delta
//   31 absolute      u32 high: time = high << 27 | time_delta, its top 5
//                    bits (which the kernel does not store) from the time
//                    before it
//
// These are libtraceevent's rules (kbuffer-parse.c), which the oracle test
// (page_decoder_oracle_test.cpp) checks byte for byte. The payload starts
// with the common fields: u16 common_type (the event's ID), u8 flags, u8
// preempt_count, s32 pid.
//
// The bytes are untrusted (a hostile or buggy kernel, a fuzzer): decode()
// never reads outside the span it is given; each step consumes at least 4
// bytes, so a page of N bytes takes at most N/4 steps; a malformed page
// ends decoding with an error naming the offset, keeping the events before
// it. Hot path: decode() is a template, inlined into its caller, with no
// allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/byte_order.hpp"
#include "kernel/format.hpp"

namespace tracery::kernel {

// The page and event header layout this decoder reads (checked against the
// kernel's events/header_page and events/header_event by make_page_layout).
struct PageLayout {
	uint32_t timestamp_offset = 0;
	uint32_t commit_offset = 8;
	uint32_t commit_size = 8;
	uint32_t data_offset = 16;
	uint32_t page_size = 4096;
};

// Throws FormatError if the event header is not the one described above
// (type_len 5 bits, 28 data types, 29/30/31 special).
PageLayout make_page_layout(const PageHeaderFormat &page, const EventHeaderFormat &event);

inline constexpr uint64_t kCommitSizeMask = (uint64_t{1} << 27) - 1;
inline constexpr uint64_t kCommitMissedEvents = uint64_t{1} << 31;
inline constexpr uint64_t kCommitMissedStored = uint64_t{1} << 30;
inline constexpr uint32_t kTypePadding = 29;
inline constexpr uint32_t kTypeTimeExtend = 30;
inline constexpr uint32_t kTypeTimeStamp = 31;
inline constexpr unsigned kTimeShift = 27;
inline constexpr uint64_t kTimeStampMsb = uint64_t{0xf8} << 56;

struct RawEvent {
	uint64_t timestamp;
	const uint8_t *payload; // inside the page
	uint32_t size;          // payload bytes (4-byte multiple: may end in padding)
};

struct PageResult {
	uint64_t page_timestamp = 0;
	uint32_t data_size = 0;   // from the commit word (clamped to the page)
	uint32_t events = 0;      // data events decoded
	bool events_lost = false; // events were lost before this page
	bool lost_count_known = false;
	uint64_t lost = 0;           // their number, if known
	uint64_t last_timestamp = 0; // time after the last step decoded
	const char *error = nullptr; // static text; nullptr if the page was whole
	uint32_t error_offset = 0;   // where in the page it went wrong
};

class PageDecoder {
public:
	explicit PageDecoder(const PageLayout &layout) noexcept : layout_(layout) {}
	const PageLayout &layout() const noexcept { return layout_; }

	// Calls on_event(const RawEvent &) for each data event of `page`, in
	// order. `page` may be shorter than a page (a partial read): then only
	// what it holds is decoded, and a commit size beyond it is an error.
	template <class OnEvent>
	PageResult decode(std::span<const uint8_t> page, OnEvent &&on_event) const noexcept;

private:
	PageLayout layout_;
};

template <class OnEvent>
PageResult PageDecoder::decode(std::span<const uint8_t> page, OnEvent &&on_event) const noexcept
{
	PageResult r;
	const size_t n = page.size();
	if (n < layout_.data_offset) {
		r.error = "shorter than the page header";
		return r;
	}
	const uint8_t *p = page.data();
	r.page_timestamp = base::load_le<uint64_t>(p + layout_.timestamp_offset);
	const uint64_t commit = layout_.commit_size == 8 ? base::load_le<uint64_t>(p + layout_.commit_offset)
	                                                 : base::load_le<uint32_t>(p + layout_.commit_offset);
	const size_t room = n - layout_.data_offset;
	uint64_t size = commit & kCommitSizeMask;
	r.events_lost = (commit & kCommitMissedEvents) != 0;
	if (size > room) {
		r.error = "commit size beyond the page";
		r.error_offset = layout_.commit_offset;
		size = room;
	}
	r.data_size = static_cast<uint32_t>(size);
	const uint8_t *data = p + layout_.data_offset;
	if (r.events_lost && (commit & kCommitMissedStored)) {
		if (room - size >= 8) {
			r.lost_count_known = true;
			r.lost = base::load_le<uint64_t>(data + size);
		} else if (!r.error) {
			r.error = "lost-event count beyond the page";
			r.error_offset = layout_.commit_offset; // whose flag claims it
		}
	}
	uint64_t ts = r.page_timestamp;
	size_t off = 0;
	const auto fail = [&](const char *why) {
		if (!r.error) {
			r.error = why;
			r.error_offset = static_cast<uint32_t>(layout_.data_offset + off);
		}
	};
	while (off + 4 <= size) {
		const uint32_t word = base::load_le<uint32_t>(data + off);
		const uint32_t type_len = word & 31;
		const uint32_t delta = word >> 5;
		if (type_len >= 1 && type_len < kTypePadding) [[likely]] {
			const uint32_t len = type_len * 4;
			if (len > size - off - 4) {
				fail("event beyond the data");
				break;
			}
			ts += delta;
			on_event(RawEvent{ts, data + off + 4, len});
			++r.events;
			off += 4 + len;
			continue;
		}
		if (type_len == kTypePadding && delta == 0)
			break; // the rest of the page is padding
		if (size - off < 8) {
			fail("event header beyond the data");
			break;
		}
		const uint32_t array0 = base::load_le<uint32_t>(data + off + 4);
		if (type_len == 0) {
			// array0 counts itself and the payload.
			if (array0 < 4 || array0 > size - off - 4) {
				fail("event length beyond the data");
				break;
			}
			const uint32_t len = ((array0 - 4) + 3) & ~uint32_t{3};
			if (len > size - off - 8) {
				fail("event beyond the data");
				break;
			}
			ts += delta;
			on_event(RawEvent{ts, data + off + 8, len});
			++r.events;
			off += 8 + len;
		} else if (type_len == kTypePadding) {
			if (array0 < 4 || array0 > size - off - 4) {
				fail("padding length beyond the data");
				break;
			}
			ts += delta;
			off += 4 + size_t{array0};
		} else if (type_len == kTypeTimeExtend) {
			ts += (uint64_t{array0} << kTimeShift) | delta;
			off += 8;
		} else { // kTypeTimeStamp
			ts = ((uint64_t{array0} << kTimeShift) | delta) | (ts & kTimeStampMsb);
			off += 8;
		}
	}
	r.last_timestamp = ts;
	return r;
}

} // namespace tracery::kernel
