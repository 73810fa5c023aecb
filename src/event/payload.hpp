// event/payload.hpp — encodes the payload (the fields) of one event.
//
// Layout: the fields in descriptor order, each byte-aligned, little-endian,
// no padding:
//   U8..S64             1/2/4/8 bytes, two's complement
//   FLOAT, DOUBLE       IEEE 754 binary32 / binary64 (NaN payloads kept)
//   BOOL                1 byte, 0 or 1
//   ENUM                its integer type (elem_type)
//   STRING              the bytes up to the first NUL or arg.len, then NUL;
//                       NULL ptr -> "" (1 byte); invalid UTF-8 bytes -> '?'
//   ARRAY               desc.length elements of elem_type (if arg.len is
//                       smaller or ptr is NULL, the missing ones are zeros)
//   SEQUENCE            uint32 count, then count elements (NULL ptr -> count 0)
//   BLOB                uint32 count, then count bytes (NULL ptr -> count 0)
// ARRAY and SEQUENCE elements may be any scalar type (U8..S64, FLOAT, DOUBLE,
// BOOL); ENUM takes an integer type. Scalar args must point at their value.
//
// Hot path: build an EventLayout once per event descriptor, then call its
// payload_size()/write_payload(): no allocation, no virtual call; for an
// event of fixed size payload_size() is a load and write_payload() one load
// and one store per field. The free functions payload_size()/write_payload()
// walk the descriptor itself (same bytes, no precomputation, any number of
// fields).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/byte_order.hpp"
#include "base/utf8.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::event {

// Bytes of one value of a scalar type (U8..S64, FLOAT, DOUBLE, BOOL); 0 for
// any other type.
inline constexpr size_t scalar_size(unsigned type) noexcept
{
	switch (type) {
	case TRACERY_TYPE_U8:
	case TRACERY_TYPE_S8:
	case TRACERY_TYPE_BOOL:
		return 1;
	case TRACERY_TYPE_U16:
	case TRACERY_TYPE_S16:
		return 2;
	case TRACERY_TYPE_U32:
	case TRACERY_TYPE_S32:
	case TRACERY_TYPE_FLOAT:
		return 4;
	case TRACERY_TYPE_U64:
	case TRACERY_TYPE_S64:
	case TRACERY_TYPE_DOUBLE:
		return 8;
	default:
		return 0;
	}
}

inline constexpr bool is_integer_type(unsigned type) noexcept { return type <= TRACERY_TYPE_S64; }
inline constexpr bool is_signed_integer_type(unsigned type) noexcept
{
	return type >= TRACERY_TYPE_S8 && type <= TRACERY_TYPE_S64;
}
// An integer field that readers show in base 16 (TRACERY_FIELD_HEX).
inline constexpr bool is_hex_field(const tracery_field_desc &f) noexcept
{
	return is_integer_type(f.type) && f.elem_type == TRACERY_FIELD_HEX;
}

// nullptr if the descriptor can be recorded, else why not (static text).
// Checks types, elem_types, NULL names/field arrays and enum descriptors.
const char *field_desc_error(const tracery_field_desc &f) noexcept;
const char *event_desc_error(const tracery_event_desc &d) noexcept;

// Bytes a STRING arg records before its NUL.
// The text bytes of a STRING argument (its NUL not counted): len as the call
// site measured it, 0 for a null pointer. Sizing a record reads no string.
inline size_t string_arg_length(const tracery_arg &a) noexcept { return a.ptr ? a.len : 0; }

