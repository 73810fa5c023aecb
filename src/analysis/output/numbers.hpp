// analysis/output/numbers.hpp — numbers as text, fast: integers from digit
// tables (two and three digits per load, no division loop per digit), the
// nine digits of a timestamp's nanoseconds, and doubles as babeltrace2
// writes them ("%g") or the shortest text that reads back the same. What
// `tracery view` writes millions of times a second, and the one number
// formatting of every text output.
//
//   char *p = put_u64(buf, 1234);        // stores "1234" (room for 20), returns its end
//   append_signed(s, -5);                // appends "-5" to a std::string
//   append_double_g(s, 0.5);             // "0.5", as printf("%g")
//   append_double_shortest(s, 0.1);      // "0.1": the shortest that reads back the same
//
// TextBuffer (text_buffer.hpp) has the same for its room.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace tracery::analysis {

namespace detail {

inline constexpr char kDigitPairs[] = "00010203040506070809"
				      "10111213141516171819"
				      "20212223242526272829"
				      "30313233343536373839"
				      "40414243444546474849"
				      "50515253545556575859"
				      "60616263646566676869"
				      "70717273747576777879"
				      "80818283848586878889"
				      "90919293949596979899";

// "000" to "999", 4 bytes each (the 4th unused): three digits in one load.
struct DigitTriples {
	char t[1000][4];
	constexpr DigitTriples() : t()
	{
		for (int i = 0; i < 1000; ++i) {
			t[i][0] = static_cast<char>('0' + i / 100);
			t[i][1] = static_cast<char>('0' + i / 10 % 10);
			t[i][2] = static_cast<char>('0' + i % 10);
		}
	}
};
inline constexpr DigitTriples kDigitTriples;

// Stores v (< 10^8) as exactly 8 digits at p (two independent halves).
inline char *eight_digits(char *p, uint32_t v)
{
	const uint32_t high = v / 10000, low = v % 10000;
	std::memcpy(p, kDigitPairs + 2 * (high / 100), 2);
	std::memcpy(p + 2, kDigitPairs + 2 * (high % 100), 2);
	std::memcpy(p + 4, kDigitPairs + 2 * (low / 100), 2);
	std::memcpy(p + 6, kDigitPairs + 2 * (low % 100), 2);
	return p + 8;
}

} // namespace detail

// Decimal digits of v, at most 20, stored ending at end; returns their start.
inline char *digits_before(char *end, uint64_t v)
{
	while (v >= 100) {
		const auto r = static_cast<size_t>(v % 100) * 2;
		v /= 100;
		*--end = detail::kDigitPairs[r + 1];
		*--end = detail::kDigitPairs[r];
	}
	if (v >= 10) {
		const auto r = static_cast<size_t>(v) * 2;
		*--end = detail::kDigitPairs[r + 1];
		*--end = detail::kDigitPairs[r];
	} else {
		*--end = static_cast<char>('0' + v);
	}
	return end;
}

// Stores v (< 10^9) as exactly 9 digits at p (3 independent thirds).
inline char *nine_digits(char *p, uint32_t v)
{
	const uint32_t high = v / 1000000, rest = v % 1000000;
	std::memcpy(p, detail::kDigitTriples.t[high], 3);
	std::memcpy(p + 3, detail::kDigitTriples.t[rest / 1000], 3);
	std::memcpy(p + 6, detail::kDigitTriples.t[rest % 1000], 3);
	return p + 9;
}

// How many decimal digits v has.
inline unsigned decimal_digits(uint64_t v)
{
	static constexpr uint64_t kPowers[] = {0,
	                                       10,
	                                       100,
	                                       1000,
	                                       10000,
	                                       100000,
	                                       1000000,
	                                       10000000,
	                                       100000000,
	                                       1000000000,
	                                       10000000000,
	                                       100000000000,
	                                       1000000000000,
	                                       10000000000000,
	                                       100000000000000,
	                                       1000000000000000,
	                                       10000000000000000,
	                                       100000000000000000,
	                                       1000000000000000000,
	                                       10000000000000000000u};
	// log10 from log2, corrected by one comparison
	const unsigned guess = (64 - static_cast<unsigned>(__builtin_clzll(v | 1))) * 1233 >> 12;
	return guess + (v >= kPowers[guess]);
}

// Stores the decimal digits of v at p (room for 20); returns their end.
// Beyond 8 digits, the low ones 8 at a time (an address: 15 digits).
inline char *put_u64(char *p, uint64_t v)
{
	constexpr uint64_t k8 = 100000000;
	if (v >= k8) {
		uint64_t high = v / k8;
		const auto low = static_cast<uint32_t>(v % k8);
		if (high >= k8) {
			p = put_u64(p, high / k8);
			p = detail::eight_digits(p, static_cast<uint32_t>(high % k8));
		} else {
			const unsigned n = decimal_digits(high);
			digits_before(p + n, high);
			p += n;
		}
		return detail::eight_digits(p, low);
	}
	const unsigned n = decimal_digits(v);
	digits_before(p + n, v);
	return p + n;
}

// v, after a '-' when negative (room for 21).
inline char *put_i64(char *p, int64_t v)
{
	if (v >= 0)
		return put_u64(p, static_cast<uint64_t>(v));
	*p = '-';
	return put_u64(p + 1, 0 - static_cast<uint64_t>(v));
}

inline void append_unsigned(std::string &out, uint64_t v)
{
	char b[20];
	const char *start = digits_before(b + sizeof b, v);
	out.append(start, static_cast<size_t>(b + sizeof b - start));
}

inline void append_signed(std::string &out, int64_t v)
{
	if (v < 0)
		out += '-';
	append_unsigned(out, v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
}

// v as printf's "%g" writes it (babeltrace2's text format), at p (room
// for 32); returns its end.
char *put_double_g(char *p, double v);
inline void append_double_g(std::string &out, double v)
{
	char b[32];
	out.append(b, put_double_g(b, v));
}

// The shortest text that reads back as the same double (std::to_chars:
// "0.1", "1e+100", "inf", "nan"), at p (room for 32); returns its end.
char *put_double_shortest(char *p, double v);
inline void append_double_shortest(std::string &out, double v)
{
	char b[32];
	out.append(b, put_double_shortest(b, v));
}

} // namespace tracery::analysis
