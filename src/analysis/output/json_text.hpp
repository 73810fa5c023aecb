// analysis/output/json_text.hpp — text from hostile traces made safe for JSON and
// for SQL TEXT: invalid UTF-8 bytes replaced by '?' (base/utf8.hpp), JSON
// string escaping, and a decoded field (struct, array, sequence, variant)
// written as JSON. The one writer of decoded values as JSON, for the exports'
// compound fields and the SQL tables' JSON columns.
#pragma once

#include "ctf/reader/decoder.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tracery::analysis {

// s with every byte that is not part of a valid UTF-8 sequence replaced by '?'.
void append_utf8(std::string &out, std::string_view s);

// s as a JSON string, quoted: '"', '\\' and control characters escaped (as
// \u00XX), bytes that are not UTF-8 replaced by '?'.
void append_json_string(std::string &out, std::string_view s);

// The value of op i of plan at values[v] as JSON, and its subtree: integers
// as numbers, enumerations as their first label (a number when no label
// covers the value), floats as numbers or null when not finite, text as
// strings, structs as objects (member names without TSDL's escaping '_'),
// arrays and sequences as arrays, a variant as its selected option's value.
// Returns the index of the value after the subtree. Bounded for hostile
// plans and values: past 64 levels of nesting, past the end of values, or a
// variant selecting an option that does not exist, it writes null and
// returns values.size().
size_t append_json_value(std::string &out, const ctf::reader::Plan &plan, uint32_t i,
                         std::span<const ctf::reader::Value> values, size_t v);

} // namespace tracery::analysis
