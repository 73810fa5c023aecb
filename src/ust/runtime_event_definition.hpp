// ust/runtime_event_definition.hpp — an event defined at run time
// (tracery/runtime_event.h), checked and copied into a descriptor it owns.
//
// The definition comes from code the library does not control (a language
// agent passing a user's names): every name, type, length and label is
// checked against the rules of runtime_event.h before anything is kept, and
// what is kept is a copy, so the descriptor lives on after the caller's
// arrays are gone. The descriptor is the one registered with the registry
// and read by sessions, filters and the metadata writers, exactly as a
// compiled event's.
#pragma once

#include <tracery/runtime_event.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace tracery::ust {

// What the emitter does with field i's value (see tracery_event_emit).
enum class ValueKind : uint8_t {
	unsigned_int, // check against max_unsigned, point at its low bytes
	signed_int,   // check against [min_signed, max_signed]
	boolean,
	float32,
	float64,
	string,
	array,
	counted, // sequence or blob: len elements of elem_size bytes
};

struct FieldPlan {
	ValueKind kind;
	uint8_t size;    // bytes of a scalar value; element bytes of an array, sequence, blob
	uint32_t length; // array: element count
	uint64_t max_unsigned;
	int64_t min_signed, max_signed;
};

// Public part first (tracery_runtime_event is its base), then what the
// descriptor points at. Never freed once registered.
struct RuntimeEvent : tracery_runtime_event {
	std::string provider, name;
	std::deque<std::string> strings; // field names, labels
	std::deque<std::vector<tracery_enum_entry>> enum_entries;
	std::deque<tracery_enum_desc> enums;
	std::vector<tracery_field_desc> fields;
	std::vector<uint16_t> flags;
	FieldPlan plan[TRACERY_EVENT_MAX_FIELDS];
	uint32_t fixed_payload = 0; // bytes that do not depend on the values

	// True if `other` was defined with the same fields (names, types, lengths,
	// flags, labels).
	bool same_fields(const RuntimeEvent &other) const;
};

// The event provider:name with these fields, or null with *why saying what is
// wrong (a sentence naming the field). Allocation failures throw
// std::bad_alloc.
std::unique_ptr<RuntimeEvent> build_runtime_event(const char *provider, const char *name,
                                                  const tracery_event_field *fields, uint32_t nr_fields,
                                                  std::string *why);

} // namespace tracery::ust
