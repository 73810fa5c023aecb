// filter/differential_test.cpp — random filter expressions (text, compiled by
// the front end) run by the interpreter and the JIT on random payloads: the
// engines must agree, and so must the JIT's parameter form (event gates of
// all-scalar events) wherever the expression reads only scalar fields. Each expression is also compiled a second time with
// every number literal L written as (u8 * 0 + L), which the compiler cannot
// fold, so constant folding is checked against the engines too.
//
// TRACERY_DIFF_CASES: expression x payload cases to run (default 3000000);
// TRACERY_DIFF_SEED: the random seed (default: a fixed one).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "event/payload.hpp"
#include "filter/compiler.hpp"
#include "filter/filter.hpp"
#include "filter/jit.hpp"
#include "filter/verifier.hpp"

namespace tracery::filter {
namespace {

// Two events with the same field names; their arr and seq hold different
// element types. Literal markers: '\1' before and '\2' after each number.
const tracery_enum_entry kEntries[] = {{"a", 0, 0}, {"b", 1, 1}};
const tracery_enum_desc kEnum = {"e", kEntries, 2};
// clang-format off
#define TRACERY_DIFF_COMMON_FIELDS                                                                   \
	{"u8", TRACERY_TYPE_U8, 0, 0, nullptr}, {"u16", TRACERY_TYPE_U16, 0, 0, nullptr},            \
	{"u32", TRACERY_TYPE_U32, 0, 0, nullptr}, {"u64", TRACERY_TYPE_U64, 0, 0, nullptr},          \
	{"s8", TRACERY_TYPE_S8, 0, 0, nullptr}, {"s16", TRACERY_TYPE_S16, 0, 0, nullptr},            \
	{"s32", TRACERY_TYPE_S32, 0, 0, nullptr}, {"s64", TRACERY_TYPE_S64, 0, 0, nullptr},          \
	{"f", TRACERY_TYPE_FLOAT, 0, 0, nullptr}, {"d", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},         \
	{"b", TRACERY_TYPE_BOOL, 0, 0, nullptr}, {"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_S32, 0, &kEnum}, \
	{"s", TRACERY_TYPE_STRING, 0, 0, nullptr}, {"t", TRACERY_TYPE_STRING, 0, 0, nullptr}
// clang-format on
const tracery_field_desc kFieldsA[] = {
	TRACERY_DIFF_COMMON_FIELDS,
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_S16, 3, nullptr},
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U32, 0, nullptr},
};
const tracery_field_desc kFieldsB[] = {
	TRACERY_DIFF_COMMON_FIELDS,
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_FLOAT, 2, nullptr},
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_S8, 0, nullptr},
};
#undef TRACERY_DIFF_COMMON_FIELDS
const tracery_event_desc kEvents[] = {
	{"diff", "a", kFieldsA, 16, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS},
	{"diff", "b", kFieldsB, 16, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS},
};
constexpr uint32_t kArr = 14, kSeq = 15;
// The 12 scalar fields alone, for the parameter form; the bool travels as
// the byte it is in the payload (the JIT must test all of its bits).
const tracery_event_desc kScalarEvent = {"diff",  "scalars", kFieldsA,           12, 0, nullptr,
                                         nullptr, nullptr,   TRACERY_GATE_PARAMS};
using ScalarGate = int (*)(uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t, float, double,
                           uint8_t, int32_t);

const char *const kStrings[] = {"hello", "hello world", "", "ab", "a*b", "a\\b", "xyz", "h", "world", "aab"};
// As written in an expression (so "\\*" is the glob escape of a star).
const char *const kLiterals[] = {"\"hello\"",    "\"hello*\"",  "\"*\"",   "\"\"",   "\"*world\"",
                                 "\"h*o*\"",     "\"a\\\\*b\"", "\"a*b\"", "\"ab\"", "\"x*\"",
                                 "\"\\\\\\\\\"", "\"a\\\\b\"",  "\"*a*b\""};

class Generator {
public:
	explicit Generator(uint64_t seed) : rng_(seed) {}

