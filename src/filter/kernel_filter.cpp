// filter/kernel_filter.cpp — see kernel_filter.hpp.
#include "filter/kernel_filter.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace tracery::filter {

namespace {

struct Refusal {
	std::string message;
	size_t position;
	bool missing_field = false;
};

// What a field or context operand is in the kernel.
struct Operand {
	std::string name; // as written, for messages
	std::string tracefs;
	KernelField::Kind kind;
	bool is_signed;
	int64_t bias;
	uint8_t signed_bits = 0;
};

// a OP b as b OP' a.
Operator mirrored(Operator op)
{
	switch (op) {
	case Operator::lt:
		return Operator::gt;
	case Operator::le:
		return Operator::ge;
	case Operator::gt:
		return Operator::lt;
	case Operator::ge:
		return Operator::le;
	default:
		return op;
	}
}

// Built by appending: GCC 12 at -O3 takes "(" + std::string + ... for
// overlapping copies (-Wrestrict false positive, GCC bug 105651).
std::string parenthesized(const std::string &a, const char *op, const std::string &b)
{
	std::string out = "(";
	out += a;
	out += op;
	out += b;
	out += ')';
	return out;
}

std::string negated(const std::string &a)
{
	std::string out = "!(";
	out += a;
	out += ')';
	return out;
}

class Translator {
public:
	explicit Translator(std::span<const KernelField> fields) : fields_(fields) {}

	std::string truth(const Expr &e)
	{
		switch (e.kind) {
		case ExprKind::binary:
			if (e.op == Operator::land || e.op == Operator::lor)
				return parenthesized(truth(*e.lhs), e.op == Operator::land ? " && " : " || ",
				                     truth(*e.rhs));
			if (is_comparison(e.op))
				return comparison(e);
			if (e.op == Operator::band)
				return bit_test(e);
			refuse(e, std::string("the kernel cannot compute '") + spelling(e.op) +
			                  "': its filters compare a field with a constant");
		case ExprKind::unary:
			if (e.op == Operator::lnot)
				return negated(truth(*e.lhs));
			refuse(e, std::string("the kernel cannot compute '") + spelling(e.op) +
			                  "': its filters compare a field with a constant");
		case ExprKind::field:
		case ExprKind::context: {
			const Operand o = *operand(e);
			if (o.kind != KernelField::Kind::integer)
				refuse(e, "'" + o.name + "' is not a number: compare it with == or !=");
			int64_t zero = 0;
			if (__builtin_sub_overflow(zero, o.bias, &zero))
				refuse(e, "'" + o.name + "' cannot be compared with 0 in the kernel");
			return o.tracefs + " != " + std::to_string(zero);
		}
		default:
			refuse(e, "a constant alone is no condition the kernel evaluates: compare a field with it");
		}
	}

private:
	[[noreturn]] static void refuse(const Expr &e, std::string message)
	{
		throw Refusal{std::move(message), e.position};
	}

	// A field or a context field, or nullopt for anything else.
	std::optional<Operand> operand(const Expr &e) const
	{
		if (e.kind == ExprKind::element)
			refuse(e, "the kernel cannot filter on an element of '" + e.text + "'");
		if (e.kind == ExprKind::context) {
			switch (e.context) {
			case ContextName::procname:
				return Operand{"$ctx.procname", "COMM", KernelField::Kind::string, false, 0};
			case ContextName::cpu_id:
				return Operand{"$ctx.cpu_id", "CPU", KernelField::Kind::integer, false, 0};
			case ContextName::vtid:
				return Operand{"$ctx.vtid", "common_pid", KernelField::Kind::integer, true, 0};
			case ContextName::vpid:
				refuse(e, "the kernel's filters see the thread, not its process: use $ctx.vtid, or "
				          "scope the session with `tracery track -k --pid`");
			}
		}
		if (e.kind != ExprKind::field)
			return std::nullopt;
		for (const KernelField &f : fields_) {
			if (f.name != e.text)
				continue;
			if (f.computed)
				refuse(e,
				       "'" + f.name +
				               "' is computed by Tracery from the kernel's value: the kernel cannot filter "
				               "on it");
			if (f.kind == KernelField::Kind::other)
				refuse(e, "'" + f.name +
				                  "' is neither a number nor a string: the kernel cannot filter on it");
			return Operand{f.name, f.tracefs, f.kind, f.is_signed, f.bias, f.signed_bits};
		}
		std::string names;
		for (const KernelField &f : fields_)
			if (!f.computed && f.kind != KernelField::Kind::other)
				names += (names.empty() ? "" : ", ") + f.name;
		throw Refusal{"no field '" + e.text + "' in this event" +
		                      (names.empty() ? std::string(" (it has none to filter on)")
		                                     : " (it has " + names + ")"),
		              e.position, true};
	}

