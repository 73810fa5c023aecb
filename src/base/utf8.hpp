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

namespace detail {
// The high bit of every byte of w that is 0 or >= 0x80 (exact for the first
// such byte; the word as a whole is nonzero exactly when there is one): a
// byte >= 0x80 sets its own, and without one, (w - 1s) & ~w sets that of a 0.
template <class Word>
inline Word not_plain_text(Word w) noexcept
{
	constexpr Word kOnes = static_cast<Word>(0x0101010101010101ull),
		       kHigh = static_cast<Word>(0x8080808080808080ull);
	return (w | ((w - kOnes) & ~w)) & kHigh;
}

// Copies one Word from src to dst; what the copy holds, checked.
template <class Word>
[[gnu::always_inline]] inline Word copy_word(uint8_t *dst, const uint8_t *src) noexcept
{
	Word w;
	std::memcpy(&w, src, sizeof w);
	std::memcpy(dst, &w, sizeof w);
	return not_plain_text(w);
}
} // namespace detail

// Replaces, in place, every byte of p[0..n) that is not part of a well-formed
// UTF-8 sequence by '?'. Returns the number of bytes replaced.
size_t sanitize_utf8_in_place(uint8_t *p, size_t n) noexcept;

// Copies the n bytes of a string's text to dst, where they must stay a CTF
// string of exactly n bytes before its NUL: the caller measured the text
// (strlen at a C call site), but the traced program may have changed it
// since. So the copy is checked as it is made, in the same pass: each word
// stored is checked for a NUL and for bytes that are not ASCII, and only then
// (rarely) are the bytes looked at one by one: a NUL becomes '?', and what is
// not well-formed UTF-8 too (see above). The record's size, computed from n,
// always holds. Words overlap at the end instead of finishing byte by byte.
inline void copy_string_text(uint8_t *dst, const void *source, size_t n) noexcept
{
	const auto *src = static_cast<const uint8_t *>(source);
	uint64_t flags = 0;
	if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8)
			flags |= detail::copy_word<uint64_t>(dst + i, src + i);
		flags |= detail::copy_word<uint64_t>(dst + n - 8, src + n - 8);
	} else if (n >= 4) {
		flags = detail::copy_word<uint32_t>(dst, src) | detail::copy_word<uint32_t>(dst + n - 4, src + n - 4);
	} else {
		for (size_t i = 0; i < n; ++i) {
			dst[i] = src[i];
			flags |= dst[i] == 0 || dst[i] >= 0x80;
		}
	}
	if (flags) [[unlikely]] {
		for (size_t i = 0; i < n; ++i)
			if (dst[i] == 0)
				dst[i] = kUtf8Replacement;
		sanitize_utf8_in_place(dst, n);
	}
}

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
