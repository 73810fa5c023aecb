// filter/test_insns.hpp — instructions written by hand in the engines' unit
// tests: I() any instruction, push() and pushf() constants.
#pragma once

#include <bit>
#include <cstdint>

#include "filter/bytecode.hpp"

namespace tracery::filter::test {

inline Insn I(Op op, uint8_t type = 0, uint16_t field = 0, uint32_t arg = 0, int64_t imm = 0)
{
	return Insn{op, type, field, arg, imm};
}
inline Insn push(int64_t v) { return I(Op::push_int, 0, 0, 0, v); }
inline Insn pushf(double v) { return I(Op::push_float, 0, 0, 0, std::bit_cast<int64_t>(v)); }

} // namespace tracery::filter::test
