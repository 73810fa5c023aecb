// base/byte_order.hpp — little-endian, unaligned loads and stores.
//
// Every multi-byte value Tracery writes to a trace is little-endian and
// byte-aligned (the metadata says byte_order = le, align = 8 bits). On a
// little-endian host these compile to plain unaligned moves.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tracery::base {

inline constexpr bool kHostIsLittleEndian = std::endian::native == std::endian::little;
static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "mixed-endian hosts are not supported");

template <class T>
constexpr T byteswap(T v) noexcept
{
	static_assert(std::is_integral_v<T>);
	using U = std::make_unsigned_t<T>;
	U u = static_cast<U>(v);
	if constexpr (sizeof(T) == 1) {
		return v;
	} else if constexpr (sizeof(T) == 2) {
		return static_cast<T>(__builtin_bswap16(u));
	} else if constexpr (sizeof(T) == 4) {
		return static_cast<T>(__builtin_bswap32(u));
	} else {
		static_assert(sizeof(T) == 8);
		return static_cast<T>(__builtin_bswap64(u));
	}
}

// Stores integer v at dst (any alignment) in little-endian byte order.
template <class T>
inline void store_le(uint8_t *dst, T v) noexcept
{
	static_assert(std::is_integral_v<T>);
	if constexpr (!kHostIsLittleEndian)
		v = byteswap(v);
	std::memcpy(dst, &v, sizeof v);
}

// Loads a little-endian integer from src (any alignment).
template <class T>
inline T load_le(const uint8_t *src) noexcept
{
	static_assert(std::is_integral_v<T>);
	T v;
	std::memcpy(&v, src, sizeof v);
	if constexpr (!kHostIsLittleEndian)
		v = byteswap(v);
	return v;
}

// Copies one host-order value of `size` bytes (1, 2, 4 or 8) from src to dst
// as little-endian. Floating-point values use the same path: IEEE 754 values
// share the byte order of integers on every host Tracery supports.
inline void copy_scalar_le(uint8_t *dst, const void *src, size_t size) noexcept
{
	switch (size) {
	case 1:
		std::memcpy(dst, src, 1);
		break;
	case 2: {
		uint16_t v;
		std::memcpy(&v, src, 2);
		store_le(dst, v);
		break;
	}
	case 4: {
		uint32_t v;
		std::memcpy(&v, src, 4);
		store_le(dst, v);
		break;
	}
	default: {
		uint64_t v;
		std::memcpy(&v, src, 8);
		store_le(dst, v);
		break;
	}
	}
}

// Copies `count` host-order elements of `elem_size` bytes as little-endian.
inline void copy_elements_le(uint8_t *dst, const void *src, size_t count, size_t elem_size) noexcept
{
	if constexpr (kHostIsLittleEndian) {
		if (count)
			std::memcpy(dst, src, count * elem_size);
	} else {
		const auto *s = static_cast<const uint8_t *>(src);
		for (size_t i = 0; i < count; ++i)
			copy_scalar_le(dst + i * elem_size, s + i * elem_size, elem_size);
	}
}

} // namespace tracery::base
