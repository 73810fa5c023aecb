// filter/ast.hpp — the syntax tree of a filter expression, as parse() builds
// it and compile() reads it. Every node knows its byte offset in the
// expression, for error carets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tracery::filter {

enum class ExprKind : uint8_t {
	integer,  // integer
	floating, // floating
	string,   // text: the literal as Program::strings holds it
	field,    // text: field name ("a.b" for a nested name)
	element,  // text: field name, lhs: index expression
	context,  // context
	unary,    // op, lhs
	binary,   // op, lhs, rhs
};

enum class Operator : uint8_t {
	// unary
	lnot,
	neg,
	bnot,
	plus,
	// binary
	mul,
	div,
	mod,
	add,
	sub,
	shl,
	shr,
	lt,
	le,
	gt,
	ge,
	eq,
	ne,
	band,
	bxor,
	bor,
	land,
	lor,
};

enum class ContextName : uint8_t { vpid, vtid, procname, cpu_id };

struct Expr {
	ExprKind kind;
	size_t position;   // of the operand's first byte, or of the operator
	size_t height = 1; // nodes on the longest path to a leaf (parse() bounds it)
	Operator op = Operator::lnot;
	ContextName context = ContextName::vpid;
	int64_t integer = 0;
	double floating = 0;
	std::string text;
	std::unique_ptr<Expr> lhs, rhs;
};

// The operator as written ("<=", "&&", unary "-" ...).
inline const char *spelling(Operator op)
{
	static constexpr const char *kSpellings[] = {
		"!", "-",  "~", "+",  "*",  "/",  "%", "+", "-", "<<", ">>",
		"<", "<=", ">", ">=", "==", "!=", "&", "^", "|", "&&", "||",
	};
	return kSpellings[static_cast<size_t>(op)];
}

inline bool is_comparison(Operator op)
{
	return op == Operator::lt || op == Operator::le || op == Operator::gt || op == Operator::ge ||
	       op == Operator::eq || op == Operator::ne;
}

// The operators that take integers only.
inline bool needs_integers(Operator op)
{
	return op == Operator::mod || op == Operator::shl || op == Operator::shr || op == Operator::band ||
	       op == Operator::bor || op == Operator::bxor;
}

} // namespace tracery::filter
