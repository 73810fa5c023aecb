// filter/compiler.cpp — type checking, constant folding and code generation
// of filter expressions (see compiler.hpp).
//
// Each subexpression compiles to a Value: a constant, a "fault" (a constant
// that rejects the event when evaluated: 1/0), a string operand, or a code
// fragment whose jump targets are relative to the fragment's start (append()
// relocates them).
#include "filter/compiler.hpp"

#include <algorithm>
#include <bit>
#include <map>

#include "event/payload.hpp"
#include "filter/glob.hpp"

namespace tracery::filter {

namespace {

using event::is_integer_type;

enum class Kind : uint8_t { integer, floating, string, unknown /* depends on a missing field */ };
enum class State : uint8_t { constant, fault, code };

struct Value {
	Kind kind = Kind::unknown;
	State state = State::code;
	int64_t i = 0;                              // integer constant
	double f = 0;                               // floating constant
	std::string literal;                        // string constant, as Program::strings holds it
	StringKind string_kind = StringKind::field; // string operand
	uint16_t string_index = 0;
	std::vector<Insn> code; // numbers in State::code
	bool boolean = false;   // the code leaves 0 or 1
	bool may_fault = false; // the code may reject the event
};

Value int_const(int64_t v)
{
	Value r;
	r.kind = Kind::integer;
	r.state = State::constant;
	r.i = v;
	return r;
}

Value float_const(double v)
{
	Value r;
	r.kind = Kind::floating;
	r.state = State::constant;
	r.f = v;
	return r;
}

Value fault(Kind kind)
{
	Value r;
	r.kind = kind;
	r.state = State::fault;
	return r;
}

// Not a constant; no code yet.
Value operand(Kind kind)
{
	Value r;
	r.kind = kind;
	return r;
}

Insn insn(Op op, uint8_t type = 0, uint16_t field = 0, uint32_t arg = 0, int64_t imm = 0)
{
	return Insn{op, type, field, arg, imm};
}

bool truthy(const Value &v) { return v.kind == Kind::integer ? v.i != 0 : v.f != 0.0; }

bool is_jump(Op op) { return op == Op::jump_if_false || op == Op::jump_if_true; }

Value fold_float(Operator op, double a, double b)
{
	switch (op) {
	case Operator::add:
		return float_const(a + b);
	case Operator::sub:
		return float_const(a - b);
	case Operator::mul:
		return float_const(a * b);
	case Operator::div:
		return float_const(a / b);
	case Operator::lt:
		return int_const(a < b);
	case Operator::le:
		return int_const(a <= b);
	case Operator::gt:
		return int_const(a > b);
	case Operator::ge:
		return int_const(a >= b);
	case Operator::eq:
		return int_const(a == b);
	default: // ne
		return int_const(a != b);
	}
}

Op int_op(Operator op)
{
	// clang-format off
	switch (op) {
	case Operator::mul: return Op::mul;
	case Operator::div: return Op::div;
	case Operator::mod: return Op::mod;
	case Operator::add: return Op::add;
	case Operator::sub: return Op::sub;
	case Operator::shl: return Op::shl;
	case Operator::shr: return Op::shr;
	case Operator::lt: return Op::lt;
	case Operator::le: return Op::le;
	case Operator::gt: return Op::gt;
	case Operator::ge: return Op::ge;
	case Operator::eq: return Op::eq;
	case Operator::ne: return Op::ne;
	case Operator::band: return Op::band;
	case Operator::bxor: return Op::bxor;
	default: return Op::bor;
	}
	// clang-format on
}

Op float_op(Operator op)
{
	// clang-format off
	switch (op) {
	case Operator::mul: return Op::fmul;
	case Operator::div: return Op::fdiv;
	case Operator::add: return Op::fadd;
	case Operator::sub: return Op::fsub;
	case Operator::lt: return Op::flt;
	case Operator::le: return Op::fle;
	case Operator::gt: return Op::fgt;
	case Operator::ge: return Op::fge;
	case Operator::eq: return Op::feq;
	default: return Op::fne;
	}
	// clang-format on
}

// A literal's bytes: "\*" is '*', "\\" is '\'.
std::string unescape(std::string_view literal)
{
	std::string out;
	for (size_t i = 0; i < literal.size(); ++i) {
		if (literal[i] == '\\' && i + 1 < literal.size() && (literal[i + 1] == '*' || literal[i + 1] == '\\'))
			++i;
		out += literal[i];
	}
	return out;
}

Error too_complex(const std::string &what, size_t limit)
{
	return Error{"filter too complex (" + what + ", limit " + std::to_string(limit) + ")", 0};
}

// Appends fragment src to dst, relocating its jumps.
void append(std::vector<Insn> &dst, const std::vector<Insn> &src)
{
	if (dst.size() + src.size() > kMaxInsns)
		throw too_complex("over " + std::to_string(kMaxInsns) + " instructions", kMaxInsns);
	const auto base = static_cast<uint32_t>(dst.size());
	for (Insn i : src) {
		if (is_jump(i.op))
			i.arg += base;
		dst.push_back(i);
	}
}

// Appends the code computing numeric value v (as a float when as_float).
void emit(std::vector<Insn> &dst, const Value &v, bool as_float = false)
{
	const bool convert = as_float && v.kind == Kind::integer;
	switch (v.state) {
	case State::constant:
		if (v.kind == Kind::floating || convert)
			append(dst, {insn(Op::push_float, 0, 0, 0,
			                  std::bit_cast<int64_t>(convert ? static_cast<double>(v.i) : v.f))});
		else
			append(dst, {insn(Op::push_int, 0, 0, 0, v.i)});
		return;
	case State::fault: // only as an operand of && or || (an int): divides by zero
		append(dst, {insn(Op::push_int), insn(Op::push_int), insn(Op::div)});
		return;
	case State::code:
		append(dst, v.code);
		if (convert)
			append(dst, {insn(Op::to_float)});
		return;
	}
}

// v as an int 0/1.
Value to_bool(Value v)
{
	if (v.state == State::constant)
		return int_const(truthy(v));
	if (v.state == State::fault)
		return fault(Kind::integer);
	if (v.kind == Kind::floating)
		append(v.code, {insn(Op::float_to_bool)});
	else if (!v.boolean)
		append(v.code, {insn(Op::to_bool)});
	v.kind = Kind::integer;
	v.boolean = true;
	return v;
}

// The result of code: an int, 0/1 when boolean.
Value code_value(Kind kind, std::vector<Insn> code, bool boolean, bool may_fault)
{
	Value r = operand(kind);
	r.code = std::move(code);
	r.boolean = boolean;
	r.may_fault = may_fault;
	return r;
}

class Compiler {
public:
	explicit Compiler(const tracery_event_desc &desc) : desc_(desc) {}

