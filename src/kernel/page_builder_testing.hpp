// kernel/page_builder_testing.hpp — for the kernel component's tests: builds
// ring-buffer pages byte by byte, as the kernel writes them (see the layout
// in page_decoder.hpp), including what a live trace rarely shows on demand:
// time extends, absolute timestamps, padding and lost-event counts.
#pragma once

#include "base/byte_order.hpp"
#include "kernel/page_decoder.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace tracery::kernel::test_support {

class PageBuilder {
public:
	explicit PageBuilder(uint64_t page_timestamp, uint32_t page_size = 4096) : page_(page_size, 0)
	{
		base::store_le<uint64_t>(page_.data(), page_timestamp);
	}

	// A data event with `payload` (padded to 4 bytes); long ones (or
	// force_long) carry their length in the next word (type_len 0).
	PageBuilder &event(uint32_t delta, const std::vector<uint8_t> &payload, bool force_long = false)
	{
		const uint32_t len = (static_cast<uint32_t>(payload.size()) + 3) & ~3u;
		if (len == 0 || len > 28 * 4 || force_long) {
			word(delta << 5);
			word(len + 4);
		} else {
			word(delta << 5 | len / 4);
		}
		const size_t at = size_;
		size_ += len;
		for (size_t i = 0; i < payload.size(); ++i)
			page_.at(at + i) = payload[i];
		return *this;
	}
	// A payload whose first bytes are the common fields. Not inlined: GCC 12 at -O2/-O3, inlining it into a
	// test with an empty `rest`, takes the bytes after the first 8 for out of bounds (-Warray-bounds,
	// -Wstringop-overflow: false positives).
	[[gnu::noinline]] static std::vector<uint8_t> payload(uint16_t type, int32_t pid,
	                                                      std::vector<uint8_t> rest = {})
	{
		std::vector<uint8_t> p(8 + rest.size(), 0);
		base::store_le<uint16_t>(p.data(), type);
		base::store_le<int32_t>(p.data() + 4, pid);
		if (!rest.empty())
			std::memcpy(p.data() + 8, rest.data(), rest.size());
		return p;
	}
	PageBuilder &time_extend(uint64_t delta)
	{
		word(static_cast<uint32_t>(delta & ((1u << 27) - 1)) << 5 | kTypeTimeExtend);
		return word(static_cast<uint32_t>(delta >> 27));
	}
	PageBuilder &absolute(uint64_t ts)
	{
		word(static_cast<uint32_t>(ts & ((1u << 27) - 1)) << 5 | kTypeTimeStamp);
		return word(static_cast<uint32_t>((ts >> 27) & 0xffffffffu));
	}
	// A discarded event: padding of `bytes` after its length word.
	PageBuilder &padding(uint32_t delta, uint32_t bytes)
	{
		word(delta << 5 | kTypePadding);
		word(bytes);
		size_ += bytes - 4;
		return *this;
	}
	// The commit word; lost: events lost before the page, -1 for "some,
	// count not stored".
	std::vector<uint8_t> finish(int64_t lost = 0) const
	{
		std::vector<uint8_t> page = page_;
		uint64_t commit = size_ - 16;
		if (lost != 0)
			commit |= kCommitMissedEvents;
		if (lost > 0) {
			commit |= kCommitMissedStored;
			base::store_le<uint64_t>(page.data() + size_, static_cast<uint64_t>(lost));
		}
		base::store_le<uint64_t>(page.data() + 8, commit);
		return page;
	}
	PageBuilder &word(uint32_t w)
	{
		base::store_le<uint32_t>(&page_.at(size_ + 3) - 3, w);
		size_ += 4;
		return *this;
	}
	uint32_t data_size() const { return static_cast<uint32_t>(size_ - 16); }

private:
	std::vector<uint8_t> page_;
	size_t size_ = 16;
};

} // namespace tracery::kernel::test_support
