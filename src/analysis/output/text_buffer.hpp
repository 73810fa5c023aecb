// analysis/output/text_buffer.hpp — a growable byte buffer for text written
// fast: room reserved once, then bytes stored through a pointer without a
// check per byte; short pieces copied with overlapping word stores;
// numbers from digit tables (numbers.hpp); strings quoted with C's escapes
// as babeltrace2 writes them, sixteen bytes checked at a time.
//
//   TextBuffer b;
//   b.lit("{ a = ");  b.put_unsigned(42);  b.put(name);
//   put_quoted_c(b, text.data(), text.size());     // "a\tb" with its quotes
//   b.reserve(30); char *p = b.ptr(); ...; b.ptr() = p;   // direct stores
//
// TextWriter (text_writer.hpp) writes such buffers to a file descriptor.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "analysis/output/numbers.hpp"

namespace tracery::analysis {

// memcpy for the short pieces of a line (names, digits), inline: overlapping
// word copies instead of a call.
inline void copy_short(char *d, const char *s, size_t n)
{
	if (n >= 8) {
		if (n > 16) {
			std::memcpy(d, s, n);
			return;
		}
		uint64_t a, b;
		std::memcpy(&a, s, 8);
		std::memcpy(&b, s + n - 8, 8);
		std::memcpy(d, &a, 8);
		std::memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		std::memcpy(&a, s, 4);
		std::memcpy(&b, s + n - 4, 4);
		std::memcpy(d, &a, 4);
		std::memcpy(d + n - 4, &b, 4);
	} else {
		for (size_t i = 0; i < n; ++i)
			d[i] = s[i];
	}
}

class TextBuffer {
public:
	TextBuffer() { grow(kInitial); }
	TextBuffer(const TextBuffer &) = delete;
	TextBuffer &operator=(const TextBuffer &) = delete;

	char *data() const { return b_.get(); }
	size_t size() const { return static_cast<size_t>(p_ - b_.get()); }
	std::string_view view() const { return {data(), size()}; }
	void clear() { p_ = b_.get(); }
	// Room for n more bytes.
	void reserve(size_t n)
	{
		if (static_cast<size_t>(e_ - p_) < n)
			grow(size() + n);
	}
	void put(char c)
	{
		reserve(1);
		*p_++ = c;
	}
	void put(const char *s, size_t n)
	{
		reserve(n);
		copy_short(p_, s, n);
		p_ += n;
	}
	void put(std::string_view s) { put(s.data(), s.size()); }
	template <size_t N>
	void lit(const char (&s)[N]) // a string literal
	{
		put(s, N - 1);
	}
	void put_unsigned(uint64_t v)
	{
		reserve(20);
		p_ = put_u64(p_, v);
	}
	void put_signed(int64_t v)
	{
		reserve(21);
		p_ = put_i64(p_, v);
	}
	void put_double_g(double v)
	{
		reserve(32);
		p_ = analysis::put_double_g(p_, v);
	}
	void swap(TextBuffer &other) noexcept
	{
		std::swap(b_, other.b_);
		std::swap(p_, other.p_);
		std::swap(e_, other.e_);
	}
	// After reserve(): direct stores.
	char *&ptr() { return p_; }

private:
	static constexpr size_t kInitial = size_t{1} << 12;
	void grow(size_t want)
	{
		const size_t used = b_ ? size() : 0;
		size_t cap = std::max<size_t>(kInitial, static_cast<size_t>(e_ - b_.get()));
		while (cap < want)
			cap *= 2;
		auto nb = std::make_unique_for_overwrite<char[]>(cap);
		if (used)
			std::memcpy(nb.get(), b_.get(), used);
		b_ = std::move(nb);
		p_ = b_.get() + used;
		e_ = b_.get() + cap;
	}
	std::unique_ptr<char[]> b_;
	char *p_ = nullptr, *e_ = nullptr;
};

#if !defined(__SSE2__)
namespace detail {
// The bytes put_quoted_c escapes.
struct EscapedBytes {
	bool t[256];
	constexpr EscapedBytes() : t()
	{
		for (int c = 0; c < 256; ++c)
			t[c] = c < 0x20 || c == 0x7f || c == '\\' || c == '\'' || c == '"' || c == '?';
	}
};
inline constexpr EscapedBytes kEscaped;
} // namespace detail
#endif

// The index of the first byte of s[0, n) that put_quoted_c escapes (control
// bytes, DEL, \ ' " ?), n if none: sixteen bytes at a time where SSE2 is
// (the last few copied into a block of sixteen: nothing past s + n is read).
inline size_t first_c_escaped(const char *s, size_t n)
{
#if defined(__SSE2__)
	for (size_t i = 0;; i += 16) {
		const size_t left = n - i;
		__m128i v;
		if (left >= 16) {
			v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
		} else {
			if (left == 0)
				return n;
			char b[16] = {};
			copy_short(b, s + i, left);
			v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b));
		}
		const auto eq = [&](char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
		const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v); // (bytes below 0x20)
		const __m128i any =
			_mm_or_si128(_mm_or_si128(_mm_or_si128(control, eq(0x7f)), _mm_or_si128(eq('\\'), eq('\''))),
		                     _mm_or_si128(eq('"'), eq('?')));
		auto mask = static_cast<unsigned>(_mm_movemask_epi8(any));
		if (left < 16)
			mask &= (1u << left) - 1;
		if (mask)
			return i + static_cast<size_t>(__builtin_ctz(mask));
		if (left <= 16)
			return n;
	}
#else
	size_t j = 0;
	while (j < n && !detail::kEscaped.t[static_cast<unsigned char>(s[j])])
		++j;
	return j;
#endif
}

// s[0, n) between double quotes, escaped as C (and babeltrace2) does:
// \a \b \e \f \n \r \t \v, \\ \' \" \?, other control bytes and DEL as \xNN.
inline void put_quoted_c(TextBuffer &out, const char *s, size_t n)
{
	out.reserve(4 * n + 2); // the longest escape (\xNN) is 4 bytes
	char *p = out.ptr();
	*p++ = '"';
	for (size_t i = 0; i < n; ++i) {
		// the run of bytes shown as they are, copied at once
		const size_t j = i + first_c_escaped(s + i, n - i);
		copy_short(p, s + i, j - i);
		p += j - i;
		if (j == n)
			break;
		i = j;
		const auto c = static_cast<unsigned char>(s[i]);
		char e = 0;
		switch (c) {
		case '\\':
		case '\'':
		case '"':
		case '?':
			e = static_cast<char>(c);
			break;
		case '\a':
			e = 'a';
			break;
		case '\b':
			e = 'b';
			break;
		case 0x1b:
			e = 'e';
			break;
		case '\f':
			e = 'f';
			break;
		case '\n':
			e = 'n';
			break;
		case '\r':
			e = 'r';
			break;
		case '\t':
			e = 't';
			break;
		case '\v':
			e = 'v';
			break;
		default:
			break;
		}
		*p++ = '\\';
		if (e) {
			*p++ = e;
		} else {
			static constexpr char kHex[] = "0123456789abcdef";
			*p++ = 'x';
			*p++ = kHex[c >> 4];
			*p++ = kHex[c & 15];
		}
	}
	*p++ = '"';
	out.ptr() = p;
}

} // namespace tracery::analysis
