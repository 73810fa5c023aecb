// analysis/sql/json_text.hpp — text from hostile traces made safe for SQL
// TEXT and JSON: invalid UTF-8 bytes replaced by '?' (base/utf8.hpp), and
// JSON string escaping; and a decoded field (struct, array, sequence,
// variant) written as JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "analysis/export_model.hpp"
#include "ctf/reader/decoder.hpp"

namespace tracery::analysis::sql {

// s with every byte that is not part of a valid UTF-8 sequence replaced by '?'.
void append_utf8(std::string &out, std::string_view s);
// JSON strings: analysis::append_json_string (export_model.hpp).

// The value of op i of plan at values[v] as JSON (integers as numbers,
// enumerations as their label, floats as numbers or null when not finite,
// text as strings, structs as objects, arrays and sequences as arrays, a
// variant as its selected option's value); returns the next value index.
size_t append_json_value(std::string &out, const ctf::reader::Plan &plan, uint32_t i, const ctf::reader::Value *values,
                         size_t v);

} // namespace tracery::analysis::sql
