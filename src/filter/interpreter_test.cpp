// filter/interpreter_test.cpp — the semantics of every instruction
// (bytecode.hpp), edge cases included, run through both engines: the
// interpreter (directly and through Filter) and the JIT.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "filter/filter.hpp"
#include "filter/glob.hpp"
#include "filter/interpreter.hpp"
#include "filter/test_insns.hpp"

namespace tracery::filter {
namespace {

using Code = std::vector<Insn>;

enum Field : uint16_t { U8, U16, U32, U64, S8, S16, S32, S64, FLT, DBL, BOOL, ENUM, ARR, SEQ, STR, NAME };

const tracery_enum_entry kEntries[] = {{"zero", 0, 0}};
const tracery_enum_desc kEnum = {"e", kEntries, 1};
const tracery_field_desc kFields[] = {
	{"u8", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"u16", TRACERY_TYPE_U16, 0, 0, nullptr},
	{"u32", TRACERY_TYPE_U32, 0, 0, nullptr},
	{"u64", TRACERY_TYPE_U64, 0, 0, nullptr},
	{"s8", TRACERY_TYPE_S8, 0, 0, nullptr},
	{"s16", TRACERY_TYPE_S16, 0, 0, nullptr},
	{"s32", TRACERY_TYPE_S32, 0, 0, nullptr},
	{"s64", TRACERY_TYPE_S64, 0, 0, nullptr},
	{"f", TRACERY_TYPE_FLOAT, 0, 0, nullptr},
	{"d", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},
	{"b", TRACERY_TYPE_BOOL, 0, 0, nullptr},
	{"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_S8, 0, &kEnum},
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 4, nullptr},
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_DOUBLE, 0, nullptr},
	{"str", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"name", TRACERY_TYPE_STRING, 0, 0, nullptr},
};
const tracery_event_desc kEvent = {"test", "every", kFields, 16, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

// A second event: float array, bool sequence, u32.
const tracery_field_desc kFields2[] = {
	{"fa", TRACERY_TYPE_ARRAY, TRACERY_TYPE_FLOAT, 2, nullptr},
	{"bs", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_BOOL, 0, nullptr},
	{"big", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U64, 0x20000000, nullptr},
	{"blob", TRACERY_TYPE_BLOB, 0, 0, nullptr},
};
const tracery_event_desc kEvent2 = {"test", "more", kFields2, 4, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

struct Payload {
	uint8_t u8 = 200;
	uint16_t u16 = 60000;
	uint32_t u32 = 4000000000u;
	uint64_t u64 = UINT64_MAX;
	int8_t s8 = -100;
	int16_t s16 = -30000;
	int32_t s32 = -2000000000;
	int64_t s64 = INT64_MIN;
	float f = 1.5f;
	double d = -2.25;
	uint8_t b = 2; // not 0/1: loads as 1
	int8_t e = -3;
	int16_t arr[4] = {-1, 2, -32768, 32767};
	const int16_t *arr_ptr = arr;
	uint32_t arr_len = 4;
	double seq[3] = {0.5, -0.0, 1e300};
	const double *seq_ptr = seq;
	uint32_t seq_len = 3;
	const char *str = "hello world";
	uint32_t str_len = 11;
	const char *name = "hello world";
	uint32_t name_len = 11;

	std::vector<tracery_arg> args() const
	{
		return {{&u8, 0},           {&u16, 0},          {&u32, 0},      {&u64, 0},       {&s8, 0}, {&s16, 0},
		        {&s32, 0},          {&s64, 0},          {&f, 0},        {&d, 0},         {&b, 0},  {&e, 0},
		        {arr_ptr, arr_len}, {seq_ptr, seq_len}, {str, str_len}, {name, name_len}};
	}
};

using test::I;
using test::push;
using test::pushf;
Insn load(const tracery_event_desc &d, uint16_t f)
{
	return I(Op::load_field, uint8_t(load_field_type(d.fields[f])), f);
}
Insn load(uint16_t f) { return load(kEvent, f); }
Insn elem(const tracery_event_desc &d, uint16_t f, uint32_t i)
{
	return I(Op::load_element, d.fields[f].elem_type, f, i);
}
Insn elem(uint16_t f, uint32_t i) { return elem(kEvent, f, i); }
Insn match(StringKind l, uint16_t li, StringKind r, uint32_t ri)
{
	return I(Op::str_match, uint8_t(uint8_t(l) | uint8_t(r) << 4), li, ri);
}
Code operator+(Code a, const Code &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

constexpr int64_t kMin = INT64_MIN, kMax = INT64_MAX;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

class Engines : public ::testing::TestWithParam<Engine> {
protected:
	// Runs code (+ ret) on the event; checks that every way to run it agrees.
	bool run(Code code, const Payload &p = {}, std::vector<std::string> strings = {},
	         const tracery_event_desc &desc = kEvent, const std::vector<tracery_arg> *args = nullptr)
	{
		code.push_back(I(Op::ret));
		const Program program{code, strings};
		std::string why;
		const std::unique_ptr<Filter> filter = Filter::load(program, desc, GetParam(), &why);
		EXPECT_TRUE(filter) << why;
		if (!filter)
			return false;
		EXPECT_EQ(filter->engine(), GetParam());
		const std::vector<tracery_arg> payload_args = p.args();
		const tracery_arg *a = args ? args->data() : payload_args.data();
		const bool result = filter->accepts(a, &ctx);
		if (GetParam() == Engine::interpreter) {
			EXPECT_EQ(interpret(program, desc, a, &ctx), result);
		}
		return result;
	}
	// code leaves an int: it must be exactly v.
	void int_is(const Code &code, int64_t v, const Payload &p = {})
	{
		EXPECT_TRUE(run(code + Code{push(v), I(Op::eq)}, p)) << "expected " << v;
		EXPECT_FALSE(run(code + Code{push(v ^ 1), I(Op::eq)}, p)) << "expected " << v;
	}
	// code leaves a float: it must be v (NaN: unordered with 0).
	void float_is(const Code &code, double v, const Payload &p = {})
	{
		if (std::isnan(v)) {
			EXPECT_TRUE(run(code + Code{pushf(0), I(Op::fne)}, p)) << "expected NaN";
			EXPECT_FALSE(run(code + Code{pushf(0), I(Op::fge)}, p)) << "expected NaN";
			EXPECT_FALSE(run(code + Code{pushf(0), I(Op::flt)}, p)) << "expected NaN";
			return;
		}
		EXPECT_TRUE(run(code + Code{pushf(v), I(Op::feq)}, p)) << "expected " << v;
		// Also the sign of zero: 1/x keeps it.
		if (v == 0) {
			EXPECT_TRUE(run(Code{pushf(1)} + code + Code{I(Op::fdiv), pushf(1 / v), I(Op::feq)}, p))
				<< "expected " << v;
		}
	}
	// code leaves an int, but the filter must reject before.
	void rejects(const Code &code, const Payload &p = {})
	{
		EXPECT_FALSE(run(code + Code{push(0), I(Op::mul), I(Op::lnot)}, p));
	}

	Context ctx{1234, 5678, 3, "myproc", 6};
};

TEST_P(Engines, PushAndRet)
{
	EXPECT_TRUE(run({push(1)}));
	EXPECT_TRUE(run({push(-1)}));
	EXPECT_TRUE(run({push(kMin)})); // any non-zero accepts, even with a zero low half
	EXPECT_TRUE(run({push(int64_t{1} << 32)}));
	EXPECT_FALSE(run({push(0)}));
	float_is({pushf(2.5)}, 2.5);
	float_is({pushf(-0.0)}, -0.0);
	float_is({pushf(kNaN)}, kNaN);
}

TEST_P(Engines, IntArithmeticWraps)
{
	int_is({push(2), push(3), I(Op::add)}, 5);
	int_is({push(kMax), push(1), I(Op::add)}, kMin);
	int_is({push(kMin), push(1), I(Op::sub)}, kMax);
	int_is({push(3), push(5), I(Op::sub)}, -2);
	int_is({push(-7), push(6), I(Op::mul)}, -42);
	int_is({push(kMax), push(2), I(Op::mul)}, -2);
	int_is({push(kMin), push(-1), I(Op::mul)}, kMin);
	int_is({push(5), I(Op::neg)}, -5);
	int_is({push(kMin), I(Op::neg)}, kMin);
	int_is({push(0), I(Op::bnot)}, -1);
	int_is({push(0x0f0f), push(0x00ff), I(Op::band)}, 0x000f);
	int_is({push(0x0f0f), push(0x00ff), I(Op::bor)}, 0x0fff);
	int_is({push(0x0f0f), push(0x00ff), I(Op::bxor)}, 0x0ff0);
	int_is({push(0), I(Op::lnot)}, 1);
	int_is({push(kMin), I(Op::lnot)}, 0);
	int_is({push(0), I(Op::to_bool)}, 0);
	int_is({push(int64_t{1} << 40), I(Op::to_bool)}, 1);
}

TEST_P(Engines, DivisionTruncatesAndNeverTraps)
{
	int_is({push(7), push(2), I(Op::div)}, 3);
	int_is({push(-7), push(2), I(Op::div)}, -3);
	int_is({push(7), push(-2), I(Op::div)}, -3);
	int_is({push(-7), push(2), I(Op::mod)}, -1);
	int_is({push(7), push(-2), I(Op::mod)}, 1);
	int_is({push(kMin), push(-1), I(Op::div)}, kMin);
	int_is({push(kMin), push(-1), I(Op::mod)}, 0);
	int_is({push(kMax), push(-1), I(Op::div)}, -kMax);
	int_is({push(kMin), push(kMin), I(Op::div)}, 1);
	int_is({push(kMin), push(kMax), I(Op::mod)}, -1);
	rejects({push(1), push(0), I(Op::div)});
	rejects({push(1), push(0), I(Op::mod)});
	rejects({push(0), push(0), I(Op::mod)});
	// A reject is final even when the rest would accept.
	EXPECT_FALSE(run({push(1), push(0), I(Op::div), I(Op::lnot), push(1), I(Op::bor)}));
}

TEST_P(Engines, ShiftsCheckTheCount)
{
	int_is({push(1), push(0), I(Op::shl)}, 1);
	int_is({push(1), push(63), I(Op::shl)}, kMin);
	int_is({push(3), push(63), I(Op::shl)}, kMin);
	int_is({push(kMin), push(63), I(Op::shr)}, -1);
	int_is({push(kMax), push(62), I(Op::shr)}, 1);
	int_is({push(-8), push(1), I(Op::shr)}, -4);
	int_is({push(-1), push(0), I(Op::shr)}, -1);
	rejects({push(1), push(64), I(Op::shl)});
	rejects({push(1), push(-1), I(Op::shl)});
	rejects({push(1), push(64), I(Op::shr)});
	rejects({push(1), push(-1), I(Op::shr)});
	rejects({push(1), push(kMin), I(Op::shr)});
	rejects({push(1), push(int64_t{1} << 32), I(Op::shl)}); // low bits 0: still out of range
}

TEST_P(Engines, SignedComparisons)
{
	const struct {
		int64_t a, b;
	} pairs[] = {{1, 2}, {2, 1}, {3, 3}, {-1, 1}, {kMin, kMax}, {kMax, kMin}, {kMin, kMin}, {0, -1}};
	for (const auto &[a, b] : pairs) {
		int_is({push(a), push(b), I(Op::eq)}, a == b);
		int_is({push(a), push(b), I(Op::ne)}, a != b);
		int_is({push(a), push(b), I(Op::lt)}, a < b);
		int_is({push(a), push(b), I(Op::le)}, a <= b);
		int_is({push(a), push(b), I(Op::gt)}, a > b);
		int_is({push(a), push(b), I(Op::ge)}, a >= b);
	}
}

TEST_P(Engines, FloatArithmetic)
{
	float_is({pushf(1.5), pushf(2.25), I(Op::fadd)}, 3.75);
	float_is({pushf(1.5), pushf(2.25), I(Op::fsub)}, -0.75);
	float_is({pushf(1.5), pushf(-2), I(Op::fmul)}, -3);
	float_is({pushf(1), pushf(4), I(Op::fdiv)}, 0.25);
	float_is({pushf(1), pushf(0), I(Op::fdiv)}, kInf);
	float_is({pushf(-1), pushf(0), I(Op::fdiv)}, -kInf);
	float_is({pushf(0), pushf(0), I(Op::fdiv)}, kNaN);
	float_is({pushf(kInf), pushf(kInf), I(Op::fsub)}, kNaN);
	float_is({pushf(0), I(Op::fneg)}, -0.0);
	float_is({pushf(-0.0), I(Op::fneg)}, 0.0);
	float_is({pushf(3), I(Op::fneg)}, -3);
	float_is({push(-7), I(Op::to_float)}, -7);
	float_is({push(kMin), I(Op::to_float)}, -9223372036854775808.0);
	float_is({push(kMax), I(Op::to_float)}, 9223372036854775808.0); // rounded
	// to_float converts the top only.
	float_is({pushf(0.5), push(2), I(Op::to_float), I(Op::fadd)}, 2.5);
}

TEST_P(Engines, FloatComparisonsAreIeee)
{
	const double values[] = {1, 2, -0.0, 0.0, kNaN, kInf, -kInf};
	for (double a : values)
		for (double b : values) {
			int_is({pushf(a), pushf(b), I(Op::feq)}, a == b);
			int_is({pushf(a), pushf(b), I(Op::fne)}, a != b);
			int_is({pushf(a), pushf(b), I(Op::flt)}, a < b);
			int_is({pushf(a), pushf(b), I(Op::fle)}, a <= b);
			int_is({pushf(a), pushf(b), I(Op::fgt)}, a > b);
			int_is({pushf(a), pushf(b), I(Op::fge)}, a >= b);
		}
	int_is({pushf(0.0), I(Op::float_to_bool)}, 0);
	int_is({pushf(-0.0), I(Op::float_to_bool)}, 0);
	int_is({pushf(1e-300), I(Op::float_to_bool)}, 1);
	int_is({pushf(kNaN), I(Op::float_to_bool)}, 1);
}

TEST_P(Engines, FieldLoadsExtendByType)
{
	Payload p;
	int_is({load(U8)}, 200, p);
	int_is({load(U16)}, 60000, p);
	int_is({load(U32)}, 4000000000, p);
	int_is({load(U64)}, -1, p);
	int_is({load(S8)}, -100, p);
	int_is({load(S16)}, -30000, p);
	int_is({load(S32)}, -2000000000, p);
	int_is({load(S64)}, kMin, p);
	float_is({load(FLT)}, 1.5, p);
	float_is({load(DBL)}, -2.25, p);
	int_is({load(BOOL)}, 1, p);
	int_is({load(ENUM)}, -3, p);
	p.b = 0;
	int_is({load(BOOL)}, 0, p);
	p.f = std::numeric_limits<float>::quiet_NaN();
	float_is({load(FLT)}, kNaN, p);
	p.f = 3.1f;
	float_is({load(FLT)}, double(3.1f), p);
	p.s8 = 127;
	p.u8 = 0;
	int_is({load(S8)}, 127, p);
	int_is({load(U8)}, 0, p);
}

TEST_P(Engines, ArrayElementsDefaultToZero)
{
	Payload p;
	int_is({elem(ARR, 0)}, -1, p);
	int_is({elem(ARR, 2)}, -32768, p);
	int_is({elem(ARR, 3)}, 32767, p);
	p.arr_len = 2; // short: the missing elements are zeros
	int_is({elem(ARR, 1)}, 2, p);
	int_is({elem(ARR, 2)}, 0, p);
	int_is({elem(ARR, 3)}, 0, p);
	p.arr_ptr = nullptr;
	p.arr_len = 4;
	int_is({elem(ARR, 0)}, 0, p);

	const float fa[2] = {0.25f, -8};
	const uint8_t bs[3] = {0, 1, 7};
	std::vector<tracery_arg> args = {{fa, 2}, {bs, 3}, {nullptr, 0}, {nullptr, 0}};
	EXPECT_TRUE(run({elem(kEvent2, 0, 1), pushf(-8), I(Op::feq)}, {}, {}, kEvent2, &args));
	EXPECT_TRUE(run({elem(kEvent2, 1, 2), push(1), I(Op::eq)}, {}, {}, kEvent2, &args));
	EXPECT_TRUE(run({elem(kEvent2, 1, 0), I(Op::lnot)}, {}, {}, kEvent2, &args));
	// A huge array element index (offset over 2^31 bytes), short array: zero.
	EXPECT_TRUE(run({elem(kEvent2, 2, 0x1fffffff), I(Op::lnot)}, {}, {}, kEvent2, &args));
	args[0] = {fa, 1};
	EXPECT_TRUE(run({elem(kEvent2, 0, 1), pushf(0), I(Op::feq)}, {}, {}, kEvent2, &args));
	args[0] = {nullptr, 2};
	EXPECT_TRUE(run({elem(kEvent2, 0, 0), pushf(0), I(Op::feq)}, {}, {}, kEvent2, &args));
}

TEST_P(Engines, SequenceOutOfRangeRejects)
{
	Payload p;
	float_is({elem(SEQ, 0)}, 0.5, p);
	float_is({elem(SEQ, 1)}, -0.0, p);
	float_is({elem(SEQ, 2)}, 1e300, p);
	EXPECT_FALSE(run({elem(SEQ, 3), I(Op::float_to_bool), I(Op::lnot)}, p));
	EXPECT_FALSE(run({elem(SEQ, 0xffffffff), I(Op::float_to_bool), I(Op::lnot)}, p));
	p.seq_ptr = nullptr;
	EXPECT_FALSE(run({elem(SEQ, 0), I(Op::float_to_bool), I(Op::lnot)}, p));
	p.seq_ptr = p.seq;
	p.seq_len = 0;
	EXPECT_FALSE(run({elem(SEQ, 0), I(Op::float_to_bool), I(Op::lnot)}, p));
	// A reject in a branch not taken does not count.
	p.seq_len = 1;
	EXPECT_TRUE(
		run({push(1), I(Op::jump_if_true, 0, 0, 5), elem(SEQ, 5), I(Op::float_to_bool), I(Op::to_bool)}, p));
	EXPECT_FALSE(
		run({push(0), I(Op::jump_if_true, 0, 0, 5), elem(SEQ, 5), I(Op::float_to_bool), I(Op::to_bool)}, p));
}

TEST_P(Engines, ContextFields)
{
	int_is({I(Op::load_context, 0, 0, uint32_t(ContextField::vpid))}, 1234);
	int_is({I(Op::load_context, 0, 0, uint32_t(ContextField::vtid))}, 5678);
	int_is({I(Op::load_context, 0, 0, uint32_t(ContextField::cpu_id))}, 3);
	ctx.vpid = kMin;
	int_is({I(Op::load_context, 0, 0, uint32_t(ContextField::vpid))}, kMin);
}

TEST_P(Engines, JumpsShortCircuit)
{
	// a && b: a jump_if_false end; b to_bool; end: ret
	// base: the index of a's first instruction in the program.
	const auto land = [](Code a, Code b, size_t base = 0) {
		const uint32_t end = uint32_t(base + a.size() + b.size() + 2);
		return a + Code{I(Op::jump_if_false, 0, 0, end)} + b + Code{I(Op::to_bool)};
	};
	const auto lor = [](Code a, Code b, size_t base = 0) {
		const uint32_t end = uint32_t(base + a.size() + b.size() + 2);
		return a + Code{I(Op::jump_if_true, 0, 0, end)} + b + Code{I(Op::to_bool)};
	};
	for (int a = 0; a < 2; ++a)
		for (int b = 0; b < 2; ++b) {
			int_is(land({push(a * 5)}, {push(b * 7)}), a && b);
			int_is(lor({push(a * 5)}, {push(b * 7)}), a ? 5 : b); // a true value is kept as is
		}
	// Jumps with more on the stack below.
	int_is(Code{push(10)} + land({push(1)}, {push(3)}, 1) + Code{I(Op::add)}, 11);
	int_is(Code{pushf(1)} + land({push(0)}, {push(3)}, 1) +
	               Code{I(Op::to_float), I(Op::fadd), pushf(1), I(Op::feq)},
	       1);
}

TEST_P(Engines, StringMatch)
{
	using K = StringKind;
	Payload p;
	const std::vector<std::string> strings = {"hello*", "*world", "hello world", "h*o*d", "x*", "", "*", "myproc"};
	const auto matches = [&](Insn m, const Payload &payload) { return run({m}, payload, strings); };
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 0), p));
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 2), p));
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 3), p));
	EXPECT_FALSE(matches(match(K::field, STR, K::literal, 4), p));
	EXPECT_FALSE(matches(match(K::field, STR, K::literal, 5), p));
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 6), p));
	EXPECT_TRUE(matches(match(K::field, STR, K::field, NAME), p));
	EXPECT_TRUE(matches(match(K::procname, 0, K::literal, 7), p));
	EXPECT_FALSE(matches(match(K::procname, 0, K::field, STR), p));
	EXPECT_TRUE(matches(match(K::procname, 0, K::procname, 0), p));
	// A field's bytes end at its first NUL or at len.
	p.str = "hello\0world";
	EXPECT_FALSE(matches(match(K::field, STR, K::literal, 1), p));
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 0), p));
	p.str = "hello world, and more";
	EXPECT_TRUE(matches(match(K::field, STR, K::field, NAME), p));
	p.str_len = 5;
	EXPECT_FALSE(matches(match(K::field, STR, K::field, NAME), p));
	p.str = nullptr;
	p.str_len = 7;
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 5), p));
	EXPECT_TRUE(matches(match(K::field, STR, K::literal, 6), p));
	EXPECT_FALSE(matches(match(K::field, STR, K::literal, 0), p));
	// The result is an int 0/1 that the program can compute with.
	p = Payload();
	EXPECT_TRUE(run({match(K::field, STR, K::literal, 0), match(K::field, STR, K::literal, 4), I(Op::add), push(1),
	                 I(Op::eq)},
	                p, strings));
}

