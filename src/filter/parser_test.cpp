// filter/parser_test.cpp — filter expression syntax: precedence,
// associativity, literals, limits, error messages and carets.
#include <gtest/gtest.h>

#include <cmath>

#include "filter/parser.hpp"

namespace tracery::filter {
namespace {

// The tree fully parenthesised: "(a + (b * c))".
std::string show(const Expr &e)
{
	switch (e.kind) {
	case ExprKind::integer:
		return std::to_string(e.integer);
	case ExprKind::floating: {
		char buf[32];
		std::snprintf(buf, sizeof buf, "%gf", e.floating);
		return buf;
	}
	case ExprKind::string:
		return "\"" + e.text + "\"";
	case ExprKind::field:
		return e.text;
	case ExprKind::element:
		return e.text + "[" + show(*e.lhs) + "]";
	case ExprKind::context: {
		static const char *const kNames[] = {"vpid", "vtid", "procname", "cpu_id"};
		return std::string("$ctx.") + kNames[static_cast<int>(e.context)];
	}
	case ExprKind::unary:
		return '(' + std::string(spelling(e.op)) + show(*e.lhs) + ")";
	case ExprKind::binary:
		return '(' + show(*e.lhs) + " " + spelling(e.op) + " " + show(*e.rhs) + ")";
	}
	return "?";
}

// The tree, or "error@position: message".
std::string p(std::string_view expression)
{
	Error error{"", 0};
	const auto e = parse(expression, &error);
	if (!e)
		return "error@" + std::to_string(error.position) + ": " + error.message;
	return show(*e);
}

TEST(FilterParser, Precedence)
{
	EXPECT_EQ(p("a || b && c"), "(a || (b && c))");
	EXPECT_EQ(p("a && b | c"), "(a && (b | c))");
	EXPECT_EQ(p("a | b ^ c"), "(a | (b ^ c))");
	EXPECT_EQ(p("a ^ b & c"), "(a ^ (b & c))");
	EXPECT_EQ(p("a & b == c"), "(a & (b == c))");
	EXPECT_EQ(p("a != b < c"), "(a != (b < c))");
	EXPECT_EQ(p("a >= b << c"), "(a >= (b << c))");
	EXPECT_EQ(p("a >> b + c"), "(a >> (b + c))");
	EXPECT_EQ(p("a - b % c"), "(a - (b % c))");
	EXPECT_EQ(p("-a * b"), "((-a) * b)");
	EXPECT_EQ(p("!a == b"), "((!a) == b)");
	EXPECT_EQ(p("a * b + c < d == e & f ^ g | h && i || j"),
	          "(((((((((a * b) + c) < d) == e) & f) ^ g) | h) && i) || j)");
	EXPECT_EQ(p("j || i && h | g ^ f & e == d < c + b * a"),
	          "(j || (i && (h | (g ^ (f & (e == (d < (c + (b * a)))))))))");
	EXPECT_EQ(p("(a + b) * c"), "((a + b) * c)");
	EXPECT_EQ(p("((a))"), "a");
}

TEST(FilterParser, Associativity)
{
	EXPECT_EQ(p("a - b - c"), "((a - b) - c)");
	EXPECT_EQ(p("a / b % c * d"), "(((a / b) % c) * d)");
	EXPECT_EQ(p("a << b >> c"), "((a << b) >> c)");
	EXPECT_EQ(p("a < b > c <= d >= e"), "((((a < b) > c) <= d) >= e)");
	EXPECT_EQ(p("a == b != c"), "((a == b) != c)");
	EXPECT_EQ(p("a || b || c"), "((a || b) || c)");
	EXPECT_EQ(p("a && b && c"), "((a && b) && c)");
	EXPECT_EQ(p("- - a"), "(-(-a))");
	EXPECT_EQ(p("!~+-a"), "(!(~(+(-a))))");
	EXPECT_EQ(p("a--b"), "(a - (-b))");
}

TEST(FilterParser, EveryOperator)
{
	for (const char *op :
	     {"*", "/", "%", "+", "-", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&", "^", "|", "&&", "||"})
		EXPECT_EQ(p(std::string("x") + op + "y"), std::string("(x ") + op + " y)");
	for (const char *op : {"!", "-", "~", "+"})
		EXPECT_EQ(p(std::string(op) + "x"), std::string("(") + op + "x)");
}

TEST(FilterParser, IntegerLiterals)
{
	EXPECT_EQ(p("42"), "42");
	EXPECT_EQ(p("0x2a"), "42");
	EXPECT_EQ(p("0X2A"), "42");
	EXPECT_EQ(p("052"), "42");
	EXPECT_EQ(p("0"), "0");
	EXPECT_EQ(p("00"), "0");
	EXPECT_EQ(p("9223372036854775807"), "9223372036854775807");
	EXPECT_EQ(p("0x7fffffffffffffff"), "9223372036854775807");
	EXPECT_EQ(p("0777777777777777777777"), "9223372036854775807");
	EXPECT_EQ(p("-9223372036854775807 - 1"), "((-9223372036854775807) - 1)");
	EXPECT_EQ(p("9223372036854775808"), "error@0: integer literal out of range");
	EXPECT_EQ(p("x == 0x8000000000000000"), "error@5: integer literal out of range");
	EXPECT_EQ(p("x == 01000000000000000000000"), "error@5: integer literal out of range");
	EXPECT_EQ(p("99999999999999999999999"), "error@0: integer literal out of range");
	EXPECT_EQ(p("x + 12abc"), "error@4: invalid number '12abc'");
	EXPECT_EQ(p("0x"), "error@0: invalid number '0x'");
	EXPECT_EQ(p("0x1g"), "error@0: invalid number '0x1g'");
	EXPECT_EQ(p("1 == 09"), "error@5: invalid octal number '09'");
}

TEST(FilterParser, FloatLiterals)
{
	EXPECT_EQ(p("1.5"), "1.5f");
	EXPECT_EQ(p("1e3"), "1000f");
	EXPECT_EQ(p(".5"), "0.5f");
	EXPECT_EQ(p("2."), "2f");
	EXPECT_EQ(p("1E-2"), "0.01f");
	EXPECT_EQ(p("2.5e+1"), "25f");
	EXPECT_EQ(p("09.5"), "9.5f");
	EXPECT_EQ(p("1e"), "error@0: invalid number '1e'");
	EXPECT_EQ(p("1.5.3"), "error@0: invalid number '1.5.3'");
	EXPECT_EQ(p("x < 1e999"), "error@4: floating literal out of range");
	const auto e = parse("0.1", nullptr);
	ASSERT_TRUE(e);
	EXPECT_EQ(e->floating, 0.1);
}

TEST(FilterParser, StringLiterals)
{
	auto e = parse(R"("a\"b\\c\*d\ne\tf*")", nullptr);
	ASSERT_TRUE(e);
	EXPECT_EQ(e->kind, ExprKind::string);
	// \\ and \* stay escaped (glob syntax), the others are decoded.
	EXPECT_EQ(e->text, "a\"b\\\\c\\*d\ne\tf*");
	EXPECT_EQ(p(R"("")"), R"("")");
	EXPECT_EQ(p(R"(s == "abc)"), "error@5: unterminated string");
	EXPECT_EQ(p(R"(s == "abc\)"), "error@5: unterminated string");
	EXPECT_EQ(p(R"(s == "a\qb")"), R"(error@7: unknown escape sequence (known: \" \\ \n \t \*))");
}

TEST(FilterParser, Operands)
{
	EXPECT_EQ(p("size"), "size");
	EXPECT_EQ(p("_a1.b_2.c"), "_a1.b_2.c");
	EXPECT_EQ(p("vals[3]"), "vals[3]");
	EXPECT_EQ(p("vals[1 + 2] * 2"), "(vals[(1 + 2)] * 2)");
	EXPECT_EQ(p("vals [ 3 ]"), "vals[3]");
	EXPECT_EQ(p("$ctx.vpid == $ctx.vtid"), "($ctx.vpid == $ctx.vtid)");
	EXPECT_EQ(p("$ctx.procname"), "$ctx.procname");
	EXPECT_EQ(p("$ctx.cpu_id"), "$ctx.cpu_id");
	EXPECT_EQ(p(" \t\n size\n"), "size");
	const auto e = parse("a + bb", nullptr);
	ASSERT_TRUE(e);
	EXPECT_EQ(e->position, 2u);
	EXPECT_EQ(e->lhs->position, 0u);
	EXPECT_EQ(e->rhs->position, 4u);
	EXPECT_EQ(e->height, 2u);
}

TEST(FilterParser, Errors)
{
	EXPECT_EQ(p("(a + b"), "error@6: expected ')' here");
	EXPECT_EQ(p("(a + b]"), "error@6: expected ')' here");
	EXPECT_EQ(p("vals[1"), "error@6: expected ']' here");
	EXPECT_EQ(p("a +"), "error@3: expected an operand here");
	EXPECT_EQ(p("a + * b"), "error@4: expected an operand here");
	EXPECT_EQ(p("()"), "error@1: expected an operand here");
	EXPECT_EQ(p("a @ b"), "error@2: unexpected character '@'");
	EXPECT_EQ(p("a == \x01"), "error@5: unexpected character '\\x01'");
	EXPECT_EQ(p("a == \xc3\xa9"), "error@5: unexpected character '\\xc3'");
	EXPECT_EQ(p("$"), "error@0: unexpected character '$'");
	EXPECT_EQ(p("a = 1"), "error@2: '=' is not an operator; did you mean '=='?");
	EXPECT_EQ(
		p("$ctx.foo == 1"),
		"error@0: unknown context field '$ctx.foo' (known: $ctx.vpid, $ctx.vtid, $ctx.procname, $ctx.cpu_id)");
	EXPECT_EQ(p("1 + $app.x"),
	          "error@4: unknown context field '$app.x' (known: $ctx.vpid, $ctx.vtid, $ctx.procname, $ctx.cpu_id)");
	EXPECT_EQ(p("a xyz"), "error@2: unexpected 'xyz' after the expression");
	EXPECT_EQ(p("a )"), "error@2: unexpected ')' after the expression");
	EXPECT_EQ(p("(a) [1]"), "error@4: unexpected '[' after the expression");
	EXPECT_EQ(p("a \"0123456789012345678901234567890123456789\""),
	          "error@2: unexpected '\"0123456789012345678901234567890...' after the expression");
	EXPECT_EQ(p(""), "error@0: empty filter expression");
	EXPECT_EQ(p("  \t"), "error@3: empty filter expression");

	// A null error pointer is allowed.
	EXPECT_EQ(parse("(", nullptr), nullptr);
}

TEST(FilterParser, Limits)
{
	const auto nested = [](size_t n) { return std::string(n, '(') + "a" + std::string(n, ')'); };
	EXPECT_EQ(p(nested(kMaxNesting)), "a");
	EXPECT_EQ(p(nested(kMaxNesting + 1)), "error@200: expression nested too deeply (limit 200)");
	EXPECT_EQ(p(nested(100000)).substr(0, 10), "error@6553"); // too long first
	EXPECT_EQ(p(std::string(kMaxNesting + 1, '-') + "a"), "error@200: expression nested too deeply (limit 200)");
	std::string index = "a";
	for (size_t i = 0; i <= kMaxNesting; ++i)
		index = "a[" + index + "]";
	EXPECT_EQ(p(index), "error@401: expression nested too deeply (limit 200)");

	// Long operator chains are flat for the parser but deep as a tree.
	std::string chain = "a";
	for (size_t i = 1; i < kMaxHeight; ++i)
		chain += "+a";
	EXPECT_NE(p(chain).substr(0, 5), "error");
	chain += "+a";
	EXPECT_EQ(p(chain), "error@1999: expression too long: over 1000 nested operations");

	const std::string longest = 'a' + std::string(kMaxExpressionLength - 1, ' ');
	EXPECT_EQ(p(longest), "a");
	EXPECT_EQ(p(longest + " "), "error@65536: expression too long (65537 bytes, limit 65536)");
	// The worst inputs within the limits parse quickly and without a deep
	// recursion.
	EXPECT_EQ(p(std::string(kMaxExpressionLength, '(')).substr(0, 9), "error@200");
	EXPECT_EQ(p(std::string(kMaxExpressionLength, '!')).substr(0, 9), "error@200");
	// The deepest recursion: every precedence level before each parenthesis
	// (the tree is too high, but that is known only on the way back).
	std::string climb;
	for (size_t i = 0; i < kMaxNesting; ++i)
		climb += "a || b && c | d ^ e & f == g < h << i + j * (";
	climb += 'a' + std::string(kMaxNesting, ')');
	const std::string climbed = p(climb);
	EXPECT_EQ(climbed.substr(climbed.find(':')), ": expression too long: over 1000 nested operations");
}

TEST(FilterParser, RenderError)
{
	EXPECT_EQ(render_error("size > 4096 && sise < 3", {"unknown field 'sise'; did you mean 'size'?", 15}),
	          "unknown field 'sise'; did you mean 'size'?\n"
	          "  size > 4096 && sise < 3\n"
	          "                 ^");
	// At the end (expected an operand here).
	EXPECT_EQ(render_error("a +", {"m", 3}), "m\n  a +\n     ^");
	EXPECT_EQ(render_error("", {"m", 0}), "m\n  \n  ^");
	// Control characters show as spaces; a UTF-8 character is one column.
	EXPECT_EQ(render_error("a\t==\n\"\xc3\xa9\" @", {"m", 10}), "m\n  a == \"\xc3\xa9\" @\n           ^");
}

} // namespace
} // namespace tracery::filter