	Compiled run(const Expr &root)
	{
		Value v = visit(root);
		if (v.kind == Kind::string)
			throw Error{"a string is not a condition; compare it with == or !=", root.position};
		Compiled out;
		std::vector<Insn> &code = out.program.code;
		if (!missing_.empty()) {
			out.missing_fields = std::move(missing_);
			code = {insn(Op::push_int), insn(Op::ret)};
			return out;
		}
		if (v.state != State::code) {
			code = {insn(Op::push_int, 0, 0, 0, v.state == State::constant && truthy(v)), insn(Op::ret)};
			return out;
		}
		emit(code, v);
		if (v.kind == Kind::floating)
			append(code, {insn(Op::float_to_bool)});
		append(code, {insn(Op::ret)});
		out.program.strings = used_strings(code);
		check_stack(code);
		return out;
	}

private:
	// The only recursion: its frame holds the operands, the handlers (not
	// inlined, their frames are large under sanitizers) do the rest.
	Value visit(const Expr &e)
	{
		switch (e.kind) {
		case ExprKind::element:
			return element(e, visit(*e.lhs));
		case ExprKind::unary:
			return unary(e, visit(*e.lhs));
		case ExprKind::binary: {
			Value l = visit(*e.lhs);
			Value r = visit(*e.rhs);
			if (e.op == Operator::land || e.op == Operator::lor)
				return logical(e, std::move(l), std::move(r));
			return binary(e, std::move(l), std::move(r));
		}
		default:
			return leaf(e);
		}
	}

	[[gnu::noinline]] Value leaf(const Expr &e)
	{
		switch (e.kind) {
		case ExprKind::integer:
			return int_const(e.integer);
		case ExprKind::floating:
			return float_const(e.floating);
		case ExprKind::string: {
			Value r;
			r.kind = Kind::string;
			r.state = State::constant;
			r.literal = e.text;
			return r;
		}
		case ExprKind::field:
			return field(e);
		default: // context
			return context(e);
		}
	}

