// filter/verifier.cpp — one forward pass over the program tracking the depth
// and the kind (int or float) of every stack slot. Jumps only go forward and
// every instruction but the first is reached by falling through, so the
// state at a jump target is the fall-through state, which must equal the
// state each incoming jump recorded there.
#include "filter/verifier.hpp"

#include <optional>
#include <vector>

#include "event/payload.hpp"

namespace tracery::filter {

int load_field_type(const tracery_field_desc &f)
{
	if (f.type == TRACERY_TYPE_ENUM)
		return event::is_integer_type(f.elem_type) ? f.elem_type : -1;
	return event::scalar_size(f.type) ? f.type : -1;
}

namespace {

enum Kind : uint8_t { kInt, kFloat, kNone };

// Which operand members an instruction uses (the others must be zero).
enum Uses : uint8_t { kUsesType = 1, kUsesField = 2, kUsesArg = 4, kUsesImm = 8 };

uint8_t operand_uses(Op op)
{
	switch (op) {
	case Op::push_int:
	case Op::push_float:
		return kUsesImm;
	case Op::load_field:
		return kUsesType | kUsesField;
	case Op::load_element:
	case Op::str_match:
		return kUsesType | kUsesField | kUsesArg;
	case Op::load_context:
	case Op::jump_if_false:
	case Op::jump_if_true:
		return kUsesArg;
	default:
		return 0;
	}
}

// Stack effect of the instructions that only pop operands of one kind and
// push one result: operand count and kind, result kind.
struct Effect {
	uint8_t pops;
	Kind operand;
	Kind result;
};

std::optional<Effect> simple_effect(Op op)
{
	switch (op) {
	case Op::add:
	case Op::sub:
	case Op::mul:
	case Op::div:
	case Op::mod:
	case Op::shl:
	case Op::shr:
	case Op::band:
	case Op::bor:
	case Op::bxor:
	case Op::eq:
	case Op::ne:
	case Op::lt:
	case Op::le:
	case Op::gt:
	case Op::ge:
		return Effect{2, kInt, kInt};
	case Op::neg:
	case Op::bnot:
	case Op::lnot:
	case Op::to_bool:
		return Effect{1, kInt, kInt};
	case Op::fadd:
	case Op::fsub:
	case Op::fmul:
	case Op::fdiv:
		return Effect{2, kFloat, kFloat};
	case Op::fneg:
		return Effect{1, kFloat, kFloat};
	case Op::feq:
	case Op::fne:
	case Op::flt:
	case Op::fle:
	case Op::fgt:
	case Op::fge:
		return Effect{2, kFloat, kInt};
	case Op::to_float:
		return Effect{1, kInt, kFloat};
	case Op::float_to_bool:
		return Effect{1, kFloat, kInt};
	default:
		return std::nullopt;
	}
}

struct State {
	uint32_t depth = 0;
	uint64_t floats = 0; // bit i: slot i (< depth) holds a float; higher bits 0

	bool operator==(const State &) const = default;
	Kind kind(uint32_t slot) const { return (floats >> slot) & 1 ? kFloat : kInt; }
};

const char *kind_name(Kind k) { return k == kFloat ? "float" : "int"; }

// "int, float" (top last), "empty" for no slot.
std::string describe(const State &s, uint32_t n)
{
	if (s.depth == 0 || n == 0)
		return "empty";
	std::string out;
	for (uint32_t i = s.depth > n ? s.depth - n : 0; i < s.depth; ++i) {
		if (!out.empty())
			out += ", ";
		out += kind_name(s.kind(i));
	}
	return out;
}

class Checker {
public:
	Checker(const Program &p, const tracery_event_desc &d, std::string *why) : p_(p), d_(d), why_(why) {}

	bool run(VerifiedInfo *info);

private:
	bool fail(const std::string &msg)
	{
		if (why_)
			*why_ = "insn " + std::to_string(pc_) + " (" + op_name(p_.code[pc_].op) + "): " + msg;
		return false;
	}
	bool check_insn(const Insn &in);
	bool need(uint32_t n, Kind k);
	void pop(uint32_t n);
	bool push(Kind k);
	bool check_field(uint32_t index, const tracery_field_desc **f);
	bool check_string(StringKind kind, uint32_t index, const char *side);
	bool check_load(const Insn &in);
	bool check_jump(const Insn &in);

