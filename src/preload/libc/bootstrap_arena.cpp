// preload/libc/bootstrap_arena.cpp — the bump allocator of the libc helper's
// first allocations (bootstrap_arena.hpp).
#include "preload/libc/bootstrap_arena.hpp"

#include <cstring>

namespace tracery::preload {

void *BootstrapArena::allocate(size_t size, size_t alignment) noexcept
{
	if ((alignment & (alignment - 1)) != 0 || alignment > 4096 || size > kBytes)
		return nullptr;
	if (alignment < alignof(max_align_t))
		alignment = alignof(max_align_t);
	size_t start = used_.load(std::memory_order_relaxed);
	for (;;) {
		// The block's start: aligned, with room for the header before it.
		const size_t block = (start + sizeof(Header) + alignment - 1) & ~(alignment - 1);
		if (block + size > kBytes || block + size < block)
			return nullptr;
		if (used_.compare_exchange_weak(start, block + size, std::memory_order_relaxed)) {
			const Header h{size};
			std::memcpy(bytes_ + block - sizeof(Header), &h, sizeof h);
			return bytes_ + block; // static storage: already zero, as calloc needs
		}
	}
}

size_t BootstrapArena::size_of(const void *p) const noexcept
{
	Header h;
	std::memcpy(&h, static_cast<const unsigned char *>(p) - sizeof(Header), sizeof h);
	return h.size;
}

} // namespace tracery::preload