	// Index of the field named name, or -1.
	int64_t find_field(const std::string &name) const
	{
		for (uint32_t i = 0; i < desc_.nr_fields; ++i)
			if (desc_.fields[i].name && name == desc_.fields[i].name)
				return i;
		return -1;
	}

	Value missing(std::string name)
	{
		if (std::find(missing_.begin(), missing_.end(), name) == missing_.end())
			missing_.push_back(std::move(name));
		return operand(Kind::unknown);
	}

	static Error type_error(const Expr &e, const std::string &message)
	{
		return Error{"'" + e.text + "' " + message, e.position};
	}

	Value field(const Expr &e)
	{
		const int64_t index = find_field(e.text);
		if (index < 0)
			return missing(e.text);
		const tracery_field_desc &f = desc_.fields[index];
		if (index > UINT16_MAX)
			throw too_complex("field index " + std::to_string(index), UINT16_MAX);
		const auto field = static_cast<uint16_t>(index);
		switch (f.type) {
		case TRACERY_TYPE_FLOAT:
		case TRACERY_TYPE_DOUBLE:
			return code_value(Kind::floating, {insn(Op::load_field, f.type, field)}, false, false);
		case TRACERY_TYPE_BOOL:
			return code_value(Kind::integer, {insn(Op::load_field, f.type, field)}, false, false);
		case TRACERY_TYPE_ENUM:
			if (!is_integer_type(f.elem_type))
				throw type_error(e, "has an invalid descriptor (enum of a non-integer type)");
			return code_value(Kind::integer, {insn(Op::load_field, f.elem_type, field)}, false, false);
		case TRACERY_TYPE_STRING: {
			Value r = operand(Kind::string);
			r.string_kind = StringKind::field;
			r.string_index = field;
			return r;
		}
		case TRACERY_TYPE_ARRAY:
			throw type_error(e, "is an array; compare one element, e.g. " + e.text + "[0]");
		case TRACERY_TYPE_SEQUENCE:
			throw type_error(e, "is a sequence; compare one element, e.g. " + e.text + "[0]");
		case TRACERY_TYPE_BLOB:
			throw type_error(e, "is a blob; filters cannot read blobs");
		default:
			if (!is_integer_type(f.type))
				throw type_error(e, "has an invalid descriptor (unknown type)");
			return code_value(Kind::integer, {insn(Op::load_field, f.type, field)}, false, false);
		}
	}

	[[gnu::noinline]] Value element(const Expr &e, const Value &index)
	{
		if (index.state != State::constant || index.kind != Kind::integer)
			throw Error{"an index must be a constant integer", e.lhs->position};
		if (index.i < 0)
			throw Error{"negative index", e.lhs->position};
		const int64_t i = find_field(e.text);
		if (i < 0)
			return missing(e.text);
		const tracery_field_desc &f = desc_.fields[i];
		if (f.type != TRACERY_TYPE_ARRAY && f.type != TRACERY_TYPE_SEQUENCE)
			throw type_error(e, "is not an array or a sequence");
		if (event::scalar_size(f.elem_type) == 0)
			throw type_error(e, "has an invalid descriptor (elements of a non-scalar type)");
		if (i > UINT16_MAX)
			throw too_complex("field index " + std::to_string(i), UINT16_MAX);
		const bool sequence = f.type == TRACERY_TYPE_SEQUENCE;
		if ((!sequence && index.i >= f.length) || index.i > UINT32_MAX)
			return missing(e.text + "[" + std::to_string(index.i) + "]");
		const Kind kind = f.elem_type == TRACERY_TYPE_FLOAT || f.elem_type == TRACERY_TYPE_DOUBLE
		                          ? Kind::floating
		                          : Kind::integer;
		return code_value(
			kind,
			{insn(Op::load_element, f.elem_type, static_cast<uint16_t>(i), static_cast<uint32_t>(index.i))},
			false, sequence);
	}

	static Value context(const Expr &e)
	{
		ContextField field;
		switch (e.context) {
		case ContextName::procname: {
			Value r = operand(Kind::string);
			r.string_kind = StringKind::procname;
			return r;
		}
		case ContextName::vpid:
			field = ContextField::vpid;
			break;
		case ContextName::vtid:
			field = ContextField::vtid;
			break;
		default:
			field = ContextField::cpu_id;
			break;
		}
		return code_value(Kind::integer, {insn(Op::load_context, 0, 0, static_cast<uint32_t>(field))}, false,
		                  false);
	}

