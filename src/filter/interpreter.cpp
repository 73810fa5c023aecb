// filter/interpreter.cpp — switch dispatch over 64-bit stack slots; doubles
// are kept as their bit patterns.
#include "filter/interpreter.hpp"

#include <bit>
#include <cstring>

#include "event/payload.hpp"
#include "filter/glob.hpp"

namespace tracery::filter {

namespace {

template <typename T>
T load(const void *p) noexcept
{
	T v;
	std::memcpy(&v, p, sizeof v);
	return v;
}

// The value of a scalar of `type` at p, as a stack slot.
uint64_t load_slot(uint8_t type, const void *p) noexcept
{
	// clang-format off
	switch (type) {
	case TRACERY_TYPE_U8: return load<uint8_t>(p);
	case TRACERY_TYPE_U16: return load<uint16_t>(p);
	case TRACERY_TYPE_U32: return load<uint32_t>(p);
	case TRACERY_TYPE_S8: return uint64_t(int64_t(load<int8_t>(p)));
	case TRACERY_TYPE_S16: return uint64_t(int64_t(load<int16_t>(p)));
	case TRACERY_TYPE_S32: return uint64_t(int64_t(load<int32_t>(p)));
	case TRACERY_TYPE_FLOAT: return std::bit_cast<uint64_t>(double(load<float>(p)));
	case TRACERY_TYPE_BOOL: return load<uint8_t>(p) != 0;
	default: return load<uint64_t>(p); // U64, S64, DOUBLE
	}
	// clang-format on
}

double f(uint64_t v) noexcept { return std::bit_cast<double>(v); }
uint64_t from_f(double v) noexcept { return std::bit_cast<uint64_t>(v); }
int64_t s(uint64_t v) noexcept { return int64_t(v); }

} // namespace

bool interpret(const Program &program, const tracery_event_desc &desc, const tracery_arg *args,
               const Context *ctx) noexcept
{
	uint64_t stack[2 + kMaxStack]; // two spare slots: a and b below are formed even when empty
	uint64_t *sp = stack + 2;      // next free slot; sp[-1] is the top
	const Insn *code = program.code.data();
	for (const Insn *in = code;; ++in) {
		uint64_t &a = sp[-2], &b = sp[-1]; // operands of binary ops (a is also the result)
		// clang-format off
		switch (in->op) {
		case Op::push_int:
		case Op::push_float:
			*sp++ = uint64_t(in->imm);
			break;
		case Op::load_field:
			*sp++ = load_slot(in->type, args[in->field].ptr);
			break;
		case Op::load_element: {
			const tracery_arg &arg = args[in->field];
			if (!arg.ptr || in->arg >= arg.len) {
				if (desc.fields[in->field].type == TRACERY_TYPE_SEQUENCE)
					return false;
				*sp++ = 0; // what the trace records; 0 is also 0.0
				break;
			}
			const size_t offset = size_t{in->arg} * event::scalar_size(in->type);
			*sp++ = load_slot(in->type, static_cast<const char *>(arg.ptr) + offset);
			break;
		}
		// clang-format on
		case Op::load_context:
			*sp++ = uint64_t(in->arg == uint32_t(ContextField::vpid)   ? ctx->vpid
			                 : in->arg == uint32_t(ContextField::vtid) ? ctx->vtid
			                                                           : ctx->cpu_id);
			break;
		case Op::str_match: {
			const StrMatchSpec spec = make_str_match_spec(*in, program.strings);
			*sp++ = uint64_t(tracery_filter_str_match(args, ctx, &spec));
			break;
		}
		case Op::add:
			a += b;
			--sp;
			break;
		case Op::sub:
			a -= b;
			--sp;
			break;
		case Op::mul:
			a *= b;
			--sp;
			break;
		case Op::div:
			if (b == 0)
				return false;
			a = s(b) == -1 ? 0 - a : uint64_t(s(a) / s(b));
			--sp;
			break;
		case Op::mod:
			if (b == 0)
				return false;
			a = s(b) == -1 ? 0 : uint64_t(s(a) % s(b));
			--sp;
			break;
		case Op::shl:
			if (b > 63)
				return false;
			a <<= b;
			--sp;
			break;
		case Op::shr:
			if (b > 63)
				return false;
			a = uint64_t(s(a) >> b);
			--sp;
			break;
		case Op::band:
			a &= b;
			--sp;
			break;
		case Op::bor:
			a |= b;
			--sp;
			break;
		case Op::bxor:
			a ^= b;
			--sp;
			break;
		case Op::neg:
			b = 0 - b;
			break;
		case Op::bnot:
			b = ~b;
			break;
		case Op::lnot:
			b = b == 0;
			break;
		case Op::eq:
			a = a == b;
			--sp;
			break;
		case Op::ne:
			a = a != b;
			--sp;
			break;
		case Op::lt:
			a = s(a) < s(b);
			--sp;
			break;
		case Op::le:
			a = s(a) <= s(b);
			--sp;
			break;
		case Op::gt:
			a = s(a) > s(b);
			--sp;
			break;
		case Op::ge:
			a = s(a) >= s(b);
			--sp;
			break;
		case Op::fadd:
			a = from_f(f(a) + f(b));
			--sp;
			break;
		case Op::fsub:
			a = from_f(f(a) - f(b));
			--sp;
			break;
		case Op::fmul:
			a = from_f(f(a) * f(b));
			--sp;
			break;
		case Op::fdiv:
			a = from_f(f(a) / f(b));
			--sp;
			break;
		case Op::fneg:
			b = from_f(-f(b));
			break;
		case Op::feq:
			a = f(a) == f(b);
			--sp;
			break;
		case Op::fne:
			a = f(a) != f(b);
			--sp;
			break;
		case Op::flt:
			a = f(a) < f(b);
			--sp;
			break;
		case Op::fle:
			a = f(a) <= f(b);
			--sp;
			break;
		case Op::fgt:
			a = f(a) > f(b);
			--sp;
			break;
		case Op::fge:
			a = f(a) >= f(b);
			--sp;
			break;
		case Op::to_float:
			b = from_f(double(s(b)));
			break;
		case Op::to_bool:
			b = b != 0;
			break;
		case Op::float_to_bool:
			b = f(b) != 0.0;
			break;
		case Op::jump_if_false:
			if (b == 0)
				in = code + in->arg - 1;
			else
				--sp;
			break;
		case Op::jump_if_true:
			if (b != 0)
				in = code + in->arg - 1;
			else
				--sp;
			break;
		default: // ret
			return b != 0;
		}
	}
}

} // namespace tracery::filter
