// base/utf8.hpp — keeps every string Tracery writes valid UTF-8.
//
// CTF strings are UTF-8. Bytes that are not part of a well-formed UTF-8
// sequence (Unicode 15, table 3-7: no overlong forms, no surrogates, nothing
// above U+10FFFF) are replaced, one for one, by '?' (0x3F). The size never
// changes, so payload sizes can be computed without looking at the bytes,
// and text that is already valid UTF-8 (all ASCII in particular) is written
// unchanged. The check runs on the destination after the copy, so a string
// modified concurrently by the traced program still ends up valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tracery::base {

inline constexpr uint8_t kUtf8Replacement = '?';

// True if the n bytes at p are all < 0x80.
inline bool is_ascii(const uint8_t *p, size_t n) noexcept
{
	uint64_t acc = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		std::memcpy(&w, p + i, 8);
		acc |= w;
	}
	for (; i < n; ++i)
		acc |= p[i];
	return (acc & 0x8080808080808080ull) == 0;
}

// Replaces, in place, every byte of p[0..n) that is not part of a well-formed
// UTF-8 sequence by '?'. Returns the number of bytes replaced.
size_t sanitize_utf8_in_place(uint8_t *p, size_t n) noexcept;

// Copies n bytes from src to dst, then makes dst valid UTF-8 (see above).
inline void copy_utf8(uint8_t *dst, const void *src, size_t n) noexcept
{
	if (n == 0)
		return;
	std::memcpy(dst, src, n);
	if (!is_ascii(dst, n)) [[unlikely]]
		sanitize_utf8_in_place(dst, n);
}

// Returns s with invalid bytes replaced by '?'.
std::string sanitize_utf8(std::string_view s);

} // namespace tracery::base
