// test_internals.hpp — test-only white-box access to a channel's control words (write positions, commit
// counters), through a second mapping of the channel, for the ring buffer's unit and rseq tests.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ringbuf/ring_buffer.hpp"

namespace tracery::ringbuf::testing {

// White-box view of a channel's control words through a second mapping (layout of ring_buffer.hpp's
// detail namespace): the write position of each buffer and the two commit counters of each slot.
class Internals {
public:
	explicit Internals(const Channel &ch) : size_(ch.mapping_size()), num_subbuf_(ch.config().num_subbuf)
	{
		void *m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, ch.fd(), 0);
		if (m == MAP_FAILED)
			return;
		map_ = static_cast<uint8_t *>(m);
		const auto *h = reinterpret_cast<const detail::ChannelHeader *>(map_);
		buffers_ = map_ + h->buffers_offset;
		stride_ = h->buffer_header_size;
	}
	~Internals()
	{
		if (map_)
			munmap(map_, size_);
	}
	Internals(const Internals &) = delete;
	Internals &operator=(const Internals &) = delete;
	bool ok() const { return map_ != nullptr; }
	uint64_t write_offset(uint32_t cpu) const
	{
		return detail::load(
			reinterpret_cast<const detail::BufferHot *>(buffers_ + cpu * stride_)->write.offset);
	}
	uint64_t prefix(uint32_t cpu, uint32_t slot) const { return detail::load(state(cpu, slot).commit_prefix); }
	uint64_t ooo(uint32_t cpu, uint32_t slot) const { return detail::load(state(cpu, slot).commit_ooo); }
	// Sets a slot's two commit counters, to put the channel in a state that only a writer stopped at a given
	// instruction could leave.
	void set_commit(uint32_t cpu, uint32_t slot, uint64_t prefix, uint64_t ooo)
	{
		detail::store(state(cpu, slot).commit_ooo, ooo);
		detail::store(state(cpu, slot).commit_prefix, prefix);
	}
	// What a program scribbling on its mapping can change: a buffer's consumed position and write position, a
	// slot's sequence number; and the raw bytes of the whole mapping (header, control words and data).
	// (Plain copies: only for a channel no other thread uses meanwhile.)
	void set_consumed(uint32_t cpu, uint64_t v)
	{
		put(cpu * stride_ + sizeof(detail::BufferHot) + offsetof(detail::BufferCold, consumed), v);
	}
	void set_write_offset(uint32_t cpu, uint64_t v) { put(cpu * stride_ + offsetof(detail::BufferHot, write), v); }
	void set_seq(uint32_t cpu, uint32_t slot, uint64_t v)
	{
		put(cpu * stride_ + sizeof(detail::BufferHeader) + slot * sizeof(detail::SubbufState) +
		            offsetof(detail::SubbufState, seq),
		    v);
	}
	uint8_t *raw() const { return map_; }
	std::size_t raw_size() const { return size_; }
	// Bytes committed of sub-buffer k once it is its slot's current one: the prefix's part and the out-of-order ones.
	uint64_t committed(uint32_t cpu, uint64_t k, uint64_t S) const
	{
		const uint32_t slot = static_cast<uint32_t>(k % num_subbuf_);
		return prefix(cpu, slot) - k * S + ooo(cpu, slot);
	}

	// With no writer left and every buffer flushed, every sub-buffer ever opened is complete: the prefix of slot i
	// lies in its last sub-buffer and, with the out-of-order counter, counts exactly S of it; a slot never used
	// still has its initial prefix (the start of its first sub-buffer) and nothing out of order. A commit counted
	// twice or lost, or a reopening that moved bytes wrongly between the two, shows here. Returns "" or the first
	// discrepancy; accumulates the last sub-buffers' bytes committed in order and out of order.
	std::string check_counters(uint32_t num_cpus, uint64_t S, uint64_t &in_order_bytes, uint64_t &ooo_bytes) const
	{
		for (uint32_t cpu = 0; cpu < num_cpus; ++cpu) {
			const uint64_t w = write_offset(cpu);
			if (w % S != 0)
				return "cpu " + std::to_string(cpu) + ": write offset " + std::to_string(w) +
				       " is not at a sub-buffer boundary after the final flush";
			const uint64_t opened = w / S;
			for (uint32_t i = 0; i < num_subbuf_; ++i) {
				const std::string where =
					"cpu " + std::to_string(cpu) + " slot " + std::to_string(i) + ": ";
				const uint64_t p = prefix(cpu, i), o = ooo(cpu, i);
				if (i >= opened) {
					if (p != i * S || o != 0)
						return where + "never used, but prefix " + std::to_string(p) + " and " +
						       std::to_string(o) + " bytes out of order";
					continue;
				}
				const uint64_t last =
					i + (opened - 1 - i) / num_subbuf_ * num_subbuf_; // its last sub-buffer
				if (p < last * S || p > last * S + S)
					return where + "prefix " + std::to_string(p) + " outside its last sub-buffer " +
					       std::to_string(last);
				if (p - last * S + o != S)
					return where + "prefix part " + std::to_string(p - last * S) +
					       " + out of order " + std::to_string(o) + " != " + std::to_string(S);
				in_order_bytes += p - last * S;
				ooo_bytes += o;
			}
		}
		return {};
	}

private:
	// Stores v at `offset` from the first buffer header.
	void put(uint64_t offset, uint64_t v)
	{
		if (!buffers_)
			std::abort(); // the constructor's mapping failed: ok() said so
		std::memcpy(buffers_ + offset, &v, sizeof v);
	}
	detail::SubbufState &state(uint32_t cpu, uint32_t slot) const
	{
		return reinterpret_cast<detail::SubbufState *>(buffers_ + cpu * stride_ +
		                                               sizeof(detail::BufferHeader))[slot];
	}
	std::size_t size_;
	uint32_t num_subbuf_;
	uint8_t *map_ = nullptr;
	uint8_t *buffers_ = nullptr;
	uint64_t stride_ = 0;
};

} // namespace tracery::ringbuf::testing
