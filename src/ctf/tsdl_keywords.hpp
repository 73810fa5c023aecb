// ctf/tsdl_keywords.hpp — the reserved words of TSDL (CTF 1.8 metadata),
// which cannot name a field or a type: one list for the writer (ctf/tsdl.hpp)
// and the reader's parser (ctf/reader/tsdl_parser.cpp).
#pragma once

#include <array>
#include <string_view>

namespace tracery::ctf {

// A TSDL keyword (struct, event, _Bool...), which cannot name anything.
constexpr bool is_tsdl_keyword(std::string_view s) noexcept
{
	constexpr std::array<std::string_view, 28> kKeywords = {
		"align",   "callsite", "char",    "clock",          "const",  "double",   "enum",
		"env",     "event",    "float",   "floating_point", "int",    "integer",  "long",
		"short",   "signed",   "stream",  "string",         "struct", "trace",    "typealias",
		"typedef", "unsigned", "variant", "void",           "_Bool",  "_Complex", "_Imaginary",
	};
	for (std::string_view k : kKeywords)
		if (s == k)
			return true;
	return false;
}

} // namespace tracery::ctf
