// filter/jit_test.cpp — what only the JIT and the Filter facade have: deep
// stacks (register spills), the longest programs, many string matches,
// division by constants, concurrent compilation, engine selection and
// fallback, event gates.
#include <gtest/gtest.h>

#include <bit>
#include <thread>

#include "filter/filter.hpp"
#include "filter/gate.hpp"
#include "filter/test_insns.hpp"

namespace tracery::filter {
namespace {

const tracery_field_desc kJitFields[] = {
	{"a", TRACERY_TYPE_S64, 0, 0, nullptr},
	{"x", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},
	{"s", TRACERY_TYPE_STRING, 0, 0, nullptr},
};
const tracery_event_desc kJitEvent = {"test", "jit", kJitFields, 3, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

using test::I;
using test::push;
using test::pushf;

struct Payload {
	int64_t a = 0;
	double x = 0;
	const char *s = "";
	tracery_arg args[3] = {{&a, 0}, {&x, 0}, {s, uint32_t(strlen(s))}};
};

std::unique_ptr<Filter> load(const Program &p, Engine e = Engine::jit)
{
	std::string why;
	std::unique_ptr<Filter> f = Filter::load(p, kJitEvent, e, &why);
	EXPECT_TRUE(f) << why;
	return f;
}

// Both engines on the same program and payload; returns the JIT's answer.
bool both(const Program &p, const Payload &payload)
{
	const std::unique_ptr<Filter> jit = load(p), interp = load(p, Engine::interpreter);
	if (!jit || !interp)
		return false;
	EXPECT_EQ(jit->engine(), Engine::jit);
	const bool r = jit->accepts(payload.args, nullptr);
	EXPECT_EQ(interp->accepts(payload.args, nullptr), r);
	return r;
}

TEST(Jit, FullStackOfInts)
{
	// a+1, a+2, ... a+64 on the stack (every slot live), then summed.
	Program p;
	for (int i = 1; i <= int(kMaxStack); ++i)
		p.code.insert(p.code.end(), {I(Op::load_field, TRACERY_TYPE_S64, 0), push(i), I(Op::add)});
	p.code.pop_back();
	p.code.pop_back();
	p.code.pop_back();
	p.code.push_back(I(Op::load_field, TRACERY_TYPE_S64, 0));
	for (size_t i = 1; i < kMaxStack; ++i)
		p.code.push_back(I(Op::add));
	// sum = 64 a + (1 + ... + 63) with the first slot a + 0.
	p.code.insert(p.code.end(), {push(64 * 1000 + 63 * 64 / 2), I(Op::eq), I(Op::ret)});
	Payload payload;
	payload.a = 1000;
	EXPECT_TRUE(both(p, payload));
	payload.a = 1001;
	EXPECT_FALSE(both(p, payload));
}

TEST(Jit, DeepMixedStack)
{
	// x, 0, x, 2, ... x, 62: float and int slots alternating, 64 deep; then
	// folded from the top: r = x + 62, and for i = 60 ... 0: r = x + i + (r != 0).
	Program p;
	for (int64_t i = 0; i < int64_t(kMaxStack); i += 2)
		p.code.insert(p.code.end(), {I(Op::load_field, TRACERY_TYPE_DOUBLE, 1), push(i)});
	p.code.insert(p.code.end(), {I(Op::to_float), I(Op::fadd)});
	for (size_t i = 2; i < kMaxStack; i += 2)
		p.code.insert(p.code.end(), {I(Op::float_to_bool), I(Op::add), I(Op::to_float), I(Op::fadd)});
	p.code.insert(p.code.end(), {pushf(1.5), I(Op::feq), I(Op::ret)});
	std::string why;
	VerifiedInfo info;
	ASSERT_TRUE(verify(p, kJitEvent, &info, &why)) << why;
	EXPECT_EQ(info.max_stack, kMaxStack);
	Payload payload;
	payload.x = 0.5;
	EXPECT_TRUE(both(p, payload));
	payload.x = -1;
	EXPECT_FALSE(both(p, payload));
}

// a / c and a % c with the divisor c pushed as a constant (±2^k compiled to
// shifts, others to idiv) against C++'s own operators and the interpreter,
// over divisors and dividends at every edge: powers of two, their
// neighbours, the extremes, multiples of the divisor and next to them.
const tracery_field_desc kPairFields[] = {
	{"a", TRACERY_TYPE_S64, 0, 0, nullptr},
	{"e", TRACERY_TYPE_S64, 0, 0, nullptr},
};
const tracery_event_desc kPair = {"test", "pair", kPairFields, 2, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

TEST(Jit, DivisionByConstantMatchesTheOperators)
{
	constexpr int64_t kMin = INT64_MIN, kMax = INT64_MAX;
	std::vector<int64_t> divisors = {1,
	                                 2,
	                                 3,
	                                 5,
	                                 6,
	                                 7,
	                                 10,
	                                 12,
	                                 25,
	                                 100,
	                                 641,
	                                 1000,
	                                 1 << 20,
	                                 1000000007,
	                                 (int64_t(1) << 32) + 1,
	                                 int64_t(1) << 40,
	                                 6700417,
	                                 kMax,
	                                 kMax - 1,
	                                 kMin,
	                                 kMin + 1,
	                                 int64_t(1) << 62,
	                                 (int64_t(1) << 62) + 1,
	                                 0x5555555555555555};
	for (size_t i = 0, n = divisors.size(); i < n; ++i)
		if (divisors[i] != kMin)
			divisors.push_back(-divisors[i]);
	divisors.insert(divisors.end(), {0, -1});
	std::vector<int64_t> dividends = {0,
	                                  1,
	                                  -1,
	                                  2,
	                                  -2,
	                                  3,
	                                  -3,
	                                  7,
	                                  -7,
	                                  99,
	                                  -99,
	                                  100,
	                                  -100,
	                                  101,
	                                  kMax,
	                                  kMin,
	                                  kMax - 1,
	                                  kMin + 1,
	                                  int64_t(1) << 32,
	                                  -(int64_t(1) << 32),
	                                  0x123456789abcdef,
	                                  -0x123456789abcdef};
	for (int64_t c : divisors)
		for (int64_t k : {int64_t(-1), int64_t(0), int64_t(1)})
			if (c != kMin && c != 0 && c != -1 && std::abs(c) < kMax / 3) {
				dividends.push_back(c * 3 + k);
				dividends.push_back(-(c * 3 + k));
			}
	const auto expect = [](Op op, int64_t a, int64_t c) {
		if (c == -1)
			return op == Op::div ? int64_t(0 - uint64_t(a)) : int64_t(0);
		return op == Op::div ? a / c : a % c;
	};
	for (Op op : {Op::div, Op::mod}) {
		for (int64_t c : divisors) {
			// (a OP c) == e: accepted when e is the right result, and not for e + 1.
			Program constant;
			constant.code = {I(Op::load_field, TRACERY_TYPE_S64, 0),
			                 I(Op::push_int, 0, 0, 0, c),
			                 I(op),
			                 I(Op::load_field, TRACERY_TYPE_S64, 1),
			                 I(Op::eq),
			                 I(Op::ret)};
			std::string why;
			const auto jit = Filter::load(constant, kPair, Engine::jit, &why);
			const auto interp = Filter::load(constant, kPair, Engine::interpreter, &why);
			ASSERT_TRUE(jit && interp) << why;
			ASSERT_EQ(jit->engine(), Engine::jit);
			for (int64_t a : dividends) {
				int64_t e = c == 0 ? 0 : expect(op, a, c);
				const tracery_arg args[] = {{&a, 0}, {&e, 0}};
				const char *what = op == Op::div ? " / " : " % ";
				if (c == 0) { // division by zero rejects the event
					EXPECT_FALSE(jit->accepts(args, nullptr)) << a << what << c;
					EXPECT_FALSE(interp->accepts(args, nullptr)) << a << what << c;
					continue;
				}
				EXPECT_TRUE(jit->accepts(args, nullptr)) << a << what << c << " != " << e;
				EXPECT_TRUE(interp->accepts(args, nullptr)) << a << what << c << " != " << e;
				e = int64_t(uint64_t(e) + 1); // wraps at INT64_MAX
				EXPECT_FALSE(jit->accepts(args, nullptr)) << a << what << c << " == " << e;
			}
		}
	}
}

TEST(Jit, LongestProgram)
{
	// a == 0 || a == 1 || ... up to kMaxInsns instructions.
	Program p;
	const size_t terms = (kMaxInsns - 1) / 4;
	for (size_t i = 0; i < terms; ++i) {
		p.code.insert(p.code.end(), {I(Op::load_field, TRACERY_TYPE_S64, 0), push(int64_t(i * 3)), I(Op::eq)});
		if (i + 1 < terms)
			p.code.push_back(I(Op::jump_if_true, 0, 0, uint32_t(terms * 4 - 1)));
	}
	p.code.push_back(I(Op::ret));
	ASSERT_LE(p.code.size(), kMaxInsns);
	Payload payload;
	for (int64_t a : {int64_t(0), int64_t(3), int64_t(3 * (terms - 1)), int64_t(1), int64_t(-3)}) {
		payload.a = a;
		EXPECT_EQ(both(p, payload), a >= 0 && a % 3 == 0 && a / 3 < int64_t(terms)) << a;
	}
}

TEST(Jit, ManyStringMatches)
{
	Program p;
	for (int i = 0; i < 40; ++i) {
		p.strings.push_back('v' + std::to_string(i) + "*");
		p.code.push_back(
			I(Op::str_match, uint8_t(StringKind::field) | uint8_t(StringKind::literal) << 4, 2, i));
		if (i)
			p.code.push_back(I(Op::add));
	}
	p.code.insert(p.code.end(), {push(2), I(Op::eq), I(Op::ret)});
	Payload payload;
	payload.s = "v3";
	payload.args[2] = {payload.s, 2};
	EXPECT_FALSE(both(p, payload)); // only v3*
	payload.s = "v30";
	payload.args[2] = {payload.s, 3};
	EXPECT_TRUE(both(p, payload)); // v3* and v30*
}

TEST(Jit, ConcurrentCompileAndRun)
{
	std::vector<std::thread> threads;
	std::atomic<int> wrong{0};
	for (int t = 0; t < 4; ++t)
		threads.emplace_back([t, &wrong] {
			for (int i = 0; i < 50; ++i) {
				const Program p{{I(Op::load_field, TRACERY_TYPE_S64, 0), push(t * 1000 + i), I(Op::eq),
				                 I(Op::ret)},
				                {}};
				const std::unique_ptr<Filter> f = Filter::load(p, kJitEvent, Engine::jit, nullptr);
				Payload payload;
				payload.a = t * 1000 + i;
				if (!f || f->engine() != Engine::jit || !f->accepts(payload.args, nullptr))
					++wrong;
				payload.a = -1;
				if (f->accepts(payload.args, nullptr))
					++wrong;
			}
		});
	for (std::thread &t : threads)
		t.join();
	EXPECT_EQ(wrong.load(), 0);
}

TEST(Filter, RefusesWhatDoesNotVerify)
{
	std::string why;
	EXPECT_FALSE(Filter::load(Program{{push(1), push(2), I(Op::ret)}, {}}, kJitEvent, Engine::jit, &why));
	EXPECT_EQ(why, "insn 2 (ret): needs exactly one int, stack has int, int");
	EXPECT_FALSE(Filter::load(Program{}, kJitEvent, Engine::interpreter, &why));
	EXPECT_EQ(why, "empty program");
}

TEST(Filter, SaysWhetherItNeedsTheContext)
{
	const Program plain{{push(1), I(Op::ret)}, {}};
	const Program vpid{{I(Op::load_context, 0, 0, uint32_t(ContextField::vpid)), I(Op::ret)}, {}};
	const Program procname{
		{I(Op::str_match, uint8_t(StringKind::procname) | uint8_t(StringKind::literal) << 4, 0, 0), I(Op::ret)},
		{"a*"}};
	for (Engine e : {Engine::jit, Engine::interpreter}) {
		EXPECT_FALSE(load(plain, e)->uses_context());
		EXPECT_TRUE(load(vpid, e)->uses_context());
		EXPECT_TRUE(load(procname, e)->uses_context());
		EXPECT_EQ(load(plain, e)->engine(), e);
		const Context ctx{7, 8, 9, "abc", 3};
		EXPECT_TRUE(load(vpid, e)->accepts(nullptr, &ctx));
		EXPECT_TRUE(load(procname, e)->accepts(nullptr, &ctx));
		EXPECT_TRUE(load(plain, e)->accepts(nullptr, nullptr));
	}
}

TEST(Gate, SharedPerProgramAndLayoutAndOnlyWithoutContext)
{
	const Program a_is_3{{I(Op::load_field, TRACERY_TYPE_S64, 0), push(3), I(Op::eq), I(Op::ret)}, {}};
	const auto gate = reinterpret_cast<tracery_args_gate_fn>(gate_for(a_is_3, kJitEvent));
	ASSERT_NE(gate, nullptr);
	Payload yes, no;
	yes.a = 3;
	no.a = 4;
	EXPECT_NE(gate(yes.args, nullptr), 0);
	EXPECT_EQ(gate(no.args, nullptr), 0);
	// Same program, same field types (another descriptor): the same code.
	const tracery_event_desc twin = {"other", "twin",  kJitFields,       3, 0, nullptr,
	                                 nullptr, nullptr, TRACERY_GATE_ARGS};
	EXPECT_EQ(reinterpret_cast<tracery_args_gate_fn>(gate_for(a_is_3, twin)), gate);
	// Another program: other code.
	const Program a_is_4{{I(Op::load_field, TRACERY_TYPE_S64, 0), push(4), I(Op::eq), I(Op::ret)}, {}};
	const auto gate4 = reinterpret_cast<tracery_args_gate_fn>(gate_for(a_is_4, kJitEvent));
	ASSERT_NE(gate4, nullptr);
	EXPECT_NE(gate4, gate);
	EXPECT_NE(gate4(no.args, nullptr), 0);
	// Other field types: the program no longer verifies (field 0 is not an S64), so no gate.
	const tracery_field_desc u8_fields[] = {{"a", TRACERY_TYPE_U8, 0, 0, nullptr}};
	const tracery_event_desc u8_event = {"test",  "u8",    u8_fields,        1, 0, nullptr,
	                                     nullptr, nullptr, TRACERY_GATE_ARGS};
	EXPECT_EQ(gate_for(a_is_3, u8_event), nullptr);
	// A filter that reads the context cannot be a gate (the emitter has no context to give).
	const Program vpid{{I(Op::load_context, 0, 0, uint32_t(ContextField::vpid)), I(Op::ret)}, {}};
	EXPECT_EQ(gate_for(vpid, kJitEvent), nullptr);
}

// An all-scalar event's gate takes the emitter's parameters: each of its
// types extended from its own width, whatever the caller left above it.
TEST(Gate, ParameterFormReadsEachTypeFromItsRegister)
{
	const tracery_field_desc fields[] = {
		{"u8", TRACERY_TYPE_U8, 0, 0, nullptr},    {"s16", TRACERY_TYPE_S16, 0, 0, nullptr},
		{"u32", TRACERY_TYPE_U32, 0, 0, nullptr},  {"s32", TRACERY_TYPE_S32, 0, 0, nullptr},
		{"f", TRACERY_TYPE_FLOAT, 0, 0, nullptr},  {"b", TRACERY_TYPE_BOOL, 0, 0, nullptr},
		{"d", TRACERY_TYPE_DOUBLE, 0, 0, nullptr}, {"s8", TRACERY_TYPE_S8, 0, 0, nullptr},
		{"u64", TRACERY_TYPE_U64, 0, 0, nullptr}, // the 7th integer: passed on the stack
	};
	const tracery_event_desc desc = {"test",  "params",           fields, 9, 0, nullptr, nullptr,
	                                 nullptr, TRACERY_GATE_PARAMS};
	// Each field compared with the value below; the caller passes wider
	// registers with garbage above the field's width (as the ABI allows).
	using Wide = int (*)(uint64_t, uint64_t, uint64_t, uint64_t, float, uint64_t, double, uint64_t, uint64_t);
	const auto program = [](uint16_t field, uint8_t type, int64_t v) {
		return Program{{I(Op::load_field, type, field), push(v), I(Op::eq), I(Op::ret)}, {}};
	};
	const struct {
		uint16_t field;
		uint8_t type;
		int64_t expected;
	} cases[] = {{0, TRACERY_TYPE_U8, 200},       {1, TRACERY_TYPE_S16, -2}, {2, TRACERY_TYPE_U32, 4000000000},
	             {3, TRACERY_TYPE_S32, -5},       {5, TRACERY_TYPE_BOOL, 1}, {7, TRACERY_TYPE_S8, -7},
	             {8, TRACERY_TYPE_U64, 1ll << 40}};
	for (const auto &c : cases) {
		const auto gate = reinterpret_cast<Wide>(gate_for(program(c.field, c.type, c.expected), desc));
		ASSERT_NE(gate, nullptr) << "field " << c.field;
		const uint64_t high = 0xdead'beef'0000'0000ull;
		// u8 200, s16 -2, u32 4e9, s32 -5, bool 0x100 | 2 (non-zero low byte), s8 -7, u64 2^40.
		EXPECT_NE(gate(high | 200, high | 0xfffe, high | 4000000000u, high | 0xfffffffbu, 1.5f, 0x102, 2.5,
		               high | 0xf9, 1ull << 40),
		          0)
			<< "field " << c.field;
		EXPECT_EQ(gate(high | 201, high | 0xfffd, high | 4000000001u, high | 0xfffffffau, 1.5f, 0x100, 2.5,
		               high | 0xf8, (1ull << 40) + 1),
		          0)
			<< "field " << c.field;
	}
	const auto fgate = reinterpret_cast<Wide>(
		gate_for(Program{{I(Op::load_field, TRACERY_TYPE_FLOAT, 4), I(Op::load_field, TRACERY_TYPE_DOUBLE, 6),
	                          I(Op::fadd), pushf(4.0), I(Op::feq), I(Op::ret)},
	                         {}},
	                 desc));
	ASSERT_NE(fgate, nullptr);
	EXPECT_NE(fgate(0, 0, 0, 0, 1.5f, 0, 2.5, 0, 0), 0);
	EXPECT_EQ(fgate(0, 0, 0, 0, 1.5f, 0, 2.25, 0, 0), 0);
	// A descriptor asking for the parameter form with a non-scalar field gets no gate.
	const tracery_event_desc with_string = {"test",  "jit",   kJitFields,         3, 0, nullptr,
	                                        nullptr, nullptr, TRACERY_GATE_PARAMS};
	EXPECT_EQ(gate_for(program(0, TRACERY_TYPE_S64, 3), with_string), nullptr);
}

TEST(Filter, EngineNames)
{
	EXPECT_EQ(parse_engine("jit"), Engine::jit);
	EXPECT_EQ(parse_engine("interpreter"), Engine::interpreter);
	EXPECT_EQ(parse_engine("JIT"), std::nullopt);
	EXPECT_EQ(parse_engine(""), std::nullopt);
	const char *env = getenv("TRACERY_FILTER_ENGINE");
	EXPECT_EQ(default_engine(), env ? parse_engine(env).value_or(Engine::jit) : Engine::jit);
}

} // namespace
} // namespace tracery::filter
