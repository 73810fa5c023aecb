// ust/runtime_event_definition.cpp — checks a run-time event's definition
// and copies it into the descriptor it owns: see runtime_event_definition.hpp.
#include "ust/runtime_event_definition.hpp"

#include "event/payload.hpp"

#include <cstring>
#include <set>

namespace tracery::ust {
namespace {

bool is_letter_or_underscore(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_identifier_char(char c) { return is_letter_or_underscore(c) || (c >= '0' && c <= '9'); }
bool is_name_char(char c) { return is_identifier_char(c) || c == '.' || c == '$' || c == '-'; }

// The length of s if it is 1 to max bytes long, else 0 (s may be null).
size_t bounded_length(const char *s, size_t max)
{
	if (!s)
		return 0;
	const size_t n = strnlen(s, max + 1);
	return n <= max ? n : 0;
}

// Why s is not a name of 1 to max bytes whose first byte is a letter or '_'
// and whose others pass rest(), or "".
template <typename Rest>
std::string name_error(const char *what, const char *s, size_t max, Rest rest, const char *allowed)
{
	if (!s)
		return std::string(what) + " is NULL";
	const size_t n = bounded_length(s, max);
	if (n == 0)
		return std::string(what) + " must be 1 to " + std::to_string(max) + " bytes long";
	bool ok = is_letter_or_underscore(s[0]);
	for (size_t i = 1; ok && i < n; ++i)
		ok = rest(s[i]);
	if (!ok)
		return std::string(what) + " '" + std::string(s, n) +
		       "' must begin with a letter or '_' and hold only " + allowed;
	return {};
}

const char *type_name(unsigned t)
{
	static const char *const kNames[] = {"u8",    "u16",    "u32",  "u64",  "s8",     "s16",   "s32",      "s64",
	                                     "float", "double", "bool", "enum", "string", "array", "sequence", "blob"};
	return t < sizeof kNames / sizeof kNames[0] ? kNames[t] : "unknown";
}

bool is_scalar_type(unsigned t) { return event::scalar_size(t) != 0; }

FieldPlan integer_plan(unsigned type)
{
	const auto size = static_cast<uint8_t>(event::scalar_size(type));
	const unsigned bits = size * 8u;
	if (event::is_signed_integer_type(type)) {
		const int64_t max = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
		return {ValueKind::signed_int, size, 0, 0, -max - 1, max};
	}
	return {ValueKind::unsigned_int, size, 0, bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1, 0, 0};
}

// Checks field f (index i) against the rules of runtime_event.h and fills
// its plan; returns why it is refused, or "".
std::string field_error(const tracery_event_field &f, FieldPlan *plan)
{
	const bool has_elem =
		f.type == TRACERY_TYPE_ENUM || f.type == TRACERY_TYPE_ARRAY || f.type == TRACERY_TYPE_SEQUENCE;
	if (f.type > TRACERY_TYPE_BLOB)
		return "unknown type " + std::to_string(f.type);
	if (f.flags & ~TRACERY_EVENT_FIELD_HEX)
		return "flags holds bits other than TRACERY_EVENT_FIELD_HEX";
	if ((f.flags & TRACERY_EVENT_FIELD_HEX) && !event::is_integer_type(f.type))
		return std::string("TRACERY_EVENT_FIELD_HEX is for an integer field (u8 to s64), not a ") +
		       type_name(f.type);
	if (!has_elem && f.elem_type)
		return std::string("elem_type must be 0 for a ") + type_name(f.type);
	if (f.type != TRACERY_TYPE_ARRAY && f.length)
		return std::string("length must be 0 for a ") + type_name(f.type);
	if (f.type != TRACERY_TYPE_ENUM && (f.enum_entries || f.nr_enum_entries))
		return std::string("enum_entries must be NULL and 0 for a ") + type_name(f.type);
	switch (f.type) {
	case TRACERY_TYPE_FLOAT:
		*plan = {ValueKind::float32, 4, 0, 0, 0, 0};
		return {};
	case TRACERY_TYPE_DOUBLE:
		*plan = {ValueKind::float64, 8, 0, 0, 0, 0};
		return {};
	case TRACERY_TYPE_BOOL:
		*plan = {ValueKind::boolean, 1, 0, 0, 0, 0};
		return {};
	case TRACERY_TYPE_STRING:
		*plan = {ValueKind::string, 1, 0, 0, 0, 0};
		return {};
	case TRACERY_TYPE_BLOB:
		*plan = {ValueKind::counted, 1, 0, 0, 0, 0};
		return {};
	case TRACERY_TYPE_ENUM:
		if (!event::is_integer_type(f.elem_type))
			return std::string("an enum's elem_type must be an integer type (u8 to s64), not ") +
			       type_name(f.elem_type);
		*plan = integer_plan(f.elem_type);
		return {};
	case TRACERY_TYPE_ARRAY:
	case TRACERY_TYPE_SEQUENCE: {
		if (!is_scalar_type(f.elem_type))
			return std::string("the elem_type of an ") + type_name(f.type) +
			       " must be a scalar type (u8 to s64, float, double, bool), not " + type_name(f.elem_type);
		const auto size = static_cast<uint8_t>(event::scalar_size(f.elem_type));
		if (f.type == TRACERY_TYPE_SEQUENCE) {
			*plan = {ValueKind::counted, size, 0, 0, 0, 0};
			return {};
		}
		if (f.length == 0 || uint64_t{f.length} * size > TRACERY_EVENT_MAX_PAYLOAD)
			return "an array's length must be 1 to " + std::to_string(TRACERY_EVENT_MAX_PAYLOAD / size) +
			       " elements of " + type_name(f.elem_type);
		*plan = {ValueKind::array, size, f.length, 0, 0, 0};
		return {};
	}
	default:
		*plan = integer_plan(f.type);
		return {};
	}
}

// Why the labels of enum field f (elem_type checked) are refused, or "".
std::string enum_error(const tracery_event_field &f)
{
	if (f.nr_enum_entries == 0 || f.nr_enum_entries > TRACERY_EVENT_MAX_ENUM_ENTRIES)
		return "an enum needs 1 to " + std::to_string(TRACERY_EVENT_MAX_ENUM_ENTRIES) + " entries";
	if (!f.enum_entries)
		return "enum_entries is NULL";
	const FieldPlan range = integer_plan(f.elem_type);
	for (uint32_t e = 0; e < f.nr_enum_entries; ++e) {
		const tracery_enum_entry &en = f.enum_entries[e];
		const std::string which = "enum entry " + std::to_string(e);
		if (bounded_length(en.label, TRACERY_EVENT_MAX_ENUM_LABEL) == 0)
			return which + ": its label must be 1 to " + std::to_string(TRACERY_EVENT_MAX_ENUM_LABEL) +
			       " bytes long";
		bool ok;
		if (range.kind == ValueKind::signed_int)
			ok = en.start <= en.end && en.start >= range.min_signed && en.end <= range.max_signed;
		else if (range.max_unsigned == UINT64_MAX)
			ok = static_cast<uint64_t>(en.start) <= static_cast<uint64_t>(en.end);
		else
			ok = en.start >= 0 && en.start <= en.end && static_cast<uint64_t>(en.end) <= range.max_unsigned;
		if (!ok)
			return which + " ('" + en.label + "'): its range " + std::to_string(en.start) + " to " +
			       std::to_string(en.end) + " is empty or outside the values of " + type_name(f.elem_type);
	}
	return {};
}

} // namespace

bool RuntimeEvent::same_fields(const RuntimeEvent &other) const
{
	if (fields.size() != other.fields.size() || flags != other.flags)
		return false;
	for (size_t i = 0; i < fields.size(); ++i) {
		const tracery_field_desc &a = fields[i], &b = other.fields[i];
		if (strcmp(a.name, b.name) != 0 || a.type != b.type || a.elem_type != b.elem_type ||
		    a.length != b.length)
			return false;
		if (!a.enum_desc)
			continue;
		if (a.enum_desc->nr_entries != b.enum_desc->nr_entries)
			return false;
		for (uint32_t e = 0; e < a.enum_desc->nr_entries; ++e) {
			const tracery_enum_entry &x = a.enum_desc->entries[e], &y = b.enum_desc->entries[e];
			if (strcmp(x.label, y.label) != 0 || x.start != y.start || x.end != y.end)
				return false;
		}
	}
	return true;
}

std::unique_ptr<RuntimeEvent> build_runtime_event(const char *provider, const char *name,
                                                  const tracery_event_field *fields, uint32_t nr_fields,
                                                  std::string *why)
{
	*why = name_error("the provider", provider, TRACERY_EVENT_MAX_PROVIDER, is_identifier_char,
	                  "letters, digits and '_'");
	if (why->empty())
		*why = name_error("the event name", name, TRACERY_EVENT_MAX_NAME, is_name_char,
		                  "letters, digits, '_', '.', '$' and '-'");
	if (!why->empty())
		return nullptr;
	const std::string full = std::string(provider) + ":" + name + ": ";
	if (nr_fields > TRACERY_EVENT_MAX_FIELDS) {
		*why = full + std::to_string(nr_fields) + " fields, at most " +
		       std::to_string(TRACERY_EVENT_MAX_FIELDS) + " allowed";
		return nullptr;
	}
	if (nr_fields && !fields) {
		*why = full + "the field array is NULL";
		return nullptr;
	}
	auto ev = std::make_unique<RuntimeEvent>();
	ev->provider = provider;
	ev->name = name;
	std::set<std::string, std::less<>> seen;
	uint64_t fixed = 0;
	for (uint32_t i = 0; i < nr_fields; ++i) {
		const tracery_event_field &f = fields[i];
		const std::string which = full + "field " + std::to_string(i);
		if (std::string e = name_error("its name", f.name, TRACERY_EVENT_MAX_FIELD_NAME, is_identifier_char,
		                               "letters, digits and '_'");
		    !e.empty()) {
			*why = which + ": " + e;
			return nullptr;
		}
		const std::string which_named = which + " ('" + f.name + "')";
		if (!seen.insert(f.name).second) {
			*why = which_named + ": another field has this name";
			return nullptr;
		}
		std::string e = field_error(f, &ev->plan[i]);
		if (e.empty() && f.type == TRACERY_TYPE_ENUM)
			e = enum_error(f);
		if (!e.empty()) {
			*why = which_named + ": " + e;
			return nullptr;
		}
		const FieldPlan &p = ev->plan[i];
		fixed += p.kind == ValueKind::array     ? uint64_t{p.length} * p.size
		         : p.kind == ValueKind::counted ? 4
		                                        : p.size; // a string's NUL, a scalar
		tracery_field_desc fd{ev->strings.emplace_back(f.name).c_str(), f.type, f.elem_type, f.length, nullptr};
		if (f.flags & TRACERY_EVENT_FIELD_HEX)
			fd.elem_type = TRACERY_FIELD_HEX;
		if (f.type == TRACERY_TYPE_ENUM) {
			auto &entries = ev->enum_entries.emplace_back();
			for (uint32_t k = 0; k < f.nr_enum_entries; ++k) {
				const tracery_enum_entry &en = f.enum_entries[k];
				entries.push_back({ev->strings.emplace_back(en.label).c_str(), en.start, en.end});
			}
			fd.enum_desc = &ev->enums.emplace_back(
				tracery_enum_desc{fd.name, entries.data(), static_cast<uint32_t>(entries.size())});
		}
		ev->fields.push_back(fd);
		ev->flags.push_back(f.flags);
	}
	if (fixed > TRACERY_EVENT_MAX_PAYLOAD) {
		*why = full + "its fields take " + std::to_string(fixed) + " bytes before any value, more than " +
		       std::to_string(TRACERY_EVENT_MAX_PAYLOAD);
		return nullptr;
	}
	ev->fixed_payload = static_cast<uint32_t>(fixed);
	tracery_event_desc &d = ev->desc;
	d.provider = ev->provider.c_str();
	d.name = ev->name.c_str();
	d.fields = ev->fields.data();
	d.nr_fields = nr_fields;
	d.gate_call = TRACERY_GATE_ARGS; // the emitter passes its argument array
	if (const char *e = event::event_desc_error(d)) {
		*why = full + e;
		return nullptr;
	}
	return ev;
}

} // namespace tracery::ust