	const Program &p_;
	const tracery_event_desc &d_;
	std::string *why_;
	size_t pc_ = 0;
	State s_;
	uint32_t max_stack_ = 0;
	bool uses_context_ = false;
	bool uses_procname_ = false;
	std::vector<std::optional<State>> incoming_;
};

bool Checker::need(uint32_t n, Kind k)
{
	bool ok = s_.depth >= n;
	for (uint32_t i = 0; ok && i < n; ++i)
		ok = s_.kind(s_.depth - 1 - i) == k;
	if (ok)
		return true;
	static const char *const counts[] = {"", "one", "two"};
	return fail(std::string("needs ") + counts[n] + " " + kind_name(k) + (n > 1 ? "s" : "") + ", stack " +
	            (s_.depth ? "has " : "is ") + describe(s_, n));
}

void Checker::pop(uint32_t n)
{
	s_.depth -= n;
	s_.floats &= (uint64_t{1} << s_.depth) - 1; // depth < 64 here: forget the popped kinds
}

bool Checker::push(Kind k)
{
	if (s_.depth >= kMaxStack)
		return fail("stack overflow (over " + std::to_string(kMaxStack) + " slots)");
	const uint64_t bit = uint64_t{1} << s_.depth;
	s_.floats = k == kFloat ? s_.floats | bit : s_.floats & ~bit;
	++s_.depth;
	if (s_.depth > max_stack_)
		max_stack_ = s_.depth;
	return true;
}

bool Checker::check_field(uint32_t index, const tracery_field_desc **f)
{
	if (index >= d_.nr_fields)
		return fail("field " + std::to_string(index) + " out of range (event has " +
		            std::to_string(d_.nr_fields) + " fields)");
	*f = &d_.fields[index];
	return true;
}

bool Checker::check_string(StringKind kind, uint32_t index, const char *side)
{
	const tracery_field_desc *f;
	switch (kind) {
	case StringKind::field:
		if (!check_field(index, &f))
			return false;
		if (f->type != TRACERY_TYPE_STRING)
			return fail(std::string(side) + " field " + std::to_string(index) + " is not a string");
		return true;
	case StringKind::procname:
		uses_procname_ = true;
		if (index != 0)
			return fail(std::string(side) + " procname operand has index " + std::to_string(index) +
			            ", not 0");
		return true;
	case StringKind::literal:
		if (index >= p_.strings.size())
			return fail(std::string(side) + " literal " + std::to_string(index) + " out of range (" +
			            std::to_string(p_.strings.size()) + " strings)");
		return true;
	default:
		return fail(std::string(side) + " string kind " + std::to_string(unsigned(kind)) + " unknown");
	}
}

bool Checker::check_load(const Insn &in)
{
	const tracery_field_desc *f;
	if (!check_field(in.field, &f))
		return false;
	int type;
	if (in.op == Op::load_field) {
		type = load_field_type(*f);
		if (type < 0)
			return fail("field " + std::to_string(in.field) + " is not a scalar or enum field");
	} else {
		if (f->type != TRACERY_TYPE_ARRAY && f->type != TRACERY_TYPE_SEQUENCE)
			return fail("field " + std::to_string(in.field) + " is not an array or sequence");
		if (!event::scalar_size(f->elem_type))
			return fail("field " + std::to_string(in.field) + " has no scalar element type");
		if (f->type == TRACERY_TYPE_ARRAY && in.arg >= f->length)
			return fail("element " + std::to_string(in.arg) + " out of range (array of " +
			            std::to_string(f->length) + ")");
		type = f->elem_type;
	}
	if (in.type != type)
		return fail("type " + std::to_string(in.type) + " does not match field " + std::to_string(in.field) +
		            " (type " + std::to_string(type) + ")");
	return push(is_float_type(in.type) ? kFloat : kInt);
}

bool Checker::check_jump(const Insn &in)
{
	if (in.arg <= pc_)
		return fail("jump target " + std::to_string(in.arg) + " is not forward");
	if (in.arg >= p_.code.size())
		return fail("jump target " + std::to_string(in.arg) + " out of range");
	if (!need(1, kInt))
		return false;
	std::optional<State> &target = incoming_[in.arg];
	if (target && *target != s_)
		return fail("jump to " + std::to_string(in.arg) + " with stack " + describe(s_, s_.depth) +
		            ", another edge has " + describe(*target, target->depth));
	target = s_;
	pop(1);
	return true;
}

bool Checker::check_insn(const Insn &in)
{
	if (in.op >= Op::count_)
		return fail("unknown opcode " + std::to_string(unsigned(in.op)));
	const uint8_t uses = operand_uses(in.op);
	if (!(uses & kUsesType) && in.type)
		return fail("unused operand type is " + std::to_string(in.type));
	if (!(uses & kUsesField) && in.field)
		return fail("unused operand field is " + std::to_string(in.field));
	if (!(uses & kUsesArg) && in.arg)
		return fail("unused operand arg is " + std::to_string(in.arg));
	if (!(uses & kUsesImm) && in.imm)
		return fail("unused operand imm is " + std::to_string(in.imm));

	if (const std::optional<State> &in_state = incoming_[pc_]; in_state && *in_state != s_)
		return fail("stack " + describe(s_, s_.depth) + " on fall-through, " +
		            describe(*in_state, in_state->depth) + " from a jump");

	if (const std::optional<Effect> e = simple_effect(in.op)) {
		if (!need(e->pops, e->operand))
			return false;
		pop(e->pops);
		return push(e->result);
	}
	switch (in.op) {
	case Op::push_int:
		return push(kInt);
	case Op::push_float:
		return push(kFloat);
	case Op::load_field:
	case Op::load_element:
		return check_load(in);
	case Op::load_context:
		if (in.arg >= uint32_t(ContextField::count_))
			return fail("context field " + std::to_string(in.arg) + " unknown");
		uses_context_ = true;
		return push(kInt);
	case Op::str_match:
		if (StringKind(in.type & 15) == StringKind::literal)
			return fail("the left operand is a literal (only the right one may be)");
		if (!check_string(StringKind(in.type & 15), in.field, "left") ||
		    !check_string(StringKind(in.type >> 4), in.arg, "right"))
			return false;
		return push(kInt);
	case Op::jump_if_false:
	case Op::jump_if_true:
		return check_jump(in);
	default: // ret
		if (pc_ + 1 != p_.code.size())
			return fail("ret before the last instruction");
		if (s_.depth != 1)
			return fail("needs exactly one int, stack has " + describe(s_, s_.depth));
		return need(1, kInt);
	}
}

bool Checker::run(VerifiedInfo *info)
{
	const auto refuse = [&](const std::string &msg) {
		if (why_)
			*why_ = msg;
		return false;
	};
	if (p_.code.empty())
		return refuse("empty program");
	if (p_.code.size() > kMaxInsns)
		return refuse("program has " + std::to_string(p_.code.size()) + " instructions (max " +
		              std::to_string(kMaxInsns) + ")");
	if (p_.strings.size() > kMaxStrings)
		return refuse("program has " + std::to_string(p_.strings.size()) + " strings (max " +
		              std::to_string(kMaxStrings) + ")");
	size_t bytes = 0;
	for (const std::string &s : p_.strings)
		bytes += s.size();
	if (bytes > kMaxStringBytes)
		return refuse("program strings have " + std::to_string(bytes) + " bytes (max " +
		              std::to_string(kMaxStringBytes) + ")");

	incoming_.assign(p_.code.size(), std::nullopt);
	for (pc_ = 0; pc_ < p_.code.size(); ++pc_)
		if (!check_insn(p_.code[pc_]))
			return false;
	pc_ = p_.code.size() - 1;
	if (p_.code.back().op != Op::ret)
		return fail("the last instruction must be ret");
	if (info)
		*info = VerifiedInfo{max_stack_, uses_context_, uses_procname_};
	return true;
}

} // namespace

bool verify(const Program &program, const tracery_event_desc &desc, VerifiedInfo *info, std::string *why)
{
	return Checker(program, desc, why).run(info);
}

} // namespace tracery::filter
