// relay/test_soft_limit.hpp — for the relay's unit tests: a resource limit
// of this process lowered for a scope (out of address space, descriptors,
// or file size: a disk that refuses writes with EFBIG, SIGXFSZ ignored).
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

namespace tracery::relay {

struct SoftLimit {
	int resource;
	rlimit old{};
	struct sigaction old_xfsz {};
	SoftLimit(int r, rlim_t soft) : resource(r)
	{
		if (r == RLIMIT_FSIZE) { // a write past the limit then fails with EFBIG
			struct sigaction ignore {};
			ignore.sa_handler = SIG_IGN;
			::sigaction(SIGXFSZ, &ignore, &old_xfsz);
		}
		::getrlimit(r, &old);
		rlimit now = old;
		now.rlim_cur = soft;
		EXPECT_EQ(::setrlimit(r, &now), 0);
	}
	~SoftLimit()
	{
		::setrlimit(resource, &old);
		if (resource == RLIMIT_FSIZE)
			::sigaction(SIGXFSZ, &old_xfsz, nullptr);
	}
	SoftLimit(const SoftLimit &) = delete;
	SoftLimit &operator=(const SoftLimit &) = delete;
};

} // namespace tracery::relay