	// An expression (with literal markers) over the fields of desc.
	std::string expression(const tracery_event_desc &desc)
	{
		desc_ = &desc;
		return pick(4) ? number(true, 5) : logic(5);
	}

	std::mt19937_64 &rng() { return rng_; }

private:
	uint32_t pick(uint32_t n) { return uint32_t(rng_() % n); }
	bool float_elements(uint32_t f) const { return desc_->fields[f].elem_type == TRACERY_TYPE_FLOAT; }

	std::string literal(std::string text) { return "\1" + text + "\2"; }

	std::string int_literal()
	{
		static const char *const kValues[] = {"0",
		                                      "1",
		                                      "2",
		                                      "3",
		                                      "7",
		                                      "42",
		                                      "63",
		                                      "64",
		                                      "65",
		                                      "255",
		                                      "256",
		                                      "65535",
		                                      "2147483647",
		                                      "4294967295",
		                                      "9223372036854775807",
		                                      "0x7fffffffffffffff",
		                                      "0xff",
		                                      "017",
		                                      "1000000007"};
		switch (pick(8)) {
		case 0:
			return "(-" + literal("9223372036854775807") + " - " + literal("1") + ")"; // INT64_MIN
		case 1:
			return '-' + literal("1");
		case 2:
			return literal(std::to_string(pick(100)));
		default:
			return literal(kValues[pick(std::size(kValues))]);
		}
	}

	std::string float_literal()
	{
		static const char *const kValues[] = {"0.0", "1.5",  "0.5", ".5",  "1e308",        "1e-300",
		                                      "2.0", "3.25", "1e3", "0.1", "4294967296.0", "9.3e18"};
		return literal(kValues[pick(std::size(kValues))]);
	}

	std::string int_leaf()
	{
		static const char *const kFields[] = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b", "e"};
		static const char *const kContext[] = {"$ctx.vpid", "$ctx.vtid", "$ctx.cpu_id"};
		switch (pick(10)) {
		case 0:
		case 1:
		case 2:
		case 3:
			return int_literal();
		case 4:
		case 5:
		case 6:
			return kFields[pick(std::size(kFields))];
		case 7:
			return kContext[pick(3)];
		case 8:
			if (!float_elements(kArr))
				return "arr[" + std::to_string(pick(desc_->fields[kArr].length + (pick(50) == 0))) +
				       "]";
			return int_literal();
		default:
			return "seq[" + std::to_string(pick(5)) + "]";
		}
	}

	std::string float_leaf()
	{
		switch (pick(6)) {
		case 0:
		case 1:
		case 2:
			return float_literal();
		case 3:
			return "f";
		case 4:
			return "d";
		default:
			if (float_elements(kArr))
				return "arr[" + std::to_string(pick(desc_->fields[kArr].length)) + "]";
			return "f";
		}
	}

	std::string string_operand()
	{
		// clang-format off
		switch (pick(5)) {
		case 0: return "s";
		case 1: return "t";
		case 2: return "$ctx.procname";
		default: return kLiterals[pick(std::size(kLiterals))];
		}
		// clang-format on
	}

	// An int (is_int) or float expression.
	std::string number(bool is_int, int depth)
	{
		if (depth <= 0 || pick(5) == 0)
			return is_int ? int_leaf() : float_leaf();
		if (!is_int) {
			static const char *const kOps[] = {" + ", " - ", " * ", " / "};
			// clang-format off
			switch (pick(6)) {
			case 0: return "-(" + number(false, depth - 1) + ")";
			case 1: return "+" + float_leaf();
			case 2: return "(" + number(pick(2), depth - 1) + kOps[pick(4)] + number(false, depth - 1) + ")";
			default: return "(" + number(false, depth - 1) + kOps[pick(4)] + number(pick(2), depth - 1) + ")";
			}
			// clang-format on
		}
		static const char *const kIntOps[] = {" + ", " - ", " * ", " / ", " % ", " & ", " | ", " ^ "};
		static const char *const kShifts[] = {" << ", " >> "};
		switch (pick(9)) {
		case 0: {
			static const char *const kUnary[] = {"!", "-", "~", "+"};
			const uint32_t u = pick(4);
			return std::string(kUnary[u]) + "(" + number(u == 0 ? pick(2) : true, depth - 1) + ")";
		}
		case 1:
		case 2:
		case 3:
			return "(" + number(true, depth - 1) + kIntOps[pick(8)] + number(true, depth - 1) + ")";
		case 4:
			// Shift counts near the edges.
			return "(" + number(true, depth - 1) + kShifts[pick(2)] +
			       (pick(2) ? int_literal() : number(true, depth - 2)) + ")";
		default:
			return logic(depth - 1);
		}
	}

