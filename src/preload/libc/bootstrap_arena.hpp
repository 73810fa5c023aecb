// preload/libc/bootstrap_arena.hpp — the memory the libc helper hands out
// before it knows libc's allocator: while it looks up the next malloc with
// dlsym, which itself calls calloc. A fixed static array, carved with an
// atomic bump pointer (no lock: any thread, a signal handler too), never
// given back to libc: free ignores its blocks, realloc moves them out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tracery::preload {

class BootstrapArena {
public:
	static constexpr size_t kBytes = 16 * 1024;

	// A block of `size` bytes aligned to `alignment` (0, or a power of two
	// of at most 4096; at least max_align_t's), or null once the arena is
	// full or for another alignment.
	void *allocate(size_t size, size_t alignment) noexcept;
	bool owns(const void *p) const noexcept
	{
		// One comparison: an address below the arena wraps to a large offset.
		return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(bytes_) < kBytes;
	}
	// The size asked for the block at p (owns(p) must be true).
	size_t size_of(const void *p) const noexcept;

private:
	// Each block follows a header holding its size.
	struct Header {
		size_t size;
	};
	alignas(4096) unsigned char bytes_[kBytes];
	std::atomic<size_t> used_{0};
};

} // namespace tracery::preload