	static Error operator_error(const Expr &e, const char *message)
	{
		return Error{"'" + std::string(spelling(e.op)) + "' " + message, e.position};
	}

	[[gnu::noinline]] Value unary(const Expr &e, Value v)
	{
		if (v.kind == Kind::string)
			throw operator_error(e, "needs a number, not a string");
		if (e.op == Operator::bnot && v.kind == Kind::floating)
			throw operator_error(e, "needs an integer, not a float");
		const Kind kind = e.op == Operator::lnot ? Kind::integer : v.kind;
		if (e.op == Operator::plus || v.kind == Kind::unknown)
			return e.op == Operator::plus ? v : operand(kind);
		if (v.state == State::fault)
			return fault(kind);
		const bool is_float = v.kind == Kind::floating;
		if (v.state == State::constant) {
			switch (e.op) {
			case Operator::lnot:
				return int_const(!truthy(v));
			case Operator::neg:
				return is_float ? float_const(-v.f)
				                : int_const(static_cast<int64_t>(0 - static_cast<uint64_t>(v.i)));
			default: // bnot
				return int_const(~v.i);
			}
		}
		switch (e.op) {
		case Operator::lnot:
			if (is_float)
				append(v.code, {insn(Op::float_to_bool)});
			append(v.code, {insn(Op::lnot)});
			v.kind = Kind::integer;
			v.boolean = true;
			return v;
		case Operator::neg:
			append(v.code, {insn(is_float ? Op::fneg : Op::neg)});
			break;
		default: // bnot
			append(v.code, {insn(Op::bnot)});
			break;
		}
		v.boolean = false;
		return v;
	}

	[[gnu::noinline]] Value binary(const Expr &e, Value l, Value r)
	{
		const bool equality = e.op == Operator::eq || e.op == Operator::ne;
		if (equality && (l.kind == Kind::string || r.kind == Kind::string)) {
			if (l.kind == Kind::unknown || r.kind == Kind::unknown)
				return operand(Kind::integer);
			if (l.kind != r.kind)
				throw operator_error(e, "compares a string with a number");
			return compare_strings(e, std::move(l), std::move(r));
		}
		if (l.kind == Kind::string || r.kind == Kind::string)
			throw operator_error(e, "needs numbers, not a string");
		if (needs_integers(e.op) && (l.kind == Kind::floating || r.kind == Kind::floating))
			throw operator_error(e, "needs integers, not a float");
		const bool comparison = is_comparison(e.op);
		if (l.kind == Kind::unknown || r.kind == Kind::unknown)
			return operand(comparison || needs_integers(e.op) ? Kind::integer : Kind::unknown);

		const bool is_float = l.kind == Kind::floating || r.kind == Kind::floating;
		const Kind kind = comparison || !is_float ? Kind::integer : Kind::floating;
		// A constant right operand that always rejects (x / 0, x << 64)
		// makes the operation a fault even when x is not constant.
		const bool checked = !is_float && (e.op == Operator::div || e.op == Operator::mod ||
		                                   e.op == Operator::shl || e.op == Operator::shr);
		if (checked && r.state == State::constant && !fold_int(e.op, 0, r.i))
			return fault(kind);
		if (l.state == State::fault || r.state == State::fault)
			return fault(kind);
		if (l.state == State::constant && r.state == State::constant) {
			if (!is_float)
				return int_const(*fold_int(e.op, l.i, r.i));
			const auto as_double = [](const Value &v) {
				return v.kind == Kind::floating ? v.f : static_cast<double>(v.i);
			};
			return fold_float(e.op, as_double(l), as_double(r));
		}
		std::vector<Insn> code;
		emit(code, l, is_float);
		emit(code, r, is_float);
		append(code, {insn(is_float ? float_op(e.op) : int_op(e.op))});
		return code_value(kind, std::move(code), comparison,
		                  l.may_fault || r.may_fault || (checked && r.state != State::constant));
	}