	// Comparisons, && ||, string matches: int results.
	std::string logic(int depth)
	{
		static const char *const kCompare[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
		switch (pick(6)) {
		case 0:
			return '(' + string_operand() + (pick(2) ? " == " : " != ") + string_operand() + ")";
		case 1:
			return '(' + number(pick(2), depth - 1) + (pick(2) ? " && " : " || ") +
			       number(pick(2), depth - 1) + ")";
		default:
			return '(' + number(pick(2), depth - 1) + kCompare[pick(6)] + number(pick(2), depth - 1) + ")";
		}
	}

	std::mt19937_64 rng_;
	const tracery_event_desc *desc_ = nullptr;
};

// The expression with its markers removed, and with every literal wrapped.
std::string plain(const std::string &marked)
{
	std::string out;
	for (char c : marked)
		if (c != '\1' && c != '\2')
			out += c;
	return out;
}

std::string unfolded(const std::string &marked)
{
	std::string out;
	for (char c : marked)
		out += c == '\1' ? std::string("(u8 * 0 + ") : c == '\2' ? std::string(")") : std::string(1, c);
	return out;
}

// One event's arguments, with storage for every field (args point into it:
// not copyable).
struct Payload {
	Payload() = default;
	Payload(const Payload &) = delete;

	int64_t scalars[14] = {};
	alignas(8) unsigned char arr[3 * 8] = {};
	alignas(8) unsigned char seq[5 * 8] = {};
	tracery_arg args[16] = {};
	Context ctx = {};

