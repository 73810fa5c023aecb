// base/fuzz_check.hpp — for libFuzzer targets: an invariant that must hold
// for every input; when it does not, the target says which and aborts, so
// that libFuzzer saves the input. And FuzzCuts: piece sizes drawn from the
// input itself, to feed a decoder the way recv() may cut a byte stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tracery::base {

inline void fuzz_check(bool ok, const char *target, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "%s: %s\n", target, what);
		std::abort();
	}
}

// Piece sizes from a hash of the input (FNV-1a, then xorshift): mostly small
// (1 to small), now and then one up to large. The same input gives the same cuts.
class FuzzCuts {
public:
	FuzzCuts(const uint8_t *data, size_t size, uint64_t rare, uint64_t small, uint64_t large)
		: rare_(rare), small_(small), large_(large)
	{
		for (size_t i = 0; i < size; i++)
			seed_ = (seed_ ^ data[i]) * 1099511628211ull;
	}
	size_t operator()()
	{
		seed_ ^= seed_ << 13;
		seed_ ^= seed_ >> 7;
		seed_ ^= seed_ << 17;
		return static_cast<size_t>(seed_ % rare_ == 0 ? 1 + seed_ % large_ : 1 + seed_ % small_);
	}

private:
	uint64_t seed_ = 1469598103934665603ull;
	uint64_t rare_, small_, large_;
};

} // namespace tracery::base