	// Refuses an operator the kernel would have to compute (a signed
	// integer constant is none).
	static void no_computation(const Expr &e)
	{
		const bool op = e.kind == ExprKind::binary || e.kind == ExprKind::unary;
		if (op && !integer(e))
			refuse(e, std::string("the kernel cannot compute '") + spelling(e.op) +
			                  "': its filters compare a field with a constant");
	}

	// An integer constant (with unary - or +), or nullopt.
	static std::optional<int64_t> integer(const Expr &e)
	{
		if (e.kind == ExprKind::integer)
			return e.integer;
		if (e.kind == ExprKind::unary && (e.op == Operator::neg || e.op == Operator::plus) &&
		    e.lhs->kind == ExprKind::integer) {
			int64_t v = e.lhs->integer;
			if (e.op == Operator::neg && __builtin_sub_overflow(int64_t{0}, v, &v))
				refuse(e, "this constant does not fit 64 bits");
			return v;
		}
		return std::nullopt;
	}

	std::string comparison(const Expr &e)
	{
		// (field & mask) == 0, != 0: a bit test.
		if ((e.op == Operator::eq || e.op == Operator::ne) && e.lhs->kind == ExprKind::binary &&
		    e.lhs->op == Operator::band && integer(*e.rhs) == 0) {
			const std::string test = bit_test(*e.lhs);
			return e.op == Operator::ne ? test : negated(test);
		}
		no_computation(*e.lhs);
		no_computation(*e.rhs);
		const std::optional<Operand> left = operand(*e.lhs), right = operand(*e.rhs);
		if (left && right)
			refuse(e, "the kernel compares a field with a constant, not two fields");
		if (!left && !right)
			refuse(e, "the kernel compares a field with a constant: neither side of '" +
			                  std::string(spelling(e.op)) + "' is a field");
		const Operand &field = left ? *left : *right;
		const Expr &constant = left ? *e.rhs : *e.lhs;
		const Operator op = left ? e.op : mirrored(e.op);
		if (field.kind == KernelField::Kind::string)
			return string_comparison(e, field, op, constant);
		const std::optional<int64_t> value = integer(constant);
		if (!value)
			refuse(constant, "'" + field.name + "' is a number: compare it with an integer constant");
		if (field.signed_bits != 0)
			return signed_argument(e, field, op, constant, *value);
		int64_t raw = 0;
		if (__builtin_sub_overflow(*value, field.bias, &raw))
			refuse(constant, "this constant is out of the range of '" + field.name + "'");
		if (!field.is_signed && raw < 0)
			refuse(constant, "'" + field.name +
			                         "' is unsigned: the kernel compares it with a constant >= " +
			                         std::to_string(field.bias));
		return field.tracefs + " " + spelling(op) + " " + std::to_string(raw);
	}

	// A signed argument (KernelField::signed_bits) compared with `value`:
	// the values in [min, max] that `op` selects are an interval; its
	// non-negative part is the same raw numbers either way, its negative
	// part two raw ranges (zero-extended, sign-extended).
	std::string signed_argument(const Expr &e, const Operand &field, Operator op, const Expr &constant,
	                            int64_t value)
	{
		const unsigned bits = field.signed_bits < 64 ? field.signed_bits : 64;
		const int64_t max = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
		const int64_t min = -max - 1;
		if (value < min || value > max)
			refuse(constant, "this constant is out of the range of '" + field.name + "' (" +
			                         std::to_string(min) + " to " + std::to_string(max) + ")");
		if (op == Operator::ne)
			return negated(signed_argument(e, field, Operator::eq, constant, value));
		int64_t lo = min, hi = max;
		switch (op) {
		case Operator::eq:
			lo = hi = value;
			break;
		case Operator::lt:
			hi = value - (value > min ? 1 : 0);
			if (value == min)
				refuse(e, "'" + field.name + "' is never less than " + std::to_string(min));
			break;
		case Operator::le:
			hi = value;
			break;
		case Operator::gt:
			if (value == max)
				refuse(e, "'" + field.name + "' is never greater than " + std::to_string(max));
			lo = value + 1;
			break;
		case Operator::ge:
			lo = value;
			break;
		default:
			refuse(e, "not a comparison");
		}
		std::vector<std::pair<uint64_t, uint64_t>> ranges;
		if (hi >= 0)
			ranges.emplace_back(static_cast<uint64_t>(lo > 0 ? lo : 0), static_cast<uint64_t>(hi));
		if (lo < 0) {
			const int64_t top = hi < 0 ? hi : -1;
			if (bits < 64) // zero-extended: value + 2^bits
				ranges.emplace_back(static_cast<uint64_t>(lo) & ((uint64_t{1} << bits) - 1),
				                    static_cast<uint64_t>(top) & ((uint64_t{1} << bits) - 1));
			ranges.emplace_back(static_cast<uint64_t>(lo), static_cast<uint64_t>(top));
		}
		std::string out;
		for (const auto &[a, b] : ranges) {
			std::string one = a == b   ? field.tracefs + " == " + std::to_string(a)
			                  : a == 0 ? field.tracefs + " <= " + std::to_string(b)
			                  : b == UINT64_MAX
			                          ? field.tracefs + " >= " + std::to_string(a)
			                          : parenthesized(field.tracefs + " >= " + std::to_string(a), " && ",
			                                          field.tracefs + " <= " + std::to_string(b));
			out = out.empty() ? std::move(one) : parenthesized(out, " || ", one);
		}
		return out;
	}

