// analysis/output/numbers.cpp — doubles as text (see numbers.hpp).
#include "analysis/output/numbers.hpp"

#include <charconv>
#include <cstdio>

namespace tracery::analysis {

char *put_double_g(char *p, double v)
{
	// (at most "-1.23457e+308": 13 bytes, and the NUL)
	return p + snprintf(p, 32, "%g", v);
}

char *put_double_shortest(char *p, double v) { return std::to_chars(p, p + 32, v).ptr; }

} // namespace tracery::analysis
