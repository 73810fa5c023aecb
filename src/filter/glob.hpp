// filter/glob.hpp — str_match: the string comparison shared by the
// interpreter and the JIT (which calls tracery_filter_str_match()).
//
// A literal operand (always the right one) is a glob: '*' matches any run of
// bytes, "\*" a literal star, "\\" a backslash, any other byte (a lone
// backslash too) itself. Two non-literal operands (fields, procname) are
// compared for equality. glob_match() also serves the compiler's folding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "filter/bytecode.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

// True if `text` matches glob `pattern` (both counted, not NUL-terminated).
bool glob_match(const char *pattern, size_t pattern_len, const char *text, size_t text_len) noexcept;

// What a str_match instruction compares, resolved once (the JIT keeps one
// per instruction; literal points into the program's strings).
struct StrMatchSpec {
	StringKind left_kind;
	StringKind right_kind;
	uint32_t left_index;  // field index, or unused
	uint32_t right_index; // field index, or unused
	const char *left_literal;
	size_t left_literal_len;
	const char *right_literal;
	size_t right_literal_len;
};

StrMatchSpec make_str_match_spec(const Insn &insn, const std::vector<std::string> &strings) noexcept;

// 1 if the operands of `spec` match for this event, else 0.
extern "C" int tracery_filter_str_match(const tracery_arg *args, const Context *ctx, const StrMatchSpec *spec) noexcept;

} // namespace tracery::filter
