// filter/compiler.hpp — a parsed filter to bytecode for one event type: name
// resolution against the event descriptor, type checking, constant folding,
// code generation (see bytecode.hpp for the machine).
//
// Types: integers (int64), floats (double), strings. Integer fields, BOOL
// (0/1) and ENUM fields are integers, FLOAT and DOUBLE fields floats;
// ARRAY/SEQUENCE fields are read one constant index at a time (values[2]).
// Mixed integer/float operations convert the integer side. % << >> & | ^ ~
// need integers. Strings only compare with == and != to another string; a
// string literal is a glob ("*" any run of bytes, "\*" a star). When both
// sides are literals, they are equal when either one, as a glob, matches the
// other's text. The filter accepts an event when its value is non-zero.
//
// Constant subexpressions are folded with the machine's semantics: a
// constant division by zero or shift count outside 0..63 rejects the event
// wherever the machine would reach it (so `0 && 1/0` is 0, `!(1/0)` rejects).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filter/ast.hpp"
#include "filter/bytecode.hpp"
#include "filter/parser.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

struct Compiled {
	Program program;
	// Fields the event does not have ("name"), and constant indices past an
	// ARRAY's length ("name[9]"), in order of appearance. When not empty the
	// program rejects every event (push_int 0; ret), as LTTng does.
	std::vector<std::string> missing_fields;
};

// Code for events of type desc; nullopt on a type error or a filter over the
// bytecode limits (then *error says why, if error is not null).
std::optional<Compiled> compile(const Expr &expr, const tracery_event_desc &desc, Error *error);

// parse() then compile().
std::optional<Compiled> compile_filter(std::string_view expression, const tracery_event_desc &desc, Error *error);

// The integer result of `a op b` (a binary operator but && and ||) as the
// machine computes it (bytecode.hpp); nullopt when it rejects the event.
std::optional<int64_t> fold_int(Operator op, int64_t a, int64_t b);

// Levenshtein distance between two names (for "did you mean" suggestions).
size_t edit_distance(std::string_view a, std::string_view b);

// For a filter attached to every event in `events` (those an event pattern
// matches): an error for the first field name none of them has, with a
// suggestion ("did you mean 'size'?") from their field names; else the
// first compile error when no event compiles with all its fields present;
// else nullopt.
std::optional<Error> check_fields(const Expr &expr, const std::vector<const tracery_event_desc *> &events);

} // namespace tracery::filter
