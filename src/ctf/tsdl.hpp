// ctf/tsdl.hpp — lexical helpers for writing TSDL (CTF 1.8 metadata) text:
// string literals, identifiers, field names.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "ctf/tsdl_keywords.hpp"

namespace tracery::ctf {

// A TSDL string literal, quotes included: invalid UTF-8 bytes become '?',
// '"' and '\' are backslash-escaped, \n \t \r stay readable, other control
// characters become 3-digit octal escapes (\033). Valid UTF-8 is kept.
std::string tsdl_string_literal(std::string_view s);

// [A-Za-z_][A-Za-z0-9_]*
bool is_tsdl_identifier(std::string_view s) noexcept;
// A type name the metadata preamble defines (uint32_t, ...).
bool is_preamble_type_name(std::string_view s) noexcept;

// The TSDL name of a user field: "_" + name, with every byte outside
// [A-Za-z0-9_] replaced by '_' ("" -> "_field"). Readers (babeltrace2)
// strip the leading underscore, so "count" is shown as "count", and no
// name can collide with a keyword or a type name. The three names that
// would still be keywords (_Bool, _Complex, _Imaginary) get a trailing '_'.
std::string tsdl_field_name(std::string_view name);

// Hands out unique names within one struct: the first request for a name
// gets it, later ones get name_2, name_3...
class FieldNameSet {
public:
	std::string unique(std::string name);

private:
	std::set<std::string, std::less<>> used_;
};

} // namespace tracery::ctf
