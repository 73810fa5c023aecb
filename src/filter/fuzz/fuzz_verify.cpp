// filter/fuzz/fuzz_verify.cpp — libFuzzer target: random bytecode must be
// refused by the verifier or run safely, with the same answer from the
// interpreter and the JIT.
//
// Random bytes rarely decode into a program, so the input describes one:
//   byte 0       flags: bit 0 appends a ret
//   byte 1       string count (mod 5), then per string a length byte (mod 17)
//                and its bytes
//   then 6 bytes per instruction: op, type, field, arg, imm selector, mode.
//   Mode bit 0 set: the operands are taken as they are (mostly refused);
//   clear: the unused ones are zeroed and the used ones made plausible
//   (load types from the descriptor, forward jumps), so that many programs
//   verify and reach the engines.
// The program then goes through encode() and decode() (which must round-trip)
// before verify().
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "filter/filter.hpp"

using namespace tracery::filter;

namespace {

const tracery_enum_entry kEntries[] = {{"a", 0, 0}};
const tracery_enum_desc kEnum = {"e", kEntries, 1};
const tracery_field_desc kFields[] = {
	{"u8", TRACERY_TYPE_U8, 0, 0, nullptr},
	{"s16", TRACERY_TYPE_S16, 0, 0, nullptr},
	{"u32", TRACERY_TYPE_U32, 0, 0, nullptr},
	{"s64", TRACERY_TYPE_S64, 0, 0, nullptr},
	{"f", TRACERY_TYPE_FLOAT, 0, 0, nullptr},
	{"d", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},
	{"b", TRACERY_TYPE_BOOL, 0, 0, nullptr},
	{"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_S8, 0, &kEnum},
	{"au", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U16, 3, nullptr},
	{"ad", TRACERY_TYPE_ARRAY, TRACERY_TYPE_DOUBLE, 2, nullptr},
	{"ss", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_S32, 0, nullptr},
	{"sf", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_FLOAT, 0, nullptr},
	{"s", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"t", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"blob", TRACERY_TYPE_BLOB, 0, 0, nullptr},
};
constexpr uint32_t kNrFields = 15;
const tracery_event_desc kEvent = {"fuzz", "ev", kFields, kNrFields, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};
const uint16_t kElementFields[] = {8, 9, 10, 11};
const uint16_t kStringFields[] = {12, 13};

const int64_t kImms[] = {0,
                         1,
                         -1,
                         2,
                         63,
                         64,
                         65,
                         -64,
                         INT64_MIN,
                         INT64_MAX,
                         0x3ff0000000000000, // 1.0
                         0x7ff8000000000000 /* NaN */,
                         static_cast<int64_t>(0x8000000000000000) /* -0.0 */,
                         0x7ff0000000000000 /* inf */};

// Storage for the fixed payloads.
struct Payload {
	uint8_t u8;
	int16_t s16;
	uint32_t u32;
	int64_t s64;
	float f;
	double d;
	uint8_t b;
	int8_t e;
	uint16_t au[3];
	double ad[2];
	int32_t ss[4];
	float sf[2];
	tracery_arg args[kNrFields];
	Context ctx;
};

Payload payloads[4];

void init_payloads()
{
	static const char blob[] = "\x01\x02";
	for (int i = 0; i < 4; ++i) {
		Payload &p = payloads[i];
		p.u8 = uint8_t(i * 100);
		p.s16 = int16_t(i % 2 ? -32768 : 7);
		p.u32 = i ? 0xffffffffu : 0;
		p.s64 = i == 3 ? INT64_MIN : i - 1;
		p.f = i == 2 ? std::numeric_limits<float>::quiet_NaN() : float(i) - 0.5f;
		p.d = i == 1 ? -0.0 : i * 1e300;
		p.b = uint8_t(i * 85);
		p.e = int8_t(-i);
		p.au[0] = 1, p.au[1] = 65535, p.au[2] = uint16_t(i);
		p.ad[0] = -1.5, p.ad[1] = std::numeric_limits<double>::infinity();
		p.ss[0] = -1, p.ss[1] = 64, p.ss[2] = INT32_MIN, p.ss[3] = i;
		p.sf[0] = 2.5f, p.sf[1] = -0.0f;
		static const char *const strings[] = {"hello", "", "a*b", "hello\0world"};
		const tracery_arg args[kNrFields] = {{&p.u8, 0},
		                                     {&p.s16, 0},
		                                     {&p.u32, 0},
		                                     {&p.s64, 0},
		                                     {&p.f, 0},
		                                     {&p.d, 0},
		                                     {&p.b, 0},
		                                     {&p.e, 0},
		                                     {i == 1 ? nullptr : p.au, uint32_t(3 - i % 3)},
		                                     {p.ad, uint32_t(i % 3)},
		                                     {i == 2 ? nullptr : p.ss, uint32_t(4 - i)},
		                                     {p.sf, uint32_t(i % 3)},
		                                     {strings[i], i == 3 ? 11u : uint32_t(strlen(strings[i]))},
		                                     {i == 0 ? nullptr : strings[3 - i], 1},
		                                     {blob, 2}};
		std::memcpy(p.args, args, sizeof args);
		p.ctx = {i * 1000, -i, i, i % 2 ? "hello" : "x", i % 2 ? 5u : 1u};
	}
}

// A plausible str_match operand index for a kind.
uint32_t string_index(StringKind kind, uint8_t b, size_t nr_strings)
{
	// clang-format off
	switch (kind) {
	case StringKind::field: return kStringFields[b % 2];
	case StringKind::procname: return 0;
	default: return nr_strings ? b % nr_strings : 0;
	}
	// clang-format on
}

void make_plausible(Insn &in, size_t pc, size_t nr_strings)
{
	const uint8_t t = in.type, f = uint8_t(in.field), a = uint8_t(in.arg);
	in.type = 0, in.field = 0, in.arg = 0;
	switch (in.op) {
	case Op::push_int:
	case Op::push_float:
		break;
	case Op::load_field:
		in.field = uint16_t(f % 8);
		in.type = uint8_t(load_field_type(kFields[in.field]));
		in.imm = 0;
		break;
	case Op::load_element:
		in.field = kElementFields[f % 4];
		in.type = kFields[in.field].elem_type;
		in.arg = a % 5;
		in.imm = 0;
		break;
	case Op::load_context:
		in.arg = a % 3;
		in.imm = 0;
		break;
	case Op::str_match: {
		const StringKind l = StringKind(t % 3), r = StringKind((t >> 2) % 3);
		in.type = uint8_t(uint8_t(l) | uint8_t(r) << 4);
		in.field = uint16_t(string_index(l, f, nr_strings));
		in.arg = string_index(r, a, nr_strings);
		in.imm = 0;
		break;
	}
	case Op::jump_if_false:
	case Op::jump_if_true:
		in.arg = uint32_t(pc + 1 + a % 8);
		in.imm = 0;
		break;
	default:
		in.imm = 0;
		break;
	}
}

Program program_from(const uint8_t *data, size_t size)
{
	Program p;
	if (size < 2)
		return p;
	const bool append_ret = data[0] & 1;
	size_t nr_strings = data[1] % 5, at = 2;
	for (size_t i = 0; i < nr_strings && at < size; ++i) {
		const size_t wanted = data[at++] % 17;
		const size_t len = std::min(wanted, size - at);
		p.strings.emplace_back(reinterpret_cast<const char *>(data + at), len);
		at += len;
	}
	for (; at + 6 <= size && p.code.size() + 1 < kMaxInsns; at += 6) {
		const uint8_t *b = data + at;
		Insn in{Op(b[0] % (uint8_t(Op::count_) + 1)), b[1], b[2], b[3], kImms[b[4] % std::size(kImms)]};
		if (b[5] & 1) {
			if (b[5] & 2)
				in.arg = uint32_t(b[3]) << 24 | b[2];
			if (b[5] & 4)
				in.op = Op(b[0]);
		} else {
			make_plausible(in, p.code.size(), p.strings.size());
		}
		p.code.push_back(in);
	}
	if (append_ret)
		p.code.push_back(Insn{Op::ret, 0, 0, 0, 0});
	return p;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const bool initialized = (init_payloads(), true);
	(void)initialized;

	// (Program::operator== is unusable: Insn has none; compare the encodings.)
	const std::string bytes = encode(program_from(data, size));
	Program program;
	std::string why;
	if (!decode(bytes, program, &why) || encode(program) != bytes) {
		std::fprintf(stderr, "encode/decode do not round-trip: %s\n", why.c_str());
		std::abort();
	}
	VerifiedInfo info;
	if (!verify(program, kEvent, &info, &why))
		return 0;
	const std::unique_ptr<Filter> jit = Filter::load(program, kEvent, Engine::jit, &why);
	const std::unique_ptr<Filter> interpreter = Filter::load(program, kEvent, Engine::interpreter, &why);
	if (!jit || !interpreter || jit->engine() != Engine::jit)
		std::abort();
	for (const Payload &p : payloads)
		if (jit->accepts(p.args, &p.ctx) != interpreter->accepts(p.args, &p.ctx)) {
			std::fprintf(stderr, "the JIT and the interpreter disagree\n");
			std::abort();
		}
	return 0;
}
