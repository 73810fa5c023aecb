// filter/compiler_test.cpp — compiling filters for one event type: emitted
// code, type rules, constant folding, short-circuit shapes, string globs,
// missing fields, limits, and check_fields() (did-you-mean).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "filter/compiler.hpp"

namespace tracery::filter {
namespace {

const tracery_enum_entry kColorEntries[] = {{"red", 0, 0}, {"blue", 1, 1}};
const tracery_enum_desc kColor = {"color", kColorEntries, 2};

const tracery_field_desc kFields[] = {
	{"size", TRACERY_TYPE_U64, 0, 0, nullptr},                     // #0
	{"delta", TRACERY_TYPE_S32, 0, 0, nullptr},                    // #1
	{"ratio", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},                 // #2
	{"ok", TRACERY_TYPE_BOOL, 0, 0, nullptr},                      // #3
	{"color", TRACERY_TYPE_ENUM, TRACERY_TYPE_U8, 0, &kColor},     // #4
	{"path", TRACERY_TYPE_STRING, 0, 0, nullptr},                  // #5
	{"name", TRACERY_TYPE_STRING, 0, 0, nullptr},                  // #6
	{"vals", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 4, nullptr},    // #7
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U32, 0, nullptr},  // #8
	{"fvals", TRACERY_TYPE_ARRAY, TRACERY_TYPE_FLOAT, 2, nullptr}, // #9
	{"data", TRACERY_TYPE_BLOB, 0, 0, nullptr},                    // #10
	{"a.b", TRACERY_TYPE_U8, 0, 0, nullptr},                       // #11
	{"temp", TRACERY_TYPE_FLOAT, 0, 0, nullptr},                   // #12
};
const tracery_event_desc kEvent = {"app",   "request", kFields, std::size(kFields), 0,
                                   nullptr, nullptr,   nullptr, TRACERY_GATE_ARGS};

// "load_field #0 t3; push_int 4096; gt; ret"
std::string disassemble(const Program &program)
{
	std::string out;
	for (const Insn &i : program.code) {
		if (!out.empty())
			out += "; ";
		out += op_name(i.op);
		char buf[64] = "";
		switch (i.op) {
		case Op::push_int:
			std::snprintf(buf, sizeof buf, " %lld", static_cast<long long>(i.imm));
			break;
		case Op::push_float:
			std::snprintf(buf, sizeof buf, " %g", std::bit_cast<double>(i.imm));
			break;
		case Op::load_field:
			std::snprintf(buf, sizeof buf, " #%u t%u", i.field, i.type);
			break;
		case Op::load_element:
			std::snprintf(buf, sizeof buf, " #%u t%u [%u]", i.field, i.type, i.arg);
			break;
		case Op::load_context:
			std::snprintf(buf, sizeof buf, " %u", i.arg);
			break;
		case Op::str_match:
			std::snprintf(buf, sizeof buf, " 0x%02x %u %u", i.type, i.field, i.arg);
			break;
		case Op::jump_if_false:
		case Op::jump_if_true:
			std::snprintf(buf, sizeof buf, " ->%u", i.arg);
			break;
		default:
			break;
		}
		out += buf;
	}
	return out;
}

// The code, or "error@position: message".
std::string c(std::string_view expression, const tracery_event_desc &desc = kEvent)
{
	Error error{"", 0};
	const auto compiled = compile_filter(expression, desc, &error);
	if (!compiled)
		return "error@" + std::to_string(error.position) + ": " + error.message;
	return disassemble(compiled->program);
}

Compiled compiled(std::string_view expression)
{
	Error error{"", 0};
	auto result = compile_filter(expression, kEvent, &error);
	EXPECT_TRUE(result) << expression << ": " << error.message;
	return result ? std::move(*result) : Compiled{};
}

// The constant a folded expression leaves in `size == (expression)`.
std::string folded(std::string_view expression)
{
	std::string code = c("size == (" + std::string(expression) + ")");
	for (const std::string prefix : {"load_field #0 t3; ", "to_float; "})
		if (code.rfind(prefix, 0) == 0)
			code.erase(0, prefix.size());
	return code.substr(0, code.find(';'));
}

TEST(FilterCompiler, LoadsEveryFieldKind)
{
	EXPECT_EQ(c("size > 4096"), "load_field #0 t3; push_int 4096; gt; ret");
	EXPECT_EQ(c("delta"), "load_field #1 t6; ret");
	EXPECT_EQ(c("ratio"), "load_field #2 t9; float_to_bool; ret");
	EXPECT_EQ(c("ok"), "load_field #3 t10; ret");
	EXPECT_EQ(c("color == 1"), "load_field #4 t0; push_int 1; eq; ret");
	EXPECT_EQ(c("vals[3] == -1"), "load_element #7 t5 [3]; push_int -1; eq; ret");
	EXPECT_EQ(c("vals[1 + 2 * 1]"), "load_element #7 t5 [3]; ret");
	EXPECT_EQ(c("seq[100000]"), "load_element #8 t2 [100000]; ret");
	EXPECT_EQ(c("fvals[1] > 0"), "load_element #9 t8 [1]; push_float 0; fgt; ret");
	EXPECT_EQ(c("a.b"), "load_field #11 t0; ret");
	EXPECT_EQ(c("temp < 0.5"), "load_field #12 t8; push_float 0.5; flt; ret");
	EXPECT_EQ(c("$ctx.vpid == 42"), "load_context 0; push_int 42; eq; ret");
	EXPECT_EQ(c("$ctx.vtid"), "load_context 1; ret");
	EXPECT_EQ(c("$ctx.cpu_id"), "load_context 2; ret");
}

TEST(FilterCompiler, Operators)
{
	const std::pair<const char *, const char *> ops[] = {
		{"*", "mul"},  {"/", "div"},  {"%", "mod"},  {"+", "add"}, {"-", "sub"}, {"<<", "shl"},
		{">>", "shr"}, {"<", "lt"},   {"<=", "le"},  {">", "gt"},  {">=", "ge"}, {"==", "eq"},
		{"!=", "ne"},  {"&", "band"}, {"^", "bxor"}, {"|", "bor"},
	};
	for (const auto &[op, name] : ops)
		EXPECT_EQ(c(std::string("size ") + op + " delta"),
		          std::string("load_field #0 t3; load_field #1 t6; ") + name + "; ret");
	const std::pair<const char *, const char *> fops[] = {
		{"*", "fmul"}, {"/", "fdiv"}, {"+", "fadd"}, {"-", "fsub"}, {"<", "flt"},
		{"<=", "fle"}, {">", "fgt"},  {">=", "fge"}, {"==", "feq"}, {"!=", "fne"},
	};
	for (const auto &[op, name] : fops) {
		const bool compare = std::string(name).size() == 3;
		EXPECT_EQ(c(std::string("ratio ") + op + " temp"),
		          std::string("load_field #2 t9; load_field #12 t8; ") + name +
		                  (compare ? "; ret" : "; float_to_bool; ret"));
	}
	EXPECT_EQ(c("-size"), "load_field #0 t3; neg; ret");
	EXPECT_EQ(c("~size"), "load_field #0 t3; bnot; ret");
	EXPECT_EQ(c("!size"), "load_field #0 t3; lnot; ret");
	EXPECT_EQ(c("+size"), "load_field #0 t3; ret");
	EXPECT_EQ(c("-ratio"), "load_field #2 t9; fneg; float_to_bool; ret");
	EXPECT_EQ(c("!ratio"), "load_field #2 t9; float_to_bool; lnot; ret");
	EXPECT_EQ(c("!!ratio"), "load_field #2 t9; float_to_bool; lnot; lnot; ret");
}

TEST(FilterCompiler, MixedArithmeticConvertsTheIntegerSide)
{
	EXPECT_EQ(c("size + ratio > 1"), "load_field #0 t3; to_float; load_field #2 t9; fadd; push_float 1; fgt; ret");
	EXPECT_EQ(c("ratio > size"), "load_field #2 t9; load_field #0 t3; to_float; fgt; ret");
	EXPECT_EQ(c("ratio * 2"), "load_field #2 t9; push_float 2; fmul; float_to_bool; ret");
	EXPECT_EQ(c("(size > 1) + temp"),
	          "load_field #0 t3; push_int 1; gt; to_float; load_field #12 t8; fadd; float_to_bool; ret");
	EXPECT_EQ(c("size / 2 < ratio"), "load_field #0 t3; push_int 2; div; to_float; load_field #2 t9; flt; ret");
}

TEST(FilterCompiler, TypeErrors)
{
	EXPECT_EQ(c("path < 3"), "error@5: '<' needs numbers, not a string");
	EXPECT_EQ(c("\"a\" + 1"), "error@4: '+' needs numbers, not a string");
	EXPECT_EQ(c("path == 3"), "error@5: '==' compares a string with a number");
	EXPECT_EQ(c("1.5 != $ctx.procname"), "error@4: '!=' compares a string with a number");
	EXPECT_EQ(c("size % 1.5"), "error@5: '%' needs integers, not a float");
	for (const char *op : {"<<", ">>", "&", "|", "^"})
		EXPECT_EQ(c(std::string("ratio ") + op + " 1"),
		          std::string("error@6: '") + op + "' needs integers, not a float");
	EXPECT_EQ(c("~ratio"), "error@0: '~' needs an integer, not a float");
	EXPECT_EQ(c("~1.0"), "error@0: '~' needs an integer, not a float");
	EXPECT_EQ(c("-path"), "error@0: '-' needs a number, not a string");
	EXPECT_EQ(c("!path"), "error@0: '!' needs a number, not a string");
	EXPECT_EQ(c("path && 1"), "error@5: '&&' needs numbers, not a string");
	EXPECT_EQ(c("1 || \"x\""), "error@2: '||' needs numbers, not a string");
	EXPECT_EQ(c("path"), "error@0: a string is not a condition; compare it with == or !=");
	EXPECT_EQ(c("(\"x\")"), "error@1: a string is not a condition; compare it with == or !=");
	EXPECT_EQ(c("vals == 1"), "error@0: 'vals' is an array; compare one element, e.g. vals[0]");
	EXPECT_EQ(c("1 < seq"), "error@4: 'seq' is a sequence; compare one element, e.g. seq[0]");
	EXPECT_EQ(c("data"), "error@0: 'data' is a blob; filters cannot read blobs");
	EXPECT_EQ(c("path[0] == 1"), "error@0: 'path' is not an array or a sequence");
	EXPECT_EQ(c("size[0]"), "error@0: 'size' is not an array or a sequence");
	EXPECT_EQ(c("data[0]"), "error@0: 'data' is not an array or a sequence");
	EXPECT_EQ(c("vals[-1]"), "error@5: negative index");
	EXPECT_EQ(c("vals[size]"), "error@5: an index must be a constant integer");
	EXPECT_EQ(c("vals[1.0]"), "error@5: an index must be a constant integer");
	EXPECT_EQ(c("vals[1/0]"), "error@6: an index must be a constant integer");
	EXPECT_EQ(c("vals[\"x\"]"), "error@5: an index must be a constant integer");
	// Type errors are found in code that folding drops.
	EXPECT_EQ(c("0 && path > 1"), "error@10: '>' needs numbers, not a string");
}

TEST(FilterCompiler, FoldsConstants)
{
	EXPECT_EQ(c("1 + 2 * 3 == 7"), "push_int 1; ret");
	EXPECT_EQ(c("(1 + 2) * 3 == 7"), "push_int 0; ret");
	EXPECT_EQ(c("42"), "push_int 1; ret");
	EXPECT_EQ(c("0.0"), "push_int 0; ret");
	EXPECT_EQ(c("-0.0 == 0"), "push_int 1; ret");
	EXPECT_EQ(c("0.5"), "push_int 1; ret");
	EXPECT_EQ(c("1e308 * 10 > 1e308"), "push_int 1; ret");
	EXPECT_EQ(c("(0.0 / 0) == (0.0 / 0)"), "push_int 0; ret"); // NaN
	EXPECT_EQ(c("(0.0 / 0) != (0.0 / 0)"), "push_int 1; ret");
	EXPECT_EQ(c("!(0.0 / 0)"), "push_int 0; ret");

	EXPECT_EQ(folded("2 + 3"), "push_int 5");
	EXPECT_EQ(folded("9223372036854775807 + 1"), "push_int -9223372036854775808");
	EXPECT_EQ(folded("-9223372036854775807 - 2"), "push_int 9223372036854775807");
	EXPECT_EQ(folded("4611686018427387904 * 4"), "push_int 0");
	EXPECT_EQ(folded("(-9223372036854775807 - 1) / -1"), "push_int -9223372036854775808");
	EXPECT_EQ(folded("(-9223372036854775807 - 1) % -1"), "push_int 0");
	EXPECT_EQ(folded("-(-9223372036854775807 - 1)"), "push_int -9223372036854775808");
	EXPECT_EQ(folded("-7 / 2"), "push_int -3");
	EXPECT_EQ(folded("-7 % 2"), "push_int -1");
	EXPECT_EQ(folded("7 % -2"), "push_int 1");
	EXPECT_EQ(folded("1 << 63"), "push_int -9223372036854775808");
	EXPECT_EQ(folded("3 << 63"), "push_int -9223372036854775808");
	EXPECT_EQ(folded("-8 >> 1"), "push_int -4");
	EXPECT_EQ(folded("-1 >> 63"), "push_int -1");
	EXPECT_EQ(folded("~0"), "push_int -1");
	EXPECT_EQ(folded("!5"), "push_int 0");
	EXPECT_EQ(folded("!0"), "push_int 1");
	EXPECT_EQ(folded("!0.5"), "push_int 0");
	EXPECT_EQ(folded("0x10 | 1 ^ 3 & 2"), "push_int 19");
	EXPECT_EQ(folded("3 < 2.5"), "push_int 0");
	EXPECT_EQ(folded("2 <= 2"), "push_int 1");
	EXPECT_EQ(folded("5 && 7"), "push_int 1");
	EXPECT_EQ(folded("0.0 || 0.25"), "push_int 1");
	EXPECT_EQ(folded("+4"), "push_int 4");
	EXPECT_EQ(folded("1 + 0.5"), "push_float 1.5");
	EXPECT_EQ(folded("1 / 2 + 0.5"), "push_float 0.5");
	EXPECT_EQ(folded("1 / 2.0"), "push_float 0.5");
	EXPECT_EQ(folded("1 / 2"), "push_int 0");
	EXPECT_EQ(folded("-(1.0 / 0)"), "push_float -inf");
	EXPECT_EQ(folded("1.0 / 0"), "push_float inf");
	// size compared with a float: the load is converted.
	EXPECT_EQ(c("size == 1.5 * 2"), "load_field #0 t3; to_float; push_float 3; feq; ret");
	EXPECT_EQ(c("ratio + 1"), "load_field #2 t9; push_float 1; fadd; float_to_bool; ret");
}

TEST(FilterCompiler, ConstantFaultsReject)
{
	// Wherever the machine would divide by zero or shift out of range, the
	// event is rejected.
	EXPECT_EQ(c("1 / 0"), "push_int 0; ret");
	EXPECT_EQ(c("!(1 % 0)"), "push_int 0; ret");
	EXPECT_EQ(c("size > 1 << 64"), "push_int 0; ret");
	EXPECT_EQ(c("!(size >> -1)"), "push_int 0; ret");
	EXPECT_EQ(c("!(size / 0)"), "push_int 0; ret");
	EXPECT_EQ(c("ratio + 1 / 0 || 1"), "push_int 0; ret");
	// ... but not where it would not run.
	EXPECT_EQ(c("!(0 && 1 / 0)"), "push_int 1; ret");
	EXPECT_EQ(c("1 || 1 / 0"), "push_int 1; ret");
	EXPECT_EQ(c("!(size > 3 && 1 / 0)"),
	          "load_field #0 t3; push_int 3; gt; jump_if_false ->7; push_int 0; push_int 0; div; lnot; ret");
	EXPECT_EQ(c("size || 1.0 / 0 + 1 % 0"),
	          "load_field #0 t3; to_bool; jump_if_true ->6; push_int 0; push_int 0; div; ret");
	EXPECT_EQ(c("size && -(1.0 + 1 % 0)"), "load_field #0 t3; jump_if_false ->5; push_int 0; push_int 0; div; ret");
	EXPECT_EQ(c("size && (1 % 0) + ratio"),
	          "load_field #0 t3; jump_if_false ->5; push_int 0; push_int 0; div; ret");
	// Float division by zero does not fault.
	EXPECT_EQ(c("size / 2.0 / 0"), "load_field #0 t3; to_float; push_float 2; fdiv; push_float 0; fdiv; "
	                               "float_to_bool; ret");
	// Operations that may fault at run time.
	EXPECT_EQ(c("size / delta"), "load_field #0 t3; load_field #1 t6; div; ret");
	EXPECT_EQ(c("size << delta"), "load_field #0 t3; load_field #1 t6; shl; ret");
}

TEST(FilterCompiler, ShortCircuitShapes)
{
	EXPECT_EQ(c("size > 1 && delta < 2"),
	          "load_field #0 t3; push_int 1; gt; jump_if_false ->7; load_field #1 t6; push_int 2; lt; ret");
	EXPECT_EQ(c("size || delta"), "load_field #0 t3; to_bool; jump_if_true ->5; load_field #1 t6; to_bool; ret");
	EXPECT_EQ(c("size && delta"), "load_field #0 t3; jump_if_false ->4; load_field #1 t6; to_bool; ret");
	EXPECT_EQ(c("ratio && temp"),
	          "load_field #2 t9; float_to_bool; jump_if_false ->5; load_field #12 t8; float_to_bool; ret");
	EXPECT_EQ(c("ok || size > 1"), "load_field #3 t10; to_bool; jump_if_true ->6; load_field #0 t3; push_int 1; "
	                               "gt; ret");
	// Jump targets are relocated when fragments nest.
	EXPECT_EQ(c("(size && delta) || ok"), "load_field #0 t3; jump_if_false ->4; load_field #1 t6; to_bool; "
	                                      "jump_if_true ->7; load_field #3 t10; to_bool; ret");
	EXPECT_EQ(c("size || (delta && ok)"), "load_field #0 t3; to_bool; jump_if_true ->7; load_field #1 t6; "
	                                      "jump_if_false ->7; load_field #3 t10; to_bool; ret");
	EXPECT_EQ(c("!(size && delta) + 1"), "load_field #0 t3; jump_if_false ->4; load_field #1 t6; to_bool; lnot; "
	                                     "push_int 1; add; ret");
}

TEST(FilterCompiler, ShortCircuitFolding)
{
	EXPECT_EQ(c("0 && size"), "push_int 0; ret");
	EXPECT_EQ(c("1 || size"), "push_int 1; ret");
	EXPECT_EQ(c("1 && size"), "load_field #0 t3; to_bool; ret");
	EXPECT_EQ(c("0.0 || size"), "load_field #0 t3; to_bool; ret");
	EXPECT_EQ(c("size && 1"), "load_field #0 t3; to_bool; ret");
	EXPECT_EQ(c("size || 0"), "load_field #0 t3; to_bool; ret");
	EXPECT_EQ(c("ratio && 1"), "load_field #2 t9; float_to_bool; ret");
	EXPECT_EQ(c("size > 2 && 1"), "load_field #0 t3; push_int 2; gt; ret");
	EXPECT_EQ(c("(size && 1) + 5"), "load_field #0 t3; to_bool; push_int 5; add; ret");
	EXPECT_EQ(c("size && 0"), "push_int 0; ret");
	EXPECT_EQ(c("size || 2"), "push_int 1; ret");
	EXPECT_EQ(c("!(size && 0)"), "push_int 1; ret");
	// The left side is kept when it may reject the event.
	EXPECT_EQ(c("!(seq[2] && 0)"), "load_element #8 t2 [2]; jump_if_false ->3; push_int 0; lnot; ret");
	EXPECT_EQ(c("!(size / delta || 1)"),
	          "load_field #0 t3; load_field #1 t6; div; to_bool; jump_if_true ->6; push_int 1; lnot; ret");
	EXPECT_EQ(c("!(size % 3 || 1)"), "push_int 0; ret");
}

TEST(FilterCompiler, Strings)
{
	auto r = compiled("path == \"/usr/*\"");
	EXPECT_EQ(disassemble(r.program), "str_match 0x20 5 0; ret");
	EXPECT_EQ(r.program.strings, std::vector<std::string>{"/usr/*"});
	// The literal always goes right.
	EXPECT_EQ(encode(compiled("\"/usr/*\" == path").program), encode(r.program));
	EXPECT_EQ(c("path != \"x\""), "str_match 0x20 5 0; lnot; ret");
	EXPECT_EQ(c("path == name"), "str_match 0x00 5 6; ret");
	EXPECT_EQ(c("$ctx.procname == \"ba*\""), "str_match 0x21 0 0; ret");
	EXPECT_EQ(c("path != $ctx.procname"), "str_match 0x10 5 0; lnot; ret");
	EXPECT_EQ(c("$ctx.procname == name"), "str_match 0x01 0 6; ret");
	EXPECT_EQ(c("path == \"x\" || size"), "str_match 0x20 5 0; jump_if_true ->4; load_field #0 t3; to_bool; ret");

	// Escapes: \* and \\ stay escaped for the glob matcher.
	r = compiled(R"(path == "a\*b\\c\"d\n")");
	EXPECT_EQ(r.program.strings, std::vector<std::string>{"a\\*b\\\\c\"d\n"});

	// Literals are shared, numbered in order of use; unused ones dropped.
	r = compiled(R"(path == "x" || name == "y" || name == "x")");
	EXPECT_EQ(disassemble(r.program), "str_match 0x20 5 0; jump_if_true ->3; str_match 0x20 6 1; "
	                                  "jump_if_true ->5; str_match 0x20 6 0; ret");
	EXPECT_EQ(r.program.strings, (std::vector<std::string>{"x", "y"}));
	r = compiled(R"(0 && path == "x" || name == "y")");
	EXPECT_EQ(disassemble(r.program), "str_match 0x20 6 0; ret");
	EXPECT_EQ(r.program.strings, std::vector<std::string>{"y"});
}

TEST(FilterCompiler, FoldsLiteralComparisons)
{
	EXPECT_EQ(c(R"("abc" == "abc")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("abc" == "abd")"), "push_int 0; ret");
	EXPECT_EQ(c(R"("abc" != "abd")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("abc" == "a*")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("a*" == "abc")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("a*c" == "*b*")"), "push_int 0; ret");
	EXPECT_EQ(c(R"("abc" == "a\*c")"), "push_int 0; ret");
	EXPECT_EQ(c(R"("a\*c" == "a\*c")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("a\\c" == "a\\*")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("" == "*")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("" == "")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("ab" == "a**b*")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("abcbd" == "a*bd")"), "push_int 1; ret");
	EXPECT_EQ(c(R"("abcbe" == "a*bd")"), "push_int 0; ret");
}

TEST(FilterCompiler, MissingFieldsReject)
{
	auto r = compiled("size > 1 && nosuch == 2");
	EXPECT_EQ(disassemble(r.program), "push_int 0; ret");
	EXPECT_TRUE(r.program.strings.empty());
	EXPECT_EQ(r.missing_fields, std::vector<std::string>{"nosuch"});

	r = compiled("x == 1 || vals[4] > 0 || x == 2 || a.c == path || nosuch[2] == 0 || 0 && y");
	EXPECT_EQ(disassemble(r.program), "push_int 0; ret");
	EXPECT_EQ(r.missing_fields, (std::vector<std::string>{"x", "vals[4]", "a.c", "nosuch", "y"}));

	r = compiled("vals[3] == 1");
	EXPECT_TRUE(r.missing_fields.empty());

	// A missing field has no type, but the rest is still checked.
	EXPECT_EQ(c("nosuch == \"x\" && nosuch + 1.5 > 2"), "push_int 0; ret");
	EXPECT_EQ(c("nosuch + \"a\""), "error@7: '+' needs numbers, not a string");
	EXPECT_EQ(c("nosuch & 1.5"), "error@7: '&' needs integers, not a float");
	EXPECT_EQ(c("vals[nosuch]"), "error@5: an index must be a constant integer");
}

TEST(FilterCompiler, Limits)
{
	// Too many strings.
	std::string e = "path == \"s0\"";
	for (size_t i = 1; i <= kMaxStrings; ++i)
		e += " || path == \"s" + std::to_string(i) + "\"";
	EXPECT_EQ(c(e), "error@0: filter too complex (257 strings, limit 256)");
	// Too many string bytes.
	EXPECT_EQ(c("path == \"" + std::string(3000, 'a') + "\" || name == \"" + std::string(2000, 'b') + "\""),
	          "error@0: filter too complex (5000 bytes of strings, limit 4096)");
	EXPECT_EQ(c("path == \"" + std::string(kMaxStringBytes, 'a') + "\"").substr(0, 9), "str_match");
	// Too deep a stack.
	const auto right_nested = [](size_t n) {
		std::string s;
		for (size_t i = 0; i < n; ++i)
			s += "size + (";
		return s + "size" + std::string(n, ')');
	};
	EXPECT_EQ(c(right_nested(kMaxStack - 1)).substr(0, 10), "load_field");
	EXPECT_EQ(c(right_nested(kMaxStack)), "error@0: filter too complex (stack of 65, limit 64)");
	// Too many instructions.
	e = "size * size * size * size";
	for (int i = 0; i < 700; ++i)
		e += " + size * size * size * size";
	EXPECT_EQ(c(e), "error@0: filter too complex (over 4096 instructions, limit 4096)");
	// A long constant chain folds to nothing.
	e = "1";
	for (size_t i = 1; i < kMaxHeight - 1; ++i)
		e += "+1";
	EXPECT_EQ(c("size == " + e), "load_field #0 t3; push_int 999; eq; ret");
}

TEST(FilterCompiler, CheckFields)
{
	static const tracery_field_desc a_fields[] = {
		{"size", TRACERY_TYPE_U64, 0, 0, nullptr},
		{"path", TRACERY_TYPE_STRING, 0, 0, nullptr},
	};
	static const tracery_field_desc b_fields[] = {
		{"size", TRACERY_TYPE_U32, 0, 0, nullptr},
		{"count", TRACERY_TYPE_U32, 0, 0, nullptr},
		{"path", TRACERY_TYPE_U32, 0, 0, nullptr},
	};
	static const tracery_event_desc a = {"app", "a", a_fields, 2, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
	static const tracery_event_desc b = {"app", "b", b_fields, 3, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
	static const tracery_event_desc b_only = {"app",   "b",     b_fields,         2, 0, nullptr,
	                                          nullptr, nullptr, TRACERY_GATE_ARGS};

	const auto check = [](std::string_view expression, const std::vector<const tracery_event_desc *> &events) {
		const auto expr = parse(expression, nullptr);
		EXPECT_TRUE(expr);
		const auto error = check_fields(*expr, events);
		return error ? render_error(expression, *error) : std::string("ok");
	};

	EXPECT_EQ(check("size > 4096 && sise < 3", {&a, &b}), "unknown field 'sise'; did you mean 'size'?\n"
	                                                      "  size > 4096 && sise < 3\n"
	                                                      "                 ^");
	EXPECT_EQ(check("size > 1 && cnt < 3", {&a, &b}),
	          "unknown field 'cnt'; did you mean 'count'?\n  size > 1 && cnt < 3\n              ^");
	EXPECT_EQ(check("vals[2] > 1", {&a, &b}), "unknown field 'vals'\n  vals[2] > 1\n  ^");
	EXPECT_EQ(check("zzzzz > 1", {&a, &b}), "unknown field 'zzzzz'\n  zzzzz > 1\n  ^");
	EXPECT_EQ(check("size > 1", {}), "unknown field 'size'\n  size > 1\n  ^");
	EXPECT_EQ(check("count > 1", {&a, &b}), "ok"); // in b only
	EXPECT_EQ(check("size > 1 && $ctx.vpid == 3", {&a, &b}), "ok");
	// A type error on one event is fine when another compiles ...
	EXPECT_EQ(check("path > 1", {&a, &b}), "ok");
	// ... but not when every other one misses a field.
	EXPECT_EQ(check("path > 1", {&a, &b_only}), "'>' needs numbers, not a string\n  path > 1\n       ^");
	EXPECT_EQ(check("path > 1 || count", {&a, &b_only}),
	          "'>' needs numbers, not a string\n  path > 1 || count\n       ^");
	// Every event misses a field but none has a type error: accepted.
	EXPECT_EQ(check("path == \"x\" || count > 2", {&a, &b_only}), "ok");
}

TEST(FilterCompiler, CompileFilterReportsSyntaxErrors)
{
	Error error{"", 0};
	EXPECT_FALSE(compile_filter("size >", kEvent, &error));
	EXPECT_EQ(error.message, "expected an operand here");
	EXPECT_EQ(error.position, 6u);
	EXPECT_FALSE(compile_filter("path < 1", kEvent, nullptr));
}

} // namespace
} // namespace tracery::filter
