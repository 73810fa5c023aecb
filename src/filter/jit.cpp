// filter/jit.cpp — one pass over the verified program emitting asmjit
// Compiler instructions; slot depth d is register gp(d) or xmm(d).
#include "filter/jit.hpp"

#include <asmjit/x86.h>

#include <bit>
#include <cstddef>
#include <optional>

#include "event/payload.hpp"

namespace tracery::filter {

namespace {

using namespace asmjit;

// Process-wide, never destroyed (code may run until the process exits). Used
// under codegen_mutex().
JitRuntime &runtime()
{
	static JitRuntime *rt = new JitRuntime();
	return *rt;
}

class ErrorCapture : public ErrorHandler {
public:
	void handleError(Error err, const char *message, BaseEmitter *) override
	{
		if (error == kErrorOk) {
			error = err;
			this->message = message;
		}
	}

	Error error = kErrorOk;
	std::string message;
};

constexpr int32_t kArgSize = int32_t(sizeof(tracery_arg));
static_assert(offsetof(tracery_arg, ptr) == 0 && offsetof(tracery_arg, len) == 8);

// |v|, also for INT64_MIN.
uint64_t magnitude(int64_t v) { return v < 0 ? 0 - uint64_t(v) : uint64_t(v); }

class Emitter {
public:
	Emitter(x86::Compiler &cc, const Program &p, const tracery_event_desc &desc, const VerifiedInfo &info,
	        const StrMatchSpec *specs, CallForm form)
		: cc_(cc), p_(p), desc_(desc), specs_(specs), form_(form), gp_(info.max_stack), xmm_(info.max_stack),
		  labels_(p.code.size())
	{
	}

	void emit();

private:
	x86::Gp gp(uint32_t d)
	{
		if (!gp_[d].isValid())
			gp_[d] = cc_.newInt64("i%u", d);
		return gp_[d];
	}
	x86::Xmm xmm(uint32_t d)
	{
		if (!xmm_[d].isValid())
			xmm_[d] = cc_.newXmmSd("f%u", d);
		return xmm_[d];
	}
	Label label(uint32_t pc)
	{
		if (!labels_[pc].isValid())
			labels_[pc] = cc_.newLabel();
		return labels_[pc];
	}
	// gp(d) = 0/1 from the low byte a setcc wrote.
	void zero_extend_flag(const x86::Gp &r) { cc_.movzx(r.r32(), r.r8()); }
	void load_scalar(uint8_t type, const x86::Gp &base, int32_t disp, uint32_t d);
	void load_param(uint8_t type, uint32_t field, uint32_t d);
	void add_params(FuncNode *fn);
	void load_element(const Insn &in, uint32_t d);
	void str_match(const StrMatchSpec *spec, uint32_t d);
	void div_mod(bool mod, uint32_t d);
	void div_mod_by_power_of_two(bool mod, int64_t divisor, uint32_t d);
	void float_compare(Op op, uint32_t d);
	// The instruction at pc if control reaches it only from pc - 1, else null.
	const Insn *straight(size_t pc) const
	{
		return pc < p_.code.size() && !labels_[pc].isValid() ? &p_.code[pc] : nullptr;
	}
	size_t compare(size_t pc, const Operand &rhs, uint32_t &d);
	// Emits insn; returns the stack depth after it.
	uint32_t insn(const Insn &in, uint32_t d);

