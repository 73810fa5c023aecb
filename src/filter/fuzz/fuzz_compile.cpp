// filter/fuzz/fuzz_compile.cpp — libFuzzer target: arbitrary bytes as a
// filter expression, compiled for an event with every field kind. Checks
// that errors point into the expression and render, and that every program
// is well formed (kinds of every stack slot, forward jumps, zero unused
// operands, limits) and survives encode/decode unchanged.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "filter/compiler.hpp"

using namespace tracery::filter;

namespace {

const tracery_enum_entry kEntries[] = {{"a", 0, 0}};
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
	{"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_S16, 0, &kEnum},
	{"s", TRACERY_TYPE_STRING, 0, 0, nullptr},
	{"a", TRACERY_TYPE_ARRAY, TRACERY_TYPE_DOUBLE, 3, nullptr},
	{"q", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_U8, 0, nullptr},
	{"x", TRACERY_TYPE_BLOB, 0, 0, nullptr},
	{"n.m", TRACERY_TYPE_S32, 0, 0, nullptr},
	{"t", TRACERY_TYPE_STRING, 0, 0, nullptr},
};
const tracery_event_desc kEvent = {"fuzz",  "all",   kFields, std::size(kFields), 0,
                                   nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

void check(bool ok)
{
	if (!ok)
		std::abort();
}

enum Slot : char { I = 'i', F = 'f' };

// The kind a load pushes for a field type.
Slot load_kind(unsigned type) { return type == TRACERY_TYPE_FLOAT || type == TRACERY_TYPE_DOUBLE ? F : I; }

// Pops one slot of kind k.
void pop(std::vector<Slot> &stack, Slot k)
{
	check(!stack.empty() && stack.back() == k);
	stack.pop_back();
}

// A verifier of what the compiler may emit.
void check_program(const Program &p)
{
	const auto &code = p.code;
	check(!code.empty() && code.size() <= kMaxInsns && p.strings.size() <= kMaxStrings);
	size_t bytes = 0;
	for (const std::string &s : p.strings)
		bytes += s.size();
	check(bytes <= kMaxStringBytes);

	std::vector<Slot> stack;
	std::vector<std::vector<Slot>> at(code.size()); // stacks jumps bring
	std::vector<bool> jumped(code.size());
	bool reachable = true;
	for (size_t pc = 0; pc < code.size(); ++pc) {
		const Insn &i = code[pc];
		if (jumped[pc]) {
			check(!reachable || stack == at[pc]);
			stack = at[pc];
			reachable = true;
		}
		check(reachable);
		const bool operands_zero = i.type == 0 && i.field == 0 && i.arg == 0 && i.imm == 0;
		switch (i.op) {
		case Op::push_int:
		case Op::push_float:
			check(i.type == 0 && i.field == 0 && i.arg == 0);
			stack.push_back(i.op == Op::push_int ? I : F);
			break;
		case Op::load_field:
			check(i.field < kEvent.nr_fields && i.arg == 0 && i.imm == 0);
			stack.push_back(load_kind(i.type));
			break;
		case Op::load_element: {
			check(i.field < kEvent.nr_fields);
			const tracery_field_desc &f = kFields[i.field];
			check(i.imm == 0 && i.type == f.elem_type);
			check(f.type == TRACERY_TYPE_SEQUENCE || (f.type == TRACERY_TYPE_ARRAY && i.arg < f.length));
			stack.push_back(load_kind(i.type));
			break;
		}
		case Op::load_context:
			check(i.type == 0 && i.field == 0 && i.imm == 0 &&
			      i.arg < static_cast<uint32_t>(ContextField::count_));
			stack.push_back(I);
			break;
		case Op::str_match: {
			check(i.imm == 0);
			const unsigned left = i.type & 15, right = i.type >> 4;
			const auto operand_ok = [&](unsigned kind, uint32_t index) {
				if (kind == static_cast<unsigned>(StringKind::field))
					return index < kEvent.nr_fields && kFields[index].type == TRACERY_TYPE_STRING;
				if (kind == static_cast<unsigned>(StringKind::procname))
					return index == 0;
				return kind == static_cast<unsigned>(StringKind::literal) && index < p.strings.size();
			};
			check(left != static_cast<unsigned>(StringKind::literal) && operand_ok(left, i.field) &&
			      operand_ok(right, i.arg));
			stack.push_back(I);
			break;
		}
		case Op::jump_if_false:
		case Op::jump_if_true:
			check(i.type == 0 && i.field == 0 && i.imm == 0 && i.arg > pc && i.arg < code.size());
			check(!stack.empty() && stack.back() == I);
			check(!jumped[i.arg] || at[i.arg] == stack);
			at[i.arg] = stack;
			jumped[i.arg] = true;
			stack.pop_back();
			break;
		case Op::ret:
			check(operands_zero && pc + 1 == code.size());
			pop(stack, I);
			check(stack.empty());
			reachable = false;
			break;
		default: {
			check(operands_zero && i.op < Op::count_);
			const bool unary = i.op == Op::neg || i.op == Op::bnot || i.op == Op::lnot ||
			                   i.op == Op::fneg || i.op == Op::to_float || i.op == Op::to_bool ||
			                   i.op == Op::float_to_bool;
			const bool float_in = (i.op >= Op::fadd && i.op <= Op::fge) || i.op == Op::float_to_bool;
			const bool float_out = (i.op >= Op::fadd && i.op <= Op::fneg) || i.op == Op::to_float;
			pop(stack, float_in ? F : I);
			if (!unary)
				pop(stack, float_in ? F : I);
			stack.push_back(float_out ? F : I);
			break;
		}
		}
		check(stack.size() <= kMaxStack);
	}
	check(!reachable && code.back().op == Op::ret);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view expression(reinterpret_cast<const char *>(data), size);
	Error error{"", 0};
	const auto expr = parse(expression, &error);
	if (!expr) {
		check(!error.message.empty() && error.position <= size);
		check(render_error(expression, error).size() > error.message.size());
		return 0;
	}
	const auto compiled = compile(*expr, kEvent, &error);
	const auto fields_error = check_fields(*expr, {&kEvent});
	if (!compiled) {
		check(!error.message.empty() && error.position <= size && fields_error);
		render_error(expression, error);
		return 0;
	}
	check(!fields_error || !compiled->missing_fields.empty());
	const Program &p = compiled->program;
	check_program(p);
	if (!compiled->missing_fields.empty())
		check(p.code.size() == 2 && p.code[0].op == Op::push_int && p.code[0].imm == 0 && p.strings.empty());

	const std::string bytes = encode(p);
	Program decoded;
	std::string why;
	check(decode(bytes, decoded, &why));
	check(decoded.strings == p.strings && decoded.code.size() == p.code.size());
	check(std::memcmp(decoded.code.data(), p.code.data(), p.code.size() * sizeof(Insn)) == 0);
	return 0;
}
