// filter/parser.hpp — filter expressions (C-like, as LTTng's --filter) to a
// syntax tree, and error messages with a caret under the fault.
//
//   operands   integers (42, 0x2a, 052), floats (1.5, 1e3, .5), strings
//              ("a*b": '*' globs; escapes \" \\ \n \t and \* for a star),
//              fields (size, a.b), elements (values[3]), context fields
//              ($ctx.vpid, $ctx.vtid, $ctx.procname, $ctx.cpu_id)
//   operators  C's, with C's precedence: ! - ~ +, * / %, + -, << >>,
//              < <= > >=, == !=, &, ^, |, &&, ||, parentheses
// Types are checked by compile() (compiler.hpp), which knows the fields.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "filter/ast.hpp"

namespace tracery::filter {

struct Error {
	std::string message;
	size_t position; // byte offset in the expression (at most its length)
};

// Limits of parse(); beyond them it fails cleanly.
inline constexpr size_t kMaxExpressionLength = 64 * 1024;
inline constexpr size_t kMaxNesting = 200; // parentheses, unary operators, indices
inline constexpr size_t kMaxHeight = 1000; // Expr::height (long operator chains)

// The message, then the expression and a caret under the fault on lines
// indented by two spaces; no trailing newline.
std::string render_error(std::string_view expression, const Error &e);

// nullptr on a syntax error (then *error says why, if error is not null).
std::unique_ptr<Expr> parse(std::string_view expression, Error *error);

} // namespace tracery::filter