	Value compare_strings(const Expr &e, Value l, Value r)
	{
		const bool negate = e.op == Operator::ne;
		if (l.state == State::constant && r.state == State::constant) {
			const std::string l_text = unescape(l.literal), r_text = unescape(r.literal);
			const bool match =
				glob_match(r.literal.data(), r.literal.size(), l_text.data(), l_text.size()) ||
				glob_match(l.literal.data(), l.literal.size(), r_text.data(), r_text.size());
			return int_const(match != negate);
		}
		if (l.state == State::constant) // the literal goes right
			std::swap(l, r);
		const StringKind right_kind = r.state == State::constant ? StringKind::literal : r.string_kind;
		const uint32_t right_index = r.state == State::constant ? literal_index(r.literal) : r.string_index;
		std::vector<Insn> code{insn(Op::str_match,
		                            static_cast<uint8_t>(static_cast<unsigned>(l.string_kind) |
		                                                 static_cast<unsigned>(right_kind) << 4),
		                            l.string_index, right_index)};
		if (negate)
			code.push_back(insn(Op::lnot));
		return code_value(Kind::integer, std::move(code), true, false);
	}

	// && and ||: short-circuit jumps; the result is 0 or 1.
	[[gnu::noinline]] Value logical(const Expr &e, Value l, Value r)
	{
		if (l.kind == Kind::string || r.kind == Kind::string)
			throw operator_error(e, "needs numbers, not a string");
		if (l.kind == Kind::unknown || r.kind == Kind::unknown)
			return operand(Kind::integer);
		const bool is_and = e.op == Operator::land;
		// The value that decides alone: 0 for &&, 1 for ||.
		const int64_t decisive = is_and ? 0 : 1;
		if (l.state == State::constant)
			return truthy(l) == bool(decisive) ? int_const(decisive) : to_bool(std::move(r));
		if (l.state == State::fault)
			return fault(Kind::integer);
		if (r.state == State::constant) {
			if (truthy(r) != bool(decisive))
				return to_bool(std::move(l));
			if (!l.may_fault) // l need not run
				return int_const(decisive);
		}
		std::vector<Insn> code;
		const bool may_fault = l.may_fault || r.state == State::fault || r.may_fault;
		if (is_and) {
			// A false value is 0 already; a true one is popped.
			emit(code, l);
			if (l.kind == Kind::floating)
				append(code, {insn(Op::float_to_bool)});
		} else {
			emit(code, to_bool(std::move(l)));
		}
		const size_t jump = code.size();
		append(code, {insn(is_and ? Op::jump_if_false : Op::jump_if_true)});
		emit(code, to_bool(std::move(r)));
		code[jump].arg = static_cast<uint32_t>(code.size());
		return code_value(Kind::integer, std::move(code), true, may_fault);
	}

	// Index of a literal in the strings of the program being built.
	uint32_t literal_index(const std::string &literal)
	{
		const auto it = literals_.try_emplace(literal, literals_.size()).first;
		return it->second;
	}

	// The literals the code uses, renumbered in order of use.
	std::vector<std::string> used_strings(std::vector<Insn> &code) const
	{
		std::vector<std::string> by_index(literals_.size());
		for (const auto &[literal, index] : literals_)
			by_index[index] = literal;
		std::vector<std::string> used;
		std::map<uint32_t, uint32_t> renumbered;
		size_t bytes = 0;
		for (Insn &i : code) {
			if (i.op != Op::str_match || (i.type >> 4) != static_cast<uint8_t>(StringKind::literal))
				continue;
			const auto [it, added] = renumbered.try_emplace(i.arg, used.size());
			if (added) {
				used.push_back(by_index[i.arg]);
				bytes += used.back().size();
			}
			i.arg = it->second;
		}
		if (used.size() > kMaxStrings)
			throw too_complex(std::to_string(used.size()) + " strings", kMaxStrings);
		if (bytes > kMaxStringBytes)
			throw too_complex(std::to_string(bytes) + " bytes of strings", kMaxStringBytes);
		return used;
	}

	// The deepest stack the code reaches (jumps go forward to where the
	// straight-line depth is the same).
	static void check_stack(const std::vector<Insn> &code)
	{
		size_t depth = 0, deepest = 0;
		for (const Insn &i : code) {
			switch (i.op) {
			case Op::push_int:
			case Op::push_float:
			case Op::load_field:
			case Op::load_element:
			case Op::load_context:
			case Op::str_match:
				deepest = std::max(deepest, ++depth);
				break;
			case Op::neg:
			case Op::bnot:
			case Op::lnot:
			case Op::fneg:
			case Op::to_float:
			case Op::to_bool:
			case Op::float_to_bool:
				break;
			default: // binary operators, jumps (when they fall through), ret
				--depth;
				break;
			}
		}
		if (deepest > kMaxStack)
			throw too_complex("stack of " + std::to_string(deepest), kMaxStack);
	}