	std::string string_comparison(const Expr &e, const Operand &field, Operator op, const Expr &constant)
	{
		if (constant.kind != ExprKind::string)
			refuse(constant, "'" + field.name + "' is a string: compare it with a string constant");
		if (op != Operator::eq && op != Operator::ne)
			refuse(e, "strings compare with == and != only");
		// The literal is a Tracery glob: '*' any run, "\*" a star, "\\" a
		// backslash (filter/glob.hpp).
		std::string text;
		bool glob = false, literal_star = false, wildcard_like = false;
		const std::string &s = constant.text;
		for (size_t i = 0; i < s.size(); ++i) {
			const char c = s[i];
			if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '*' || s[i + 1] == '\\')) {
				literal_star |= s[i + 1] == '*';
				if (s[i + 1] == '\\')
					refuse(constant, "the kernel's filter strings cannot hold a backslash");
				text += s[++i];
				continue;
			}
			if (c == '"' || c == '\\')
				refuse(constant, "the kernel's filter strings cannot hold quotes or backslashes");
			if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
				refuse(constant, "the kernel's filter strings cannot hold control characters");
			glob |= c == '*';
			wildcard_like |= c == '?' || c == '[';
			text += c;
		}
		if (glob && literal_star)
			refuse(constant, "the kernel's glob cannot match a literal '*' beside a wildcard '*'");
		if (glob && wildcard_like)
			refuse(constant, "the kernel's glob would read '?' and '[' as wildcards: drop them or the '*'");
		if (!glob)
			return field.tracefs + (op == Operator::eq ? " == \"" : " != \"") + text + "\"";
		const std::string match = field.tracefs + " ~ \"" + text + "\"";
		return op == Operator::eq ? match : negated(match);
	}

	// field & mask, as a truth value.
	std::string bit_test(const Expr &e)
	{
		no_computation(*e.lhs);
		no_computation(*e.rhs);
		const std::optional<Operand> left = operand(*e.lhs), right = operand(*e.rhs);
		if (left && right)
			refuse(e, "the kernel tests a field's bits against a constant, not another field");
		if (!left && !right)
			refuse(e, "neither side of '&' is a field");
		const Operand &field = left ? *left : *right;
		const Expr &constant = left ? *e.rhs : *e.lhs;
		if (field.kind != KernelField::Kind::integer)
			refuse(e, "'" + field.name + "' is not a number: '&' tests a number's bits");
		if (field.bias != 0)
			refuse(e, "'" + field.name + "' is the kernel's value shifted by " +
			                  std::to_string(field.bias) + ": the kernel cannot test its bits");
		const std::optional<int64_t> mask = integer(constant);
		if (!mask || *mask < 0)
			refuse(constant, "'&' tests bits against a constant >= 0");
		return field.tracefs + " & " + std::to_string(*mask);
	}

	std::span<const KernelField> fields_;
};

} // namespace

std::optional<std::string> kernel_filter(std::string_view expression, std::span<const KernelField> fields, Error *error,
                                         bool *missing_field)
{
	if (missing_field)
		*missing_field = false;
	const std::unique_ptr<Expr> tree = parse(expression, error);
	if (!tree)
		return std::nullopt;
	try {
		std::string text = Translator(fields).truth(*tree);
		if (text.size() > kMaxKernelFilter)
			throw Refusal{"the kernel filter would be " + std::to_string(text.size()) +
			                      " bytes, more than " + std::to_string(kMaxKernelFilter),
			              0};
		return text;
	} catch (const Refusal &r) {
		if (error)
			*error = {r.message, r.position};
		if (missing_field)
			*missing_field = r.missing_field;
		return std::nullopt;
	}
}

} // namespace tracery::filter
