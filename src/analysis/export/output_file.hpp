// analysis/export/output_file.hpp — the exports' output file: written whole
// (every byte, through EINTR), errors naming the file.
#pragma once

#include <cstddef>
#include <string>

namespace tracery::analysis {

// Writes all n bytes to fd; throws std::runtime_error naming what (the
// output file) on an error.
void write_all(int fd, const void *p, size_t n, const std::string &what);

} // namespace tracery::analysis