namespace detail {

// Exactly string_arg_length(a) + 1 bytes, whatever the string holds by now
// (base::copy_string_text).
inline uint8_t *write_string(uint8_t *dst, const tracery_arg &a) noexcept
{
	const size_t n = string_arg_length(a);
	base::copy_string_text(dst, a.ptr, n);
	dst[n] = 0;
	return dst + n + 1;
}

inline uint8_t *write_counted(uint8_t *dst, const tracery_arg &a, size_t elem_size) noexcept
{
	const uint32_t count = a.ptr ? a.len : 0;
	base::store_le<uint32_t>(dst, count);
	dst += 4;
	base::copy_elements_le(dst, a.ptr, count, elem_size);
	return dst + size_t{count} * elem_size;
}

// `count` elements: the first min(count, a.len) from a.ptr, then zeros.
inline uint8_t *write_array(uint8_t *dst, const tracery_arg &a, size_t count, size_t elem_size) noexcept
{
	const size_t n = a.ptr ? (a.len < count ? a.len : count) : 0;
	base::copy_elements_le(dst, a.ptr, n, elem_size);
	if (n < count) [[unlikely]]
		std::memset(dst + n * elem_size, 0, (count - n) * elem_size);
	return dst + count * elem_size;
}

inline void write_bool(uint8_t *dst, const void *src) noexcept
{
	uint8_t b;
	std::memcpy(&b, src, 1);
	*dst = b != 0;
}

} // namespace detail

// Bytes field f records for arg a (0 for a malformed field).
inline size_t field_payload_size(const tracery_field_desc &f, const tracery_arg &a) noexcept
{
	switch (f.type) {
	case TRACERY_TYPE_ENUM:
		return is_integer_type(f.elem_type) ? scalar_size(f.elem_type) : 0;
	case TRACERY_TYPE_STRING:
		return string_arg_length(a) + 1;
	case TRACERY_TYPE_ARRAY:
		return size_t{f.length} * scalar_size(f.elem_type);
	case TRACERY_TYPE_SEQUENCE:
		return 4 + (a.ptr ? size_t{a.len} * scalar_size(f.elem_type) : 0);
	case TRACERY_TYPE_BLOB:
		return 4 + (a.ptr ? size_t{a.len} : 0);
	default:
		return scalar_size(f.type);
	}
}

// Writes field f for arg a at dst; returns the end of what it wrote.
inline uint8_t *write_field(uint8_t *dst, const tracery_field_desc &f, const tracery_arg &a) noexcept
{
	switch (f.type) {
	case TRACERY_TYPE_BOOL:
		detail::write_bool(dst, a.ptr);
		return dst + 1;
	case TRACERY_TYPE_ENUM: {
		const size_t n = is_integer_type(f.elem_type) ? scalar_size(f.elem_type) : 0;
		if (n)
			base::copy_scalar_le(dst, a.ptr, n);
		return dst + n;
	}
	case TRACERY_TYPE_STRING:
		return detail::write_string(dst, a);
	case TRACERY_TYPE_ARRAY:
		return detail::write_array(dst, a, f.length, scalar_size(f.elem_type));
	case TRACERY_TYPE_SEQUENCE:
		return detail::write_counted(dst, a, scalar_size(f.elem_type));
	case TRACERY_TYPE_BLOB:
		return detail::write_counted(dst, a, 1);
	default: {
		const size_t n = scalar_size(f.type);
		if (n)
			base::copy_scalar_le(dst, a.ptr, n);
		return dst + n;
	}
	}
}

// Payload bytes of one event (args: one per field, as in tracepoint.h).
inline size_t payload_size(const tracery_event_desc &desc, const tracery_arg *args) noexcept
{
	size_t size = 0;
	for (uint32_t i = 0; i < desc.nr_fields; ++i)
		size += field_payload_size(desc.fields[i], args[i]);
	return size;
}

// Writes exactly payload_size(desc, args) bytes at dst.
inline void write_payload(uint8_t *dst, const tracery_event_desc &desc, const tracery_arg *args) noexcept
{
	for (uint32_t i = 0; i < desc.nr_fields; ++i)
		dst = write_field(dst, desc.fields[i], args[i]);
}

// Per-event precomputed encoding plan (trivially copyable, ~230 bytes).
class EventLayout {
public:
	static constexpr uint32_t kMaxFields = 16; // as tracepoint.h