	x86::Compiler &cc_;
	const Program &p_;
	const tracery_event_desc &desc_;
	const StrMatchSpec *specs_;
	const CallForm form_;
	x86::Gp args_, ctx_;
	std::vector<x86::Reg> params_; // CallForm::params: field i arrives in params_[i]
	Label reject_;
	std::vector<x86::Gp> gp_;
	std::vector<x86::Xmm> xmm_;
	std::vector<Label> labels_; // jump targets
	// The instruction before the one being emitted when control can only come
	// from it (no jump lands in between), else null.
	const Insn *prev_ = nullptr;
};

void Emitter::load_scalar(uint8_t type, const x86::Gp &base, int32_t disp, uint32_t d)
{
	// clang-format off
	switch (type) {
	case TRACERY_TYPE_U8: cc_.movzx(gp(d).r32(), x86::byte_ptr(base, disp)); break;
	case TRACERY_TYPE_S8: cc_.movsx(gp(d), x86::byte_ptr(base, disp)); break;
	case TRACERY_TYPE_U16: cc_.movzx(gp(d).r32(), x86::word_ptr(base, disp)); break;
	case TRACERY_TYPE_S16: cc_.movsx(gp(d), x86::word_ptr(base, disp)); break;
	case TRACERY_TYPE_U32: cc_.mov(gp(d).r32(), x86::dword_ptr(base, disp)); break;
	case TRACERY_TYPE_S32: cc_.movsxd(gp(d), x86::dword_ptr(base, disp)); break;
	case TRACERY_TYPE_BOOL:
		cc_.cmp(x86::byte_ptr(base, disp), 0);
		cc_.setne(gp(d).r8());
		zero_extend_flag(gp(d));
		break;
	case TRACERY_TYPE_FLOAT: cc_.cvtss2sd(xmm(d), x86::dword_ptr(base, disp)); break;
	case TRACERY_TYPE_DOUBLE: cc_.movsd(xmm(d), x86::qword_ptr(base, disp)); break;
	default: cc_.mov(gp(d), x86::qword_ptr(base, disp)); break; // U64, S64
	}
	// clang-format on
}

// CallForm::params: the value of `field` from its parameter register. Only the
// bits of the field's own width are defined (the ABI leaves the rest to the
// caller), so every load extends from that width.
void Emitter::load_param(uint8_t type, uint32_t field, uint32_t d)
{
	const x86::Reg &reg = params_[field];
	if (type == TRACERY_TYPE_FLOAT) {
		cc_.cvtss2sd(xmm(d), reg.as<x86::Xmm>());
		return;
	}
	if (type == TRACERY_TYPE_DOUBLE) {
		cc_.movsd(xmm(d), reg.as<x86::Xmm>());
		return;
	}
	const x86::Gp param = reg.as<x86::Gp>();
	// clang-format off
	switch (type) {
	case TRACERY_TYPE_U8: cc_.movzx(gp(d).r32(), param.r8()); break;
	case TRACERY_TYPE_S8: cc_.movsx(gp(d), param.r8()); break;
	case TRACERY_TYPE_U16: cc_.movzx(gp(d).r32(), param.r16()); break;
	case TRACERY_TYPE_S16: cc_.movsx(gp(d), param.r16()); break;
	case TRACERY_TYPE_U32: cc_.mov(gp(d).r32(), param.r32()); break;
	case TRACERY_TYPE_S32: cc_.movsxd(gp(d), param.r32()); break;
	case TRACERY_TYPE_BOOL:
		cc_.test(param.r8(), param.r8());
		cc_.setne(gp(d).r8());
		zero_extend_flag(gp(d));
		break;
	default: cc_.mov(gp(d), param.r64()); break; // U64, S64
	}
	// clang-format on
}

// The type of field `type` as a C parameter.
TypeId param_type(uint8_t type)
{
	// clang-format off
	switch (type) {
	case TRACERY_TYPE_U8: return TypeId::kUInt8;
	case TRACERY_TYPE_S8: return TypeId::kInt8;
	case TRACERY_TYPE_U16: return TypeId::kUInt16;
	case TRACERY_TYPE_S16: return TypeId::kInt16;
	case TRACERY_TYPE_U32: return TypeId::kUInt32;
	case TRACERY_TYPE_S32: return TypeId::kInt32;
	case TRACERY_TYPE_BOOL: return TypeId::kUInt8;
	case TRACERY_TYPE_FLOAT: return TypeId::kFloat32;
	case TRACERY_TYPE_DOUBLE: return TypeId::kFloat64;
	case TRACERY_TYPE_S64: return TypeId::kInt64;
	default: return TypeId::kUInt64;
	}
	// clang-format on
}

uint8_t scalar_type(const tracery_field_desc &f) { return f.type == TRACERY_TYPE_ENUM ? f.elem_type : f.type; }

void Emitter::load_element(const Insn &in, uint32_t d)
{
	const bool sequence = desc_.fields[in.field].type == TRACERY_TYPE_SEQUENCE;
	const Label missing = sequence ? reject_ : cc_.newLabel();
	const x86::Gp base = cc_.newIntPtr("elements");
	cc_.mov(base, x86::qword_ptr(args_, in.field * kArgSize));
	cc_.test(base, base);
	cc_.jz(missing);
	cc_.cmp(x86::dword_ptr(args_, in.field * kArgSize + 8), Imm(int32_t(in.arg)));
	cc_.jbe(missing); // len <= arg (unsigned)
	const uint64_t offset = uint64_t{in.arg} * event::scalar_size(in.type);
	if (offset <= uint64_t(INT32_MAX)) {
		load_scalar(in.type, base, int32_t(offset), d);
	} else {
		const x86::Gp off = cc_.newIntPtr("offset");
		cc_.mov(off, Imm(int64_t(offset)));
		cc_.add(base, off);
		load_scalar(in.type, base, 0, d);
	}
	if (sequence)
		return;
	const Label done = cc_.newLabel();
	cc_.jmp(done);
	cc_.bind(missing);
	if (is_float_type(in.type))
		cc_.xorps(xmm(d), xmm(d));
	else
		cc_.xor_(gp(d).r32(), gp(d).r32());
	cc_.bind(done);
}

void Emitter::str_match(const StrMatchSpec *spec, uint32_t d)
{
	const x86::Gp spec_ptr = cc_.newIntPtr("spec");
	cc_.mov(spec_ptr, Imm(reinterpret_cast<uintptr_t>(spec)));
	const x86::Gp result = cc_.newInt32("match");
	InvokeNode *call;
	cc_.invoke(&call, Imm(reinterpret_cast<uintptr_t>(&tracery_filter_str_match)),
	           FuncSignatureT<int, const tracery_arg *, const Context *, const StrMatchSpec *>(CallConvId::kHost));
	call->setArg(0, args_);
	call->setArg(1, ctx_);
	call->setArg(2, spec_ptr);
	call->setRet(0, result);
	cc_.mov(gp(d).r32(), result);
}

void Emitter::div_mod(bool mod, uint32_t d)
{
	const x86::Gp a = gp(d - 2), b = gp(d - 1);
	const Label normal = cc_.newLabel(), done = cc_.newLabel();
	cc_.test(b, b);
	cc_.jz(reject_);
	cc_.cmp(b, -1);
	cc_.jne(normal);
	// x / -1 = -x (INT64_MIN stays INT64_MIN), x % -1 = 0: idiv would trap.
	if (mod)
		cc_.xor_(a.r32(), a.r32());
	else
		cc_.neg(a);
	cc_.jmp(done);
	cc_.bind(normal);
	const x86::Gp high = cc_.newInt64("high");
	cc_.cqo(high, a);
	cc_.idiv(high, a, b);
	if (mod)
		cc_.mov(a, high);
	cc_.bind(done);
}

// A divisor the program pushed as a constant, ±2^k: shifts instead of idiv,
// with div_mod's results. Other constants keep idiv: on this project's
// benchmark machine (AMD EPYC) a multiplication by the reciprocal measured
// slower than idiv for `a % 100` (2.56 vs 2.31 ns, bench/filter_bench).
void Emitter::div_mod_by_power_of_two(bool mod, int64_t divisor, uint32_t d)
{
	const x86::Gp a = gp(d - 2);
	const int k = std::countr_zero(magnitude(divisor));
	// q = (a + (a < 0 ? 2^k - 1 : 0)) >> k rounds toward zero.
	const x86::Gp q = cc_.newInt64("q");
	cc_.mov(q, a);
	if (k) {
		cc_.sar(q, 63);
		cc_.shr(q, 64 - k);
		cc_.add(q, a);
		cc_.sar(q, k);
	}
	if (mod) { // a % -2^k == a % 2^k
		cc_.shl(q, k);
		cc_.sub(a, q);
	} else {
		if (divisor < 0)
			cc_.neg(q);
		cc_.mov(a, q);
	}
}

void Emitter::float_compare(Op op, uint32_t d)
{
	const x86::Xmm a = xmm(d - 2), b = xmm(d - 1);
	const x86::Gp r = gp(d - 2);
	// ucomisd sets ZF, PF and CF on unordered: lt/le compare b to a so
	// that "above" (CF = 0) is false for NaN.
	// clang-format off
	switch (op) {
	case Op::feq:
	case Op::fne: {
		const x86::Gp parity = cc_.newInt32("parity");
		cc_.ucomisd(a, b);
		if (op == Op::feq) {
			cc_.sete(r.r8());
			cc_.setnp(parity.r8());
			cc_.and_(r.r8(), parity.r8());
		} else {
			cc_.setne(r.r8());
			cc_.setp(parity.r8());
			cc_.or_(r.r8(), parity.r8());
		}
		break;
	}
	// clang-format on
	case Op::flt:
		cc_.ucomisd(b, a);
		cc_.seta(r.r8());
		break;
	case Op::fle:
		cc_.ucomisd(b, a);
		cc_.setae(r.r8());
		break;
	case Op::fgt:
		cc_.ucomisd(a, b);
		cc_.seta(r.r8());
		break;
	default:
		cc_.ucomisd(a, b);
		cc_.setae(r.r8());
		break; // fge
	}
	zero_extend_flag(r);
}

// The condition an integer comparison tests, if it is one.
std::optional<x86::CondCode> int_condition(Op op)
{
	// clang-format off
	switch (op) {
	case Op::eq: return x86::CondCode::kE;
	case Op::ne: return x86::CondCode::kNE;
	case Op::lt: return x86::CondCode::kL;
	case Op::le: return x86::CondCode::kLE;
	case Op::gt: return x86::CondCode::kG;
	case Op::ge: return x86::CondCode::kGE;
	default: return std::nullopt;
	}
	// clang-format on
}

// The integer comparison at pc of gp(d - 2) with rhs (gp(d - 1), or the
// constant the program pushed just before). Fused with the instruction after
// it when nothing else reaches that one: a ret returns the flag (no 0/1 value
// to test again), a jump tests the flags, leaving on the taken path the 0 or
// 1 the program would have left. Returns the pc of the last instruction
// emitted; d becomes the depth after it.
size_t Emitter::compare(size_t pc, const Operand &rhs, uint32_t &d)
{
	const x86::CondCode cond = *int_condition(p_.code[pc].op);
	const x86::Gp a = gp(d - 2);
	const Insn *next = straight(pc + 1);
	d -= 1; // the result replaces a
	if (next && next->op == Op::ret) {
		const x86::Gp result = cc_.newInt32("result");
		cc_.xor_(result, result);
		cc_.emit(x86::Inst::kIdCmp, a, rhs);
		cc_.set(cond, result.r8());
		cc_.ret(result);
		d = 0;
		return pc + 1;
	}
	cc_.emit(x86::Inst::kIdCmp, a, rhs);
	if (next && (next->op == Op::jump_if_false || next->op == Op::jump_if_true)) {
		const bool if_true = next->op == Op::jump_if_true;
		cc_.mov(a.r32(), Imm(if_true ? 1 : 0)); // keeps the flags
		cc_.j(if_true ? cond : x86::negateCond(cond), label(next->arg));
		d -= 1; // fell through: popped
		return pc + 1;
	}
	cc_.set(cond, a.r8());
	zero_extend_flag(a);
	return pc;
}

uint32_t Emitter::insn(const Insn &in, uint32_t d)
{
	// clang-format off
	switch (in.op) {
	case Op::push_int:
		if (in.imm == 0)
			cc_.xor_(gp(d).r32(), gp(d).r32());
		else
			cc_.mov(gp(d), Imm(in.imm));
		return d + 1;
	case Op::push_float:
		if (in.imm == 0) {
			cc_.xorps(xmm(d), xmm(d));
		} else {
			const x86::Gp bits = cc_.newInt64("bits");
			cc_.mov(bits, Imm(in.imm));
			cc_.movq(xmm(d), bits);
		}
		return d + 1;
	case Op::load_field: {
		if (form_ == CallForm::params) {
			load_param(in.type, in.field, d);
			return d + 1;
		}
		const x86::Gp ptr = cc_.newIntPtr("field");
		cc_.mov(ptr, x86::qword_ptr(args_, in.field * kArgSize));
		load_scalar(in.type, ptr, 0, d);
		return d + 1;
	}
	// clang-format on
	case Op::load_element:
		load_element(in, d);
		return d + 1;
	case Op::load_context: {
		static constexpr int32_t offsets[] = {offsetof(Context, vpid), offsetof(Context, vtid),
		                                      offsetof(Context, cpu_id)};
		cc_.mov(gp(d), x86::qword_ptr(ctx_, offsets[in.arg]));
		return d + 1;
	}
	case Op::str_match:
		str_match(specs_++, d);
		return d + 1;
	case Op::add:
		cc_.add(gp(d - 2), gp(d - 1));
		return d - 1;
	case Op::sub:
		cc_.sub(gp(d - 2), gp(d - 1));
		return d - 1;
	case Op::mul:
		cc_.imul(gp(d - 2), gp(d - 1));
		return d - 1;
	case Op::div:
	case Op::mod:
		if (prev_ && prev_->op == Op::push_int && std::has_single_bit(magnitude(prev_->imm)))
			div_mod_by_power_of_two(in.op == Op::mod, prev_->imm, d);
		else
			div_mod(in.op == Op::mod, d);
		return d - 1;
	case Op::shl:
	case Op::shr:
		cc_.cmp(gp(d - 1), 63);
		cc_.ja(reject_); // unsigned: negative counts too
		if (in.op == Op::shl)
			cc_.shl(gp(d - 2), gp(d - 1).r8());
		else
			cc_.sar(gp(d - 2), gp(d - 1).r8());
		return d - 1;
	case Op::band:
		cc_.and_(gp(d - 2), gp(d - 1));
		return d - 1;
	case Op::bor:
		cc_.or_(gp(d - 2), gp(d - 1));
		return d - 1;
	case Op::bxor:
		cc_.xor_(gp(d - 2), gp(d - 1));
		return d - 1;
	case Op::neg:
		cc_.neg(gp(d - 1));
		return d;
	case Op::bnot:
		cc_.not_(gp(d - 1));
		return d;
	case Op::lnot:
	case Op::to_bool:
		cc_.test(gp(d - 1), gp(d - 1));
		if (in.op == Op::lnot)
			cc_.sete(gp(d - 1).r8());
		else
			cc_.setne(gp(d - 1).r8());
		zero_extend_flag(gp(d - 1));
		return d;
	case Op::fadd:
		cc_.addsd(xmm(d - 2), xmm(d - 1));
		return d - 1;
	case Op::fsub:
		cc_.subsd(xmm(d - 2), xmm(d - 1));
		return d - 1;
	case Op::fmul:
		cc_.mulsd(xmm(d - 2), xmm(d - 1));
		return d - 1;
	case Op::fdiv:
		cc_.divsd(xmm(d - 2), xmm(d - 1));
		return d - 1;
	case Op::fneg: {
		const x86::Gp sign = cc_.newInt64("sign");
		const x86::Xmm mask = cc_.newXmmSd("mask");
		cc_.mov(sign, Imm(INT64_MIN));
		cc_.movq(mask, sign);
		cc_.xorpd(xmm(d - 1), mask);
		return d;
	}
	case Op::feq:
	case Op::fne:
	case Op::flt:
	case Op::fle:
	case Op::fgt:
	case Op::fge:
		float_compare(in.op, d);
		return d - 1;
	case Op::to_float:
		cc_.xorps(xmm(d - 1), xmm(d - 1)); // no dependency on the register's old value
		cc_.cvtsi2sd(xmm(d - 1), gp(d - 1));
		return d;
	case Op::float_to_bool: {
		const x86::Xmm zero = cc_.newXmmSd("zero");
		const x86::Gp parity = cc_.newInt32("parity");
		cc_.xorps(zero, zero);
		cc_.ucomisd(xmm(d - 1), zero);
		cc_.setne(gp(d - 1).r8());
		cc_.setp(parity.r8()); // NaN != 0.0
		cc_.or_(gp(d - 1).r8(), parity.r8());
		zero_extend_flag(gp(d - 1));
		return d;
	}
	case Op::jump_if_false:
	case Op::jump_if_true:
		cc_.test(gp(d - 1), gp(d - 1));
		if (in.op == Op::jump_if_false)
			cc_.jz(label(in.arg));
		else
			cc_.jnz(label(in.arg));
		return d - 1;
	default: { // ret
		const x86::Gp result = cc_.newInt32("result");
		cc_.xor_(result, result); // a full write: setne alone would make the allocator spill result
		cc_.test(gp(0), gp(0));
		cc_.setne(result.r8());
		cc_.ret(result);
		return 0;
	}
	}
}

void Emitter::add_params(FuncNode *fn)
{
	for (uint32_t i = 0; i < desc_.nr_fields; ++i) {
		const uint8_t type = scalar_type(desc_.fields[i]);
		x86::Reg reg;
		if (type == TRACERY_TYPE_FLOAT)
			reg = cc_.newXmmSs("p%u", i);
		else if (type == TRACERY_TYPE_DOUBLE)
			reg = cc_.newXmmSd("p%u", i);
		else
			reg = cc_.newGp(param_type(type), "p%u", i);
		fn->setArg(i, reg);
		params_.push_back(reg);
	}
}

void Emitter::emit()
{
	FuncNode *fn;
	if (form_ == CallForm::params) {
		FuncSignatureBuilder sig(CallConvId::kHost);
		sig.setRetT<int>();
		for (uint32_t i = 0; i < desc_.nr_fields; ++i)
			sig.addArg(param_type(scalar_type(desc_.fields[i])));
		fn = cc_.addFunc(sig);
		add_params(fn);
	} else {
		fn = cc_.addFunc(FuncSignatureT<int, const tracery_arg *, const Context *>(CallConvId::kHost));
		args_ = cc_.newIntPtr("args");
		ctx_ = cc_.newIntPtr("ctx");
		fn->setArg(0, args_);
		fn->setArg(1, ctx_);
	}
	reject_ = cc_.newLabel();
	uint32_t depth = 0;
	for (size_t pc = 0; pc < p_.code.size(); ++pc) {
		if (labels_[pc].isValid())
			cc_.bind(labels_[pc]);
		prev_ = pc && !labels_[pc].isValid() ? &p_.code[pc - 1] : nullptr;
		const Insn &in = p_.code[pc];
		const Insn *next = straight(pc + 1);
		if (in.op == Op::push_int && in.imm == int32_t(in.imm) && next && int_condition(next->op)) {
			++depth; // compared with the immediate, never in a register
			pc = compare(pc + 1, Imm(in.imm), depth);
		} else if (int_condition(in.op)) {
			pc = compare(pc, gp(depth - 1), depth);
		} else {
			depth = insn(in, depth);
		}
	}
	cc_.bind(reject_);
	const x86::Gp zero = cc_.newInt32("zero");
	cc_.xor_(zero, zero);
	cc_.ret(zero);
	cc_.endFunc();
}

} // namespace

bool params_form_possible(const tracery_event_desc &desc)
{
	if (desc.nr_fields > Globals::kMaxFuncArgs)
		return false;
	for (uint32_t i = 0; i < desc.nr_fields; ++i) {
		const tracery_field_desc &f = desc.fields[i];
		if (f.type == TRACERY_TYPE_ENUM ? !event::is_integer_type(f.elem_type)
		                                : event::scalar_size(f.type) == 0)
			return false;
	}
	return true;
}

std::unique_ptr<Jit> Jit::compile(const Program &program, const tracery_event_desc &desc, const VerifiedInfo &info,
                                  std::string *why, CallForm form)
{
	if (form == CallForm::params && (!params_form_possible(desc) || info.uses_context || info.uses_procname)) {
		if (why)
			*why = "the parameter form needs an event of scalar fields and a filter without context";
		return nullptr;
	}
	std::unique_ptr<Jit> jit(new Jit());
	jit->strings_ = program.strings;
	for (const Insn &in : program.code)
		if (in.op == Op::str_match)
			jit->specs_.push_back(make_str_match_spec(in, jit->strings_));

	ErrorCapture errors;
	CodeHolder code;
	code.init(runtime().environment());
	code.setErrorHandler(&errors);
	x86::Compiler cc(&code);
	Emitter(cc, program, desc, info, jit->specs_.data(), form).emit();
	if (errors.error == kErrorOk)
		cc.finalize();
	FilterFn fn = nullptr;
	if (errors.error == kErrorOk) {
		std::lock_guard lock(codegen_mutex());
		errors.error = runtime().add(&fn, &code);
	}
	if (errors.error != kErrorOk || !fn) {
		if (why)
			*why = std::string("JIT compilation failed: ") +
			       (errors.message.empty() ? DebugUtils::errorAsString(errors.error) : errors.message);
		return nullptr;
	}
	jit->fn_ = fn;
	return jit;
}

Jit::~Jit()
{
	if (fn_) {
		std::lock_guard lock(codegen_mutex());
		runtime().release(fn_);
	}
}

std::mutex &codegen_mutex()
{
	static auto *mutex = new std::mutex; // never destroyed: code is released until the process exits
	return *mutex;
}

} // namespace tracery::filter
