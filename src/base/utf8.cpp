// base/utf8.cpp — UTF-8 validation used to sanitize trace strings (see utf8.hpp).
#include "base/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace tracery::base {

namespace {

// Length of the well-formed UTF-8 sequence starting at p[0] (n > 0 bytes
// available), or 0 if p[0] does not start one.
size_t well_formed_length(const uint8_t *p, size_t n) noexcept
{
	const uint8_t b0 = p[0];
	if (b0 < 0x80)
		return 1;
	auto cont = [&](size_t i, uint8_t lo = 0x80, uint8_t hi = 0xBF) { return i < n && p[i] >= lo && p[i] <= hi; };
	if (b0 >= 0xC2 && b0 <= 0xDF)
		return cont(1) ? 2 : 0;
	if (b0 == 0xE0)
		return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
	if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF)
		return cont(1) && cont(2) ? 3 : 0;
	if (b0 == 0xED)
		return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
	if (b0 == 0xF0)
		return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
	if (b0 >= 0xF1 && b0 <= 0xF3)
		return cont(1) && cont(2) && cont(3) ? 4 : 0;
	if (b0 == 0xF4)
		return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
	return 0;
}

} // namespace

size_t sanitize_utf8_in_place(uint8_t *p, size_t n) noexcept
{
	size_t replaced = 0;
	size_t i = 0;
	while (i < n) {
		// ASCII, eight bytes at a time (most trace strings are).
		if (n - i >= 8) {
			uint64_t word;
			std::memcpy(&word, p + i, 8);
			if ((word & 0x8080808080808080u) == 0) {
				i += 8;
				continue;
			}
		}
		if (p[i] < 0x80) {
			++i;
			continue;
		}
		size_t len = well_formed_length(p + i, n - i);
		if (len == 0) {
			p[i] = kUtf8Replacement;
			++replaced;
			len = 1;
		}
		i += len;
	}
	return replaced;
}

std::string sanitize_utf8(std::string_view s)
{
	std::string out(s);
	if (!out.empty())
		sanitize_utf8_in_place(reinterpret_cast<uint8_t *>(out.data()), out.size());
	return out;
}

} // namespace tracery::base