	EventLayout() noexcept = default;
	// Never fails; check valid(): false if event_desc_error(desc) or more
	// than kMaxFields fields (then use the free functions).
	explicit EventLayout(const tracery_event_desc &desc) noexcept;

	bool valid() const noexcept { return valid_; }
	// True if every event of this class has the same payload size.
	bool is_fixed_size() const noexcept { return fixed_; }
	// The payload size of a fixed-size event; for a variable-size one, the
	// bytes that do not depend on the arguments (counts, NULs, arrays...).
	size_t fixed_size() const noexcept { return fixed_size_; }
	uint32_t nr_fields() const noexcept { return nr_fields_; }
	// Constant bytes of field i (scalar/array size, 4 for a count, 1 for a NUL).
	size_t field_fixed_size(uint32_t i) const noexcept { return fields_[i].size; }

	size_t payload_size(const tracery_arg *args) const noexcept
	{
		if (fixed_) [[likely]]
			return fixed_size_;
		return variable_payload_size(args);
	}

	// Writes payload_size(args) bytes at dst; returns dst + that size.
	uint8_t *write_payload(uint8_t *dst, const tracery_arg *args) const noexcept
	{
		for (uint32_t i = 0; i < nr_fields_; ++i) {
			const Field &f = fields_[i];
			const tracery_arg &a = args[i];
			switch (f.op) {
			case kCopy1:
				std::memcpy(dst, a.ptr, 1);
				dst += 1;
				break;
			case kCopy2:
				base::copy_scalar_le(dst, a.ptr, 2);
				dst += 2;
				break;
			case kCopy4:
				base::copy_scalar_le(dst, a.ptr, 4);
				dst += 4;
				break;
			case kCopy8:
				base::copy_scalar_le(dst, a.ptr, 8);
				dst += 8;
				break;
			case kBool:
				detail::write_bool(dst, a.ptr);
				dst += 1;
				break;
			case kArray:
				dst = detail::write_array(dst, a, f.size / f.elem_size, f.elem_size);
				break;
			case kString:
				dst = detail::write_string(dst, a);
				break;
			default: // kCounted: sequence or blob
				dst = detail::write_counted(dst, a, f.elem_size);
				break;
			}
		}
		return dst;
	}

private:
	// One op per field kind; scalars carry their size in the op so that the
	// common case is a single switch and one load/store pair per field.
	enum Op : uint8_t { kCopy1, kCopy2, kCopy4, kCopy8, kBool, kArray, kString, kCounted };
	struct Field {
		uint8_t op;
		uint8_t elem_size; // kArray, kCounted
		uint32_t size;     // constant bytes
	};

	static Field scalar_field(size_t size) noexcept;

	// A field whose size depends on its argument: a string (len bytes), a
	// sequence or blob (len elements of elem_size bytes; none without a pointer).
	struct VariableField {
		uint8_t index;
		uint8_t elem_size;
	};

	// The arguments' len of the variable fields alone: a string's len is 0
	// without a pointer too (string_arg_length), like a sequence's.
	size_t variable_payload_size(const tracery_arg *args) const noexcept
	{
		size_t size = fixed_size_;
		for (uint32_t i = 0; i < nr_variable_; ++i) {
			const tracery_arg &a = args[variable_[i].index];
			if (a.ptr)
				size += size_t{a.len} * variable_[i].elem_size;
		}
		return size;
	}

	// What every event reads first (payload_size() of a fixed-size event reads
	// nothing else), then the per-field plan.
	uint32_t fixed_size_ = 0;
	bool fixed_ = true;
	bool valid_ = false;
	uint32_t nr_fields_ = 0;
	uint32_t nr_variable_ = 0;
	Field fields_[kMaxFields] = {};
	VariableField variable_[kMaxFields] = {};
};

} // namespace tracery::event
