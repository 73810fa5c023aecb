// relay/memory_budget.hpp — the one budget of what tracery-relayd holds from
// its senders: the bytes of frames still arriving and the frames queued for
// the writer threads. The event loop charges it before each read and for
// each frame it queues; a writer thread releases a frame's charge once it
// has written it (or dropped it). A connection that cannot have its read
// charged is not read (TCP holds its sender) until memory is released; the
// loop serves those in the order they came (docs/relay-protocol.md, Limits).
#pragma once

#include "control/relay_protocol.hpp"

#include <atomic>
#include <cstddef>

namespace tracery::relay {

// What a queued frame costs beyond the bytes it came in: the decoded frame
// itself, its place in the queue and its allocations' headers.
inline constexpr size_t kFrameOverhead = sizeof(control::relay::Frame) + 64;

// Charged for a frame of `received` bytes (header and body) from its
// decoding to its writing.
inline constexpr size_t frame_charge(size_t received) { return received + kFrameOverhead; }

class MemoryBudget {
public:
	explicit MemoryBudget(size_t limit) : limit_(limit) {}
	MemoryBudget(const MemoryBudget &) = delete;
	MemoryBudget &operator=(const MemoryBudget &) = delete;

	size_t limit() const { return limit_; }
	size_t used() const { return used_.load(std::memory_order_acquire); }
	// What may still be charged (0 once the limit is reached or passed).
	size_t room() const
	{
		const size_t u = used();
		return u < limit_ ? limit_ - u : 0;
	}
	// The loop only: charges may pass the limit (a read's frames are charged
	// whole); reads are granted only from room().
	void charge(size_t bytes) { used_.fetch_add(bytes, std::memory_order_acq_rel); }
	// Any thread.
	void release(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_acq_rel); }

private:
	const size_t limit_;
	std::atomic<size_t> used_{0};
};

} // namespace tracery::relay