INSTANTIATE_TEST_SUITE_P(, Engines, ::testing::Values(Engine::interpreter, Engine::jit),
                         [](const auto &info) { return info.param == Engine::jit ? "jit" : "interpreter"; });

bool glob(std::string_view pattern, std::string_view text)
{
	return glob_match(pattern.data(), pattern.size(), text.data(), text.size());
}

TEST(Glob, StarsAndEscapes)
{
	EXPECT_TRUE(glob("", ""));
	EXPECT_FALSE(glob("", "a"));
	EXPECT_TRUE(glob("*", ""));
	EXPECT_TRUE(glob("**", "abc"));
	EXPECT_TRUE(glob("abc", "abc"));
	EXPECT_FALSE(glob("abc", "abcd"));
	EXPECT_FALSE(glob("abcd", "abc"));
	EXPECT_TRUE(glob("a*c", "abbbc"));
	EXPECT_TRUE(glob("a*c", "ac"));
	EXPECT_FALSE(glob("a*c", "abcb"));
	EXPECT_TRUE(glob("*b*b*", "abcbd"));
	EXPECT_TRUE(glob("*aab", "aaaab")); // needs the backtrack
	EXPECT_TRUE(glob("a*b*c", "axxbyybzc"));
	EXPECT_FALSE(glob("a*b*c", "axxbyybz"));
	EXPECT_TRUE(glob("a\\*", "a*"));
	EXPECT_FALSE(glob("a\\*", "ab"));
	EXPECT_TRUE(glob("\\\\", "\\"));
	EXPECT_FALSE(glob("\\\\", "\\\\"));
	EXPECT_TRUE(glob("\\n", "\\n")); // any other pair: byte for byte
	EXPECT_TRUE(glob("a\\", "a\\")); // a lone trailing backslash is itself
	EXPECT_TRUE(glob("*\\*", "xyz*"));
	EXPECT_FALSE(glob("*\\*", "xyz"));
	EXPECT_TRUE(glob("\\\\*", "\\abc"));
	EXPECT_TRUE(glob(std::string_view("a\0*", 3), std::string_view("a\0b", 3)));
	// Long texts stay fast.
	const std::string text(100000, 'a');
	EXPECT_FALSE(glob("*a*a*a*a*b", text));
	EXPECT_TRUE(glob("*a*a*a*a*", text));
}

} // namespace
} // namespace tracery::filter