	const tracery_event_desc &desc_;
	std::vector<std::string> missing_;
	std::map<std::string, uint32_t> literals_;
};

void collect_fields(const Expr &e, std::vector<const Expr *> &out)
{
	if (e.kind == ExprKind::field || e.kind == ExprKind::element)
		out.push_back(&e);
	if (e.lhs)
		collect_fields(*e.lhs, out);
	if (e.rhs)
		collect_fields(*e.rhs, out);
}

} // namespace

std::optional<int64_t> fold_int(Operator op, int64_t a, int64_t b)
{
	const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
	switch (op) {
	case Operator::add:
		return static_cast<int64_t>(ua + ub);
	case Operator::sub:
		return static_cast<int64_t>(ua - ub);
	case Operator::mul:
		return static_cast<int64_t>(ua * ub);
	case Operator::div:
		if (b == 0)
			return std::nullopt;
		return a == INT64_MIN && b == -1 ? INT64_MIN : a / b;
	case Operator::mod:
		if (b == 0)
			return std::nullopt;
		return b == -1 ? 0 : a % b;
	case Operator::shl:
		if (b < 0 || b > 63)
			return std::nullopt;
		return static_cast<int64_t>(ua << b);
	case Operator::shr:
		if (b < 0 || b > 63)
			return std::nullopt;
		return a >> b;
	case Operator::band:
		return a & b;
	case Operator::bor:
		return a | b;
	case Operator::bxor:
		return a ^ b;
	case Operator::lt:
		return a < b;
	case Operator::le:
		return a <= b;
	case Operator::gt:
		return a > b;
	case Operator::ge:
		return a >= b;
	case Operator::eq:
		return a == b;
	default: // ne
		return a != b;
	}
}

size_t edit_distance(std::string_view a, std::string_view b)
{
	std::vector<size_t> row(b.size() + 1);
	for (size_t j = 0; j <= b.size(); ++j)
		row[j] = j;
	for (size_t i = 1; i <= a.size(); ++i) {
		size_t diagonal = row[0];
		row[0] = i;
		for (size_t j = 1; j <= b.size(); ++j) {
			const size_t up = row[j];
			row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
			diagonal = up;
		}
	}
	return row[b.size()];
}

std::optional<Compiled> compile(const Expr &expr, const tracery_event_desc &desc, Error *error)
{
	try {
		return Compiler(desc).run(expr);
	} catch (Error &e) {
		if (error)
			*error = std::move(e);
		return std::nullopt;
	}
}

std::optional<Compiled> compile_filter(std::string_view expression, const tracery_event_desc &desc, Error *error)
{
	const auto expr = parse(expression, error);
	if (!expr)
		return std::nullopt;
	return compile(*expr, desc, error);
}

std::optional<Error> check_fields(const Expr &expr, const std::vector<const tracery_event_desc *> &events)
{
	std::vector<std::string_view> names;
	for (const tracery_event_desc *ev : events)
		for (uint32_t i = 0; i < ev->nr_fields; ++i)
			if (ev->fields[i].name)
				names.emplace_back(ev->fields[i].name);
	std::vector<const Expr *> refs;
	collect_fields(expr, refs);
	for (const Expr *ref : refs) {
		const std::string &name = ref->text;
		if (std::find(names.begin(), names.end(), name) != names.end())
			continue;
		std::string_view best;
		size_t best_distance = 3; // suggest names at most 2 edits away
		for (const std::string_view candidate : names) {
			if (const size_t d = edit_distance(name, candidate); d < best_distance) {
				best = candidate;
				best_distance = d;
			}
		}
		return Error{"unknown field '" + name + "'" +
		                     (best.empty() ? "" : "; did you mean '" + std::string(best) + "'?"),
		             ref->position};
	}

	std::optional<Error> first;
	for (const tracery_event_desc *ev : events) {
		Error e{};
		const auto compiled = compile(expr, *ev, &e);
		if (compiled && compiled->missing_fields.empty())
			return std::nullopt;
		if (!compiled && !first)
			first = std::move(e);
	}
	return first;
}

} // namespace tracery::filter
