// base/fd.cpp — see fd.hpp.
#include "base/fd.hpp"

#include <unistd.h>

namespace tracery::base {

void Fd::reset(int fd) noexcept
{
	if (fd_ >= 0)
		::close(fd_);
	fd_ = fd;
}

} // namespace tracery::base
