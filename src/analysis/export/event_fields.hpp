// analysis/export/event_fields.hpp — an event's fields as the timeline
// exports show them beside it: which members of its payload and contexts
// (not the identity contexts, which become tracks), their types, and their
// values in one event (text, enumeration labels, compound values as JSON).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/symbol_events.hpp"
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

class NameTable;

// A field shown with its event: its name (an id of the name table) and how
// to read it.
struct ShownField {
	enum Type : uint8_t { i64, u64, f64, text, enumeration, compound };
	uint32_t name = 0;
	Type type = i64;
	FieldRef ref;
	// An address resolved (text: symbol_text()) instead of its value.
	SymbolEvents *symbols = nullptr;
};

// A field's value in one event (text: valid until the next value()).
struct FieldValue {
	ShownField::Type type = ShownField::i64;
	int64_t i = 0;
	uint64_t u = 0;
	double f = 0;
	std::string_view s; // text, an enumeration's label(s), a compound value as JSON
};

// The fields of the event's class worth showing, payload first, then its
// context and its stream's event context (without vpid, vtid, procname, pid,
// tid, cpu_id; a context field of a payload field's name is not shown).
// With symbols, the event's addresses resolved follow, as babeltrace2's
// debug-info names them: "debug_info" (the ip context), "addr_debug_info",
// "call_site_debug_info" (function entry and exit).
void shown_fields(const ctf::reader::Item &event, NameTable &names, std::vector<ShownField> &out,
                  SymbolEvents *symbols = nullptr);

// The value of a shown field of an event (reads the event's decoded values).
FieldValue field_value_of(const ctf::reader::Item &event, const ShownField &field, std::string &scratch);

// Whether the field is a number a counter track can follow (an integer or a
// floating point field), and which: integer set when an integer.
bool counter_field(const ctf::reader::Item &event, const FieldRef &ref, bool &integer);

} // namespace tracery::analysis
