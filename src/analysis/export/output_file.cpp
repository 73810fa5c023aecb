// analysis/export/output_file.cpp — writing the exports' output file (see
// output_file.hpp).
#include "analysis/export/output_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace tracery::analysis {

void write_all(int fd, const void *p, size_t n, const std::string &what)
{
	const auto *b = static_cast<const uint8_t *>(p);
	while (n) {
		const ssize_t w = ::write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			throw std::runtime_error("cannot write " + what + ": " + strerror(errno));
		}
		b += w;
		n -= static_cast<size_t>(w);
	}
}

} // namespace tracery::analysis
