// event/payload.cpp — descriptor validation and EventLayout construction.
#include "event/payload.hpp"

namespace tracery::event {

const char *field_desc_error(const tracery_field_desc &f) noexcept
{
	if (!f.name)
		return "field has no name";
	switch (f.type) {
	case TRACERY_TYPE_U8:
	case TRACERY_TYPE_U16:
	case TRACERY_TYPE_U32:
	case TRACERY_TYPE_U64:
	case TRACERY_TYPE_S8:
	case TRACERY_TYPE_S16:
	case TRACERY_TYPE_S32:
	case TRACERY_TYPE_S64:
		if (f.elem_type != 0 && f.elem_type != TRACERY_FIELD_HEX)
			return "integer field: elem_type is neither 0 nor TRACERY_FIELD_HEX";
		return nullptr;
	case TRACERY_TYPE_FLOAT:
	case TRACERY_TYPE_DOUBLE:
	case TRACERY_TYPE_BOOL:
	case TRACERY_TYPE_STRING:
	case TRACERY_TYPE_BLOB:
		if (f.elem_type == TRACERY_FIELD_HEX)
			return "TRACERY_FIELD_HEX on a field that is no integer";
		return nullptr;
	case TRACERY_TYPE_ENUM:
		if (!is_integer_type(f.elem_type))
			return "enum field: elem_type is not an integer type";
		if (!f.enum_desc)
			return "enum field: no enum_desc";
		if (f.enum_desc->nr_entries && !f.enum_desc->entries)
			return "enum field: enum_desc has no entries array";
		return nullptr;
	case TRACERY_TYPE_ARRAY:
		if (scalar_size(f.elem_type) == 0)
			return "array field: elem_type is not a scalar type";
		if (uint64_t{f.length} * scalar_size(f.elem_type) > UINT32_MAX)
			return "array field: too large";
		return nullptr;
	case TRACERY_TYPE_SEQUENCE:
		if (scalar_size(f.elem_type) == 0)
			return "sequence field: elem_type is not a scalar type";
		return nullptr;
	default:
		return "unknown field type";
	}
}

const char *event_desc_error(const tracery_event_desc &d) noexcept
{
	if (!d.provider || !d.name)
		return "event has no provider or no name";
	if (d.nr_fields && !d.fields)
		return "event has no field array";
	uint64_t fixed = 0;
	for (uint32_t i = 0; i < d.nr_fields; ++i) {
		if (const char *e = field_desc_error(d.fields[i]))
			return e;
		if (d.fields[i].type == TRACERY_TYPE_ARRAY)
			fixed += uint64_t{d.fields[i].length} * scalar_size(d.fields[i].elem_type);
	}
	if (fixed > UINT32_MAX)
		return "event payload too large";
	return nullptr;
}

EventLayout::Field EventLayout::scalar_field(size_t size) noexcept
{
	const Op op = size == 1 ? kCopy1 : size == 2 ? kCopy2 : size == 4 ? kCopy4 : kCopy8;
	return Field{op, 0, static_cast<uint32_t>(size)};
}

EventLayout::EventLayout(const tracery_event_desc &desc) noexcept
{
	if (event_desc_error(desc) || desc.nr_fields > kMaxFields)
		return;
	uint64_t total = 0;
	for (uint32_t i = 0; i < desc.nr_fields; ++i) {
		const tracery_field_desc &fd = desc.fields[i];
		Field &f = fields_[i];
		switch (fd.type) {
		case TRACERY_TYPE_BOOL:
			f = {kBool, 1, 1};
			break;
		case TRACERY_TYPE_ENUM:
			f = scalar_field(scalar_size(fd.elem_type));
			break;
		case TRACERY_TYPE_STRING:
			f = {kString, 1, 1};
			variable_[nr_variable_++] = {static_cast<uint8_t>(i), 1};
			fixed_ = false;
			break;
		case TRACERY_TYPE_ARRAY: {
			const auto es = static_cast<uint8_t>(scalar_size(fd.elem_type));
			f = {kArray, es, static_cast<uint32_t>(fd.length * es)};
			break;
		}
		case TRACERY_TYPE_SEQUENCE:
			f = {kCounted, static_cast<uint8_t>(scalar_size(fd.elem_type)), 4};
			variable_[nr_variable_++] = {static_cast<uint8_t>(i), f.elem_size};
			fixed_ = false;
			break;
		case TRACERY_TYPE_BLOB:
			f = {kCounted, 1, 4};
			variable_[nr_variable_++] = {static_cast<uint8_t>(i), 1};
			fixed_ = false;
			break;
		default:
			f = scalar_field(scalar_size(fd.type));
			break;
		}
		total += f.size;
	}
	if (total > UINT32_MAX) {
		*this = EventLayout();
		return;
	}
	fixed_size_ = static_cast<uint32_t>(total);
	nr_fields_ = desc.nr_fields;
	valid_ = true;
}

} // namespace tracery::event
