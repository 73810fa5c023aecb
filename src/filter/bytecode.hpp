// filter/bytecode.hpp — the filter bytecode: what the compiler emits for one
// event type, what travels from the session daemon to a traced program, what
// the verifier checks there, and what the interpreter and the JIT run.
//
// A program is a stack machine over 64-bit slots of two kinds, int (int64_t,
// two's complement, wrapping) and float (double). Every slot's kind is known
// statically at every instruction (the verifier computes it), so the JIT can
// keep the stack in registers. Jumps go forward only, so a program runs at
// most once through each instruction: its run time is bounded by its length.
//
// Inputs of a run:
//   args    the event's tracery_arg array, as passed to a probe (one per
//           field of the event descriptor the program was compiled for)
//   ctx     the context values (Context below); filled in by the caller only
//           when the verifier says the program uses them
// and the event descriptor itself (the verifier checks against it; whether
// load_element reads an ARRAY or a SEQUENCE is the descriptor's to say).
// Result: accept (record the event) or reject.
//
// Instructions (stack effect; "reject" = the whole filter rejects the event):
//   push_int      imm                          -> int imm
//   push_float    imm (bit pattern of a double) -> float
//   load_field    field = index, type = the field's scalar type (U8..S64 ->
//                 int; BOOL -> int 0 or 1 (any non-zero byte is 1); FLOAT,
//                 DOUBLE -> float; for an ENUM field its elem_type)
//                                               -> value of args[field]
//   load_element  field = index of an ARRAY or SEQUENCE field, type = its
//                 elem_type, arg = element index (a constant)
//                 ARRAY: arg < desc.length (verified); the element, or 0 when
//                   args[field].ptr is NULL or arg >= args[field].len (the
//                   value the trace records)
//                 SEQUENCE: reject when ptr is NULL or arg >= len (count)
//                 (BOOL elements load as 0 or 1, like BOOL fields)
//   load_context  arg = ContextField (vpid, vtid, cpu_id) -> int
//   str_match     type = left kind | right kind << 4 (StringKind), field =
//                 left index, arg = right index (field index or index into
//                 Program::strings)         -> int 1 if they match, else 0
//                 The left operand is a field or procname, never a literal
//                 (the compiler folds two literals itself). A literal right
//                 operand matches as a glob: '*' matches any run of bytes,
//                 "\*" a literal star, "\\" a backslash (any other byte,
//                 a lone backslash too, matches itself); two non-literals
//                 are compared byte for byte. A STRING field's
//                 bytes are those before the first NUL within args[i].len
//                 (NULL ptr -> ""); procname's likewise within procname_len.
//   add sub mul   int int -> int (wrapping)
//   div mod       int int -> int; divisor 0 -> reject; INT64_MIN / -1 ->
//                 INT64_MIN, INT64_MIN % -1 -> 0; C truncation toward zero
//   shl shr       int int -> int; count outside 0..63 -> reject; shr is
//                 arithmetic (sign-propagating); shl wraps
//   band bor bxor int int -> int
//   neg bnot      int -> int (wrapping negation, ~)
//   lnot          int -> int (x == 0)
//   eq ne lt le gt ge        int int -> int 0/1 (signed comparison)
//   fadd fsub fmul fdiv      float float -> float (IEEE 754, no trap)
//   fneg                     float -> float
//   feq fne flt fle fgt fge  float float -> int 0/1 (IEEE: NaN unordered)
//   to_float      int -> float (top of stack)
//   to_bool       int -> int (x != 0)
//   float_to_bool float -> int (x != 0.0)
//   jump_if_false arg = target index: top int 0 -> jump there, keeping it;
//                 otherwise pop it
//   jump_if_true  arg = target index: top int != 0 -> jump there, keeping
//                 it; otherwise pop it
//   ret           int -> accept when != 0; only as the last instruction
//
// Unused operand members must be zero (the verifier checks it), so one
// program has one encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::filter {

enum class Op : uint8_t {
	push_int,
	push_float,
	load_field,
	load_element,
	load_context,
	str_match,
	add,
	sub,
	mul,
	div,
	mod,
	shl,
	shr,
	band,
	bor,
	bxor,
	neg,
	bnot,
	lnot,
	eq,
	ne,
	lt,
	le,
	gt,
	ge,
	fadd,
	fsub,
	fmul,
	fdiv,
	fneg,
	feq,
	fne,
	flt,
	fle,
	fgt,
	fge,
	to_float,
	to_bool,
	float_to_bool,
	jump_if_false,
	jump_if_true,
	ret,
	count_ // number of opcodes; not an instruction
};

enum class ContextField : uint32_t { vpid, vtid, cpu_id, count_ };

enum class StringKind : uint8_t { field, procname, literal, count_ };

struct Insn {
	Op op;
	uint8_t type;   // field type (load_*), string kinds (str_match)
	uint16_t field; // field index (load_*), left string index (str_match)
	uint32_t arg;   // element index, context field, right string index, jump target
	int64_t imm;    // push_int value, push_float bit pattern

	bool operator==(const Insn &) const = default;
};
static_assert(sizeof(Insn) == 16);

// Limits the verifier enforces (and the compiler respects).
inline constexpr size_t kMaxInsns = 4096;
inline constexpr size_t kMaxStack = 64;
inline constexpr size_t kMaxStrings = 256;
inline constexpr size_t kMaxStringBytes = 4096; // all strings of a program together

struct Program {
	std::vector<Insn> code;
	std::vector<std::string> strings; // literals of str_match

	bool operator==(const Program &) const = default;
};

// The values load_context and str_match (procname) read.
struct Context {
	int64_t vpid;
	int64_t vtid;
	int64_t cpu_id;
	const char *procname;
	uint32_t procname_len;
};

// Wire form: "TRFB", version (u16 = 1), instruction count (u32), string
// count (u32), the instructions (16 bytes each, little-endian members), then
// each string as u32 length + bytes. decode() refuses anything else (bad
// magic, truncated, trailing bytes, counts over the limits) with a reason;
// it does not verify the program (see verifier.hpp).
std::string encode(const Program &program);
bool decode(std::string_view bytes, Program &program, std::string *why);

// "load_field" etc.; "?" for an unknown opcode.
const char *op_name(Op op);

} // namespace tracery::filter