	std::string describe(const tracery_event_desc &desc) const;
};

template <typename T>
T edge(std::mt19937_64 &rng)
{
	static_assert(std::is_integral_v<T>);
	// clang-format off
	switch (rng() % 8) {
	case 0: return 0;
	case 1: return T(1);
	case 2: return T(-1);
	case 3: return std::numeric_limits<T>::min();
	case 4: return std::numeric_limits<T>::max();
	case 5: return T(rng() % 70);
	default: return T(rng());
	}
	// clang-format on
}

double float_edge(std::mt19937_64 &rng)
{
	static const double kValues[] = {0.0,
	                                 -0.0,
	                                 1.5,
	                                 -2.5,
	                                 std::numeric_limits<double>::quiet_NaN(),
	                                 std::numeric_limits<double>::infinity(),
	                                 -std::numeric_limits<double>::infinity(),
	                                 1e300,
	                                 42.0,
	                                 63.0,
	                                 9.3e18};
	if (rng() % 4 == 0)
		return std::ldexp(double(int64_t(rng())), -int(rng() % 80));
	return kValues[rng() % std::size(kValues)];
}

// A random value of a scalar type, stored at p.
void random_scalar(uint8_t type, void *p, std::mt19937_64 &rng)
{
	// clang-format off
	switch (type) {
	case TRACERY_TYPE_U8: { uint8_t v = edge<uint8_t>(rng); std::memcpy(p, &v, 1); break; }
	case TRACERY_TYPE_U16: { uint16_t v = edge<uint16_t>(rng); std::memcpy(p, &v, 2); break; }
	case TRACERY_TYPE_U32: { uint32_t v = edge<uint32_t>(rng); std::memcpy(p, &v, 4); break; }
	case TRACERY_TYPE_U64: { uint64_t v = edge<uint64_t>(rng); std::memcpy(p, &v, 8); break; }
	case TRACERY_TYPE_S8: { int8_t v = edge<int8_t>(rng); std::memcpy(p, &v, 1); break; }
	case TRACERY_TYPE_S16: { int16_t v = edge<int16_t>(rng); std::memcpy(p, &v, 2); break; }
	case TRACERY_TYPE_S32: { int32_t v = edge<int32_t>(rng); std::memcpy(p, &v, 4); break; }
	case TRACERY_TYPE_S64: { int64_t v = edge<int64_t>(rng); std::memcpy(p, &v, 8); break; }
	case TRACERY_TYPE_FLOAT: { float v = float(float_edge(rng)); std::memcpy(p, &v, 4); break; }
	case TRACERY_TYPE_DOUBLE: { double v = float_edge(rng); std::memcpy(p, &v, 8); break; }
	case TRACERY_TYPE_BOOL: { static const uint8_t kBools[] = {0, 1, 2, 255}; std::memcpy(p, &kBools[rng() % 4], 1); break; }
	}
	// clang-format on
}

std::unique_ptr<Payload> random_payload(const tracery_event_desc &desc, std::mt19937_64 &rng)
{
	auto payload = std::make_unique<Payload>();
	Payload &p = *payload;
	for (uint32_t i = 0; i < 12; ++i) {
		const tracery_field_desc &f = desc.fields[i];
		random_scalar(f.type == TRACERY_TYPE_ENUM ? f.elem_type : f.type, &p.scalars[i], rng);
		p.args[i] = {&p.scalars[i], 0};
	}
	for (uint32_t i = 12; i < 14; ++i) {
		const char *s = kStrings[rng() % std::size(kStrings)];
		uint32_t len = uint32_t(strlen(s));
		// clang-format off
		switch (rng() % 10) {
		case 0: s = nullptr; break;
		case 1: s = "hello\0world"; len = 11; break; // bytes after a NUL do not count
		case 2: len = len ? uint32_t(rng() % len) : 0; break;
		}
		// clang-format on
		p.args[i] = {s, len};
	}
	const tracery_field_desc &arr = desc.fields[kArr], &seq = desc.fields[kSeq];
	const size_t arr_size = event::scalar_size(arr.elem_type), seq_size = event::scalar_size(seq.elem_type);
	for (uint32_t i = 0; i < arr.length; ++i)
		random_scalar(arr.elem_type, p.arr + i * arr_size, rng);
	for (uint32_t i = 0; i < 5; ++i)
		random_scalar(seq.elem_type, p.seq + i * seq_size, rng);
	static const uint32_t kArrLens[] = {0, 1, 2, 3, 3, 3, 7};
	p.args[kArr] = {rng() % 8 ? p.arr : nullptr, std::min<uint32_t>(kArrLens[rng() % 7], arr.length + 4)};
	p.args[kSeq] = {rng() % 8 ? p.seq : nullptr, uint32_t(rng() % 6)};
	static const char *const kProcnames[] = {"hello", "ab", "", "xyz"};
	const char *procname = kProcnames[rng() % 4];
	p.ctx = {edge<int64_t>(rng), edge<int32_t>(rng), int64_t(rng() % 4), procname, uint32_t(strlen(procname))};
	return payload;
}

std::string scalar_text(uint8_t type, const void *ptr)
{
	int64_t i = 0;
	// clang-format off
	switch (type) {
	case TRACERY_TYPE_FLOAT: { float v; std::memcpy(&v, ptr, 4); std::ostringstream o; o << v << "f"; return o.str(); }
	case TRACERY_TYPE_DOUBLE: { double v; std::memcpy(&v, ptr, 8); std::ostringstream o; o.precision(17); o << v; return o.str(); }
	case TRACERY_TYPE_U64: { uint64_t v; std::memcpy(&v, ptr, 8); return std::to_string(v); }
	case TRACERY_TYPE_U8: case TRACERY_TYPE_BOOL: { uint8_t v; std::memcpy(&v, ptr, 1); i = v; break; }
	case TRACERY_TYPE_U16: { uint16_t v; std::memcpy(&v, ptr, 2); i = v; break; }
	case TRACERY_TYPE_U32: { uint32_t v; std::memcpy(&v, ptr, 4); i = v; break; }
	case TRACERY_TYPE_S8: { int8_t v; std::memcpy(&v, ptr, 1); i = v; break; }
	case TRACERY_TYPE_S16: { int16_t v; std::memcpy(&v, ptr, 2); i = v; break; }
	case TRACERY_TYPE_S32: { int32_t v; std::memcpy(&v, ptr, 4); i = v; break; }
	default: std::memcpy(&i, ptr, 8); break;
	}
	// clang-format on
	return std::to_string(i);
}

std::string Payload::describe(const tracery_event_desc &desc) const
{
	std::ostringstream o;
	for (uint32_t i = 0; i < 16; ++i) {
		const tracery_field_desc &f = desc.fields[i];
		o << f.name << "=";
		if (f.type == TRACERY_TYPE_STRING) {
			if (!args[i].ptr)
				o << "NULL";
			else
				o << '"' << std::string(static_cast<const char *>(args[i].ptr), args[i].len)
				  << "\" (len " << args[i].len << ")";
		} else if (f.type == TRACERY_TYPE_ARRAY || f.type == TRACERY_TYPE_SEQUENCE) {
			o << (args[i].ptr ? "" : "NULL ") << "len " << args[i].len << " [";
			const uint32_t n = f.type == TRACERY_TYPE_ARRAY ? f.length : 5;
			for (uint32_t k = 0; k < n; ++k)
				o << (k ? " " : "")
				  << scalar_text(f.elem_type, (f.type == TRACERY_TYPE_ARRAY ? arr : seq) +
				                                      k * event::scalar_size(f.elem_type));
			o << "]";
		} else {
			o << scalar_text(f.type == TRACERY_TYPE_ENUM ? f.elem_type : f.type, args[i].ptr);
		}
		o << "  ";
	}
	o << "vpid=" << ctx.vpid << " vtid=" << ctx.vtid << " cpu_id=" << ctx.cpu_id << " procname=\"" << ctx.procname
	  << '"';
	return o.str();
}

// Calls a parameter-form gate of kScalarEvent with the payload's scalars.
bool call_scalar_gate(FilterFn code, const Payload &p)
{
	auto v = [&p]<class T>(uint32_t i, T) {
		T x;
		std::memcpy(&x, &p.scalars[i], sizeof x);
		return x;
	};
	return reinterpret_cast<ScalarGate>(reinterpret_cast<tracery_gate_fn>(code))(
		       v(0, uint8_t()), v(1, uint16_t()), v(2, uint32_t()), v(3, uint64_t()), v(4, int8_t()),
		       v(5, int16_t()), v(6, int32_t()), v(7, int64_t()), v(8, float()), v(9, double()),
		       v(10, uint8_t()), v(11, int32_t())) != 0;
}

// The parameter form of `text` on kScalarEvent; nullptr if the expression
// reads anything but the scalar fields (then it compiles to other code for
// kScalarEvent, where the other fields are missing, than for event a).
std::unique_ptr<Jit> load_params_form(const std::string &text)
{
	const std::optional<Compiled> c = compile_filter(text, kScalarEvent, nullptr);
	const std::optional<Compiled> on_a = compile_filter(text, kEvents[0], nullptr);
	VerifiedInfo info;
	std::string why;
	if (!c || !on_a || encode(c->program) != encode(on_a->program) ||
	    !verify(c->program, kScalarEvent, &info, &why) || info.uses_context || info.uses_procname)
		return nullptr;
	std::unique_ptr<Jit> jit = Jit::compile(c->program, kScalarEvent, info, &why, CallForm::params);
	EXPECT_TRUE(jit) << "no parameter form for " << text << ": " << why;
	return jit;
}

uint64_t env_number(const char *name, uint64_t fallback)
{
	const char *v = getenv(name);
	return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

std::unique_ptr<Filter> load(const std::string &text, const tracery_event_desc &desc, Engine engine)
{
	Error error;
	const std::optional<Compiled> c = compile_filter(text, desc, &error);
	if (!c)
		return nullptr;
	std::string why;
	std::unique_ptr<Filter> f = Filter::load(c->program, desc, engine, &why);
	EXPECT_TRUE(f) << "the verifier refuses the compiled " << text << ": " << why;
	if (f) {
		EXPECT_EQ(f->engine(), engine);
	}
	return f;
}

TEST(Differential, InterpreterAndJitAgree)
{
	const uint64_t cases = env_number("TRACERY_DIFF_CASES", 3000000);
	const uint64_t seed = env_number("TRACERY_DIFF_SEED", 20240611);
	constexpr size_t kPayloadsPerExpression = 64, kPool = 4096;
	Generator gen(seed);
	std::vector<std::unique_ptr<Payload>> pools[2];
	for (int e = 0; e < 2; ++e)
		for (size_t i = 0; i < kPool; ++i)
			pools[e].push_back(random_payload(kEvents[e], gen.rng()));

	uint64_t run = 0, expressions = 0, refused = 0, accepted = 0, mismatches = 0, params_form_runs = 0;
	while (run < cases && mismatches < 10) {
		const int e = int(expressions++ % 2);
		const tracery_event_desc &desc = kEvents[e];
		const std::string marked = gen.expression(desc);
		const std::string text = plain(marked), wrapped = unfolded(marked);
		const std::unique_ptr<Filter> filters[] = {
			load(text, desc, Engine::interpreter), load(text, desc, Engine::jit),
			load(wrapped, desc, Engine::interpreter), load(wrapped, desc, Engine::jit)};
		if (!filters[0] || !filters[1] || !filters[2] || !filters[3]) {
			EXPECT_EQ(!filters[0], !filters[2])
				<< "only one of these compiles:\n  " << text << "\n  " << wrapped;
			++refused;
			continue;
		}
		// Event a's first 12 fields are kScalarEvent's.
		const std::unique_ptr<Jit> params_form = e == 0 ? load_params_form(text) : nullptr;
		for (size_t k = 0; k < kPayloadsPerExpression; ++k, ++run) {
			const Payload &p = *pools[e][gen.rng()() % kPool];
			bool r[5];
			for (int i = 0; i < 4; ++i)
				r[i] = filters[i]->accepts(p.args, &p.ctx);
			r[4] = params_form ? call_scalar_gate(params_form->fn(), p) : r[0];
			params_form_runs += params_form != nullptr;
			accepted += r[0];
			if (r[0] == r[1] && r[0] == r[2] && r[0] == r[3] && r[0] == r[4])
				continue;
			++mismatches;
			ADD_FAILURE() << "engines disagree on " << text << "\n  unfolded: " << wrapped
				      << "\n  payload: " << p.describe(desc) << "\n  interpreter " << r[0] << ", JIT "
				      << r[1] << ", unfolded interpreter " << r[2] << ", unfolded JIT " << r[3]
				      << ", JIT parameter form " << r[4];
			break;
		}
	}
	std::printf("%llu cases, %llu expressions (%llu refused by the compiler), %llu accepted, %llu also in the "
	            "parameter form\n",
	            (unsigned long long)run, (unsigned long long)expressions, (unsigned long long)refused,
	            (unsigned long long)accepted, (unsigned long long)params_form_runs);
	// The generator must mostly produce valid expressions, and both outcomes.
	EXPECT_LT(refused * 10, expressions);
	EXPECT_GT(accepted * 20, run);
	EXPECT_GT((run - accepted) * 20, run);
	EXPECT_GT(params_form_runs * 20, run) << "too few expressions over the scalar fields alone";
}

} // namespace
} // namespace tracery::filter
