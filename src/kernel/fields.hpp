// kernel/fields.hpp — reading one field of a decoded event's payload, as its
// format file (format.hpp) describes it. The payload is untrusted: a field
// or __data_loc that points outside it reads as absent (false / empty),
// never outside the span.
#pragma once

#include <cstdint>
#include <span>

#include "base/byte_order.hpp"
#include "kernel/format.hpp"

namespace tracery::kernel {

// A scalar field's value, sign-extended when the field is signed. False if
// the field is not a scalar or lies outside the payload.
inline bool read_integer(const FieldFormat &f, std::span<const uint8_t> payload, uint64_t &value) noexcept
{
	if (f.kind != FieldKind::scalar || f.offset > payload.size() || f.size > payload.size() - f.offset)
		return false;
	const uint8_t *p = payload.data() + f.offset;
	switch (f.size) {
	case 1:
		value = f.is_signed ? static_cast<uint64_t>(static_cast<int8_t>(*p)) : *p;
		return true;
	case 2: {
		const uint16_t v = base::load_le<uint16_t>(p);
		value = f.is_signed ? static_cast<uint64_t>(static_cast<int16_t>(v)) : v;
		return true;
	}
	case 4: {
		const uint32_t v = base::load_le<uint32_t>(p);
		value = f.is_signed ? static_cast<uint64_t>(static_cast<int32_t>(v)) : v;
		return true;
	}
	default:
		value = base::load_le<uint64_t>(p);
		return true;
	}
}

// The bytes of an array, __data_loc, __rel_loc or trailing field (for a
// scalar: its own bytes). Empty if they are not all inside the payload.
inline std::span<const uint8_t> field_bytes(const FieldFormat &f, std::span<const uint8_t> payload) noexcept
{
	const size_t n = payload.size();
	if (f.offset > n || f.size > n - f.offset)
		return {};
	switch (f.kind) {
	case FieldKind::data_loc:
	case FieldKind::rel_loc: {
		const uint32_t loc = base::load_le<uint32_t>(payload.data() + f.offset);
		size_t offset = loc & 0xffff;
		const size_t length = loc >> 16;
		if (f.kind == FieldKind::rel_loc)
			offset += f.offset + f.size;
		if (offset > n || length > n - offset)
			return {};
		return payload.subspan(offset, length);
	}
	case FieldKind::trailing:
		return payload.subspan(f.offset);
	default:
		return payload.subspan(f.offset, f.size);
	}
}

} // namespace tracery::kernel
