// base/fuzz_check.hpp — for libFuzzer targets: an invariant that must hold
// for every input; when it does not, the target says which and aborts, so
// that libFuzzer saves the input.
#pragma once

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

} // namespace tracery::base
