// filter/verifier_test.cpp — the verifier accepts well-formed programs and
// refuses each kind of malformed one, naming the instruction and the fault.
#include <gtest/gtest.h>

#include "filter/verifier.hpp"

namespace tracery::filter {
namespace {

const tracery_enum_entry kEntries[] = {{"zero", 0, 0}};
const tracery_enum_desc kEnum = {"e", kEntries, 1};
const tracery_field_desc kFields[] = {
	{"n", TRACERY_TYPE_U32, 0, 0, nullptr},                         // 0
	{"x", TRACERY_TYPE_DOUBLE, 0, 0, nullptr},                      // 1
	{"e", TRACERY_TYPE_ENUM, TRACERY_TYPE_S16, 0, &kEnum},          // 2
	{"arr", TRACERY_TYPE_ARRAY, TRACERY_TYPE_U8, 4, nullptr},       // 3
	{"seq", TRACERY_TYPE_SEQUENCE, TRACERY_TYPE_FLOAT, 0, nullptr}, // 4
	{"s", TRACERY_TYPE_STRING, 0, 0, nullptr},                      // 5
	{"blob", TRACERY_TYPE_BLOB, 0, 0, nullptr},                     // 6
	{"b", TRACERY_TYPE_BOOL, 0, 0, nullptr},                        // 7
};
const tracery_event_desc kEvent = {"test", "verify", kFields, 8, 0, nullptr, nullptr, nullptr, TRACERY_GATE_ARGS};

Insn I(Op op, uint8_t type = 0, uint16_t field = 0, uint32_t arg = 0, int64_t imm = 0)
{
	return Insn{op, type, field, arg, imm};
}
Insn push(int64_t v) { return I(Op::push_int, 0, 0, 0, v); }
Insn pushf() { return I(Op::push_float, 0, 0, 0, 0x3ff0000000000000); }
Insn ret() { return I(Op::ret); }
uint8_t kinds(StringKind l, StringKind r) { return uint8_t(uint8_t(l) | uint8_t(r) << 4); }

std::string refusal(const Program &p)
{
	std::string why;
	VerifiedInfo info;
	EXPECT_FALSE(verify(p, kEvent, &info, &why));
	return why;
}

TEST(Verifier, AcceptsWellFormedPrograms)
{
	const Program p{{
				I(Op::load_field, TRACERY_TYPE_U32, 0),                                // 0
				push(3),                                                               // 1
				I(Op::gt),                                                             // 2
				I(Op::jump_if_false, 0, 0, 16),                                        // 3
				I(Op::load_field, TRACERY_TYPE_DOUBLE, 1),                             // 4
				I(Op::load_element, TRACERY_TYPE_FLOAT, 4, 9),                         // 5
				I(Op::fadd),                                                           // 6
				I(Op::float_to_bool),                                                  // 7
				I(Op::jump_if_true, 0, 0, 16),                                         // 8
				I(Op::load_field, TRACERY_TYPE_S16, 2),                                // 9
				I(Op::load_element, TRACERY_TYPE_U8, 3, 3),                            // 10
				I(Op::add),                                                            // 11
				I(Op::load_context, 0, 0, uint32_t(ContextField::cpu_id)),             // 12
				I(Op::str_match, kinds(StringKind::field, StringKind::literal), 5, 0), // 13
				I(Op::bor),                                                            // 14
				I(Op::bor),                                                            // 15
				ret(),                                                                 // 16
			},
	                {"a*"}};
	VerifiedInfo info{};
	std::string why;
	ASSERT_TRUE(verify(p, kEvent, &info, &why)) << why;
	EXPECT_EQ(info.max_stack, 3u);
	EXPECT_TRUE(info.uses_context);
	EXPECT_FALSE(info.uses_procname);

	const Program procname{{I(Op::str_match, kinds(StringKind::procname, StringKind::field), 0, 5),
	                        I(Op::load_field, TRACERY_TYPE_BOOL, 7), I(Op::band), ret()},
	                       {}};
	ASSERT_TRUE(verify(procname, kEvent, &info, &why)) << why;
	EXPECT_EQ(info.max_stack, 2u);
	EXPECT_FALSE(info.uses_context);
	EXPECT_TRUE(info.uses_procname);

	// The limits themselves are allowed; info and why may be null.
	Program big;
	for (size_t i = 0; i < kMaxStack; ++i)
		big.code.push_back(push(1));
	for (size_t i = 1; i < kMaxStack; ++i)
		big.code.push_back(I(Op::add));
	while (big.code.size() < kMaxInsns - 1)
		big.code.push_back(I(Op::neg));
	big.code.push_back(ret());
	big.strings.assign(kMaxStrings, std::string(kMaxStringBytes / kMaxStrings, 'x'));
	EXPECT_TRUE(verify(big, kEvent, nullptr, nullptr));
}

TEST(Verifier, RefusesBadLimits)
{
	EXPECT_EQ(refusal(Program{}), "empty program");
	Program p;
	p.code.assign(kMaxInsns, I(Op::neg));
	p.code.front() = push(1);
	p.code.push_back(ret());
	EXPECT_EQ(refusal(p), "program has 4097 instructions (max 4096)");
	p = Program{{push(1), ret()}, std::vector<std::string>(kMaxStrings + 1)};
	EXPECT_EQ(refusal(p), "program has 257 strings (max 256)");
	p = Program{{push(1), ret()}, {std::string(kMaxStringBytes, 'a'), "b"}};
	EXPECT_EQ(refusal(p), "program strings have 4097 bytes (max 4096)");
}

TEST(Verifier, RefusesUnknownOpcodesAndStrayOperands)
{
	EXPECT_EQ(refusal(Program{{push(1), I(Op(200)), ret()}, {}}), "insn 1 (?): unknown opcode 200");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::count_), ret()}, {}}), "insn 1 (?): unknown opcode 42");
	EXPECT_EQ(refusal(Program{{I(Op::push_int, 1, 0, 0, 5), ret()}, {}}),
	          "insn 0 (push_int): unused operand type is 1");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::neg, 0, 2), ret()}, {}}), "insn 1 (neg): unused operand field is 2");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::neg, 0, 0, 3), ret()}, {}}), "insn 1 (neg): unused operand arg is 3");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::neg, 0, 0, 0, -1), ret()}, {}}),
	          "insn 1 (neg): unused operand imm is -1");
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_U32, 0, 1), ret()}, {}}),
	          "insn 0 (load_field): unused operand arg is 1");
	EXPECT_EQ(refusal(Program{{I(Op::load_context, 0, 0, 0, 1), ret()}, {}}),
	          "insn 0 (load_context): unused operand imm is 1");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::ret, 0, 1)}, {}}), "insn 1 (ret): unused operand field is 1");
}

TEST(Verifier, RefusesBadLoads)
{
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_U32, 8), ret()}, {}}),
	          "insn 0 (load_field): field 8 out of range (event has 8 fields)");
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_U64, 0), ret()}, {}}),
	          "insn 0 (load_field): type 3 does not match field 0 (type 2)");
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_ENUM, 2), ret()}, {}}),
	          "insn 0 (load_field): type 11 does not match field 2 (type 5)");
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_U8, 3), ret()}, {}}),
	          "insn 0 (load_field): field 3 is not a scalar or enum field");
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_STRING, 5), ret()}, {}}),
	          "insn 0 (load_field): field 5 is not a scalar or enum field");
	EXPECT_EQ(refusal(Program{{I(Op::load_field, 0, 6), ret()}, {}}),
	          "insn 0 (load_field): field 6 is not a scalar or enum field");
	EXPECT_EQ(refusal(Program{{I(Op::load_element, TRACERY_TYPE_U32, 0), ret()}, {}}),
	          "insn 0 (load_element): field 0 is not an array or sequence");
	EXPECT_EQ(refusal(Program{{I(Op::load_element, TRACERY_TYPE_U8, 3, 4), ret()}, {}}),
	          "insn 0 (load_element): element 4 out of range (array of 4)");
	EXPECT_EQ(refusal(Program{{I(Op::load_element, TRACERY_TYPE_U16, 3, 0), ret()}, {}}),
	          "insn 0 (load_element): type 1 does not match field 3 (type 0)");
	EXPECT_EQ(refusal(Program{{I(Op::load_element, TRACERY_TYPE_DOUBLE, 4, 0), I(Op::float_to_bool), ret()}, {}}),
	          "insn 0 (load_element): type 9 does not match field 4 (type 8)");
	EXPECT_EQ(refusal(Program{{I(Op::load_context, 0, 0, 3), ret()}, {}}),
	          "insn 0 (load_context): context field 3 unknown");
	// Loads push the right kind: a float field cannot be returned.
	EXPECT_EQ(refusal(Program{{I(Op::load_field, TRACERY_TYPE_DOUBLE, 1), ret()}, {}}),
	          "insn 1 (ret): needs one int, stack has float");
}

TEST(Verifier, RefusesBadStringMatches)
{
	const uint8_t fl = kinds(StringKind::field, StringKind::literal);
	EXPECT_EQ(refusal(Program{{I(Op::str_match, fl, 5, 1), ret()}, {"a"}}),
	          "insn 0 (str_match): right literal 1 out of range (1 strings)");
	EXPECT_EQ(refusal(Program{{I(Op::str_match, fl, 0, 0), ret()}, {"a"}}),
	          "insn 0 (str_match): left field 0 is not a string");
	EXPECT_EQ(refusal(Program{{I(Op::str_match, fl, 9, 0), ret()}, {"a"}}),
	          "insn 0 (str_match): field 9 out of range (event has 8 fields)");
	EXPECT_EQ(refusal(Program{{I(Op::str_match, kinds(StringKind::procname, StringKind::literal), 1, 0), ret()},
	                          {"a"}}),
	          "insn 0 (str_match): left procname operand has index 1, not 0");
	EXPECT_EQ(
		refusal(Program{{I(Op::str_match, kinds(StringKind::literal, StringKind::field), 0, 5), ret()}, {"a"}}),
		"insn 0 (str_match): the left operand is a literal (only the right one may be)");
	EXPECT_EQ(refusal(Program{{I(Op::str_match, 0x30, 5, 0), ret()}, {"a"}}),
	          "insn 0 (str_match): right string kind 3 unknown");
	EXPECT_EQ(refusal(Program{{I(Op::str_match, fl, 5, 0, 7), ret()}, {"a"}}),
	          "insn 0 (str_match): unused operand imm is 7");
}

TEST(Verifier, RefusesBadStacks)
{
	EXPECT_EQ(refusal(Program{{push(1), pushf(), I(Op::add), ret()}, {}}),
	          "insn 2 (add): needs two ints, stack has int, float");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::add), ret()}, {}}), "insn 1 (add): needs two ints, stack has int");
	EXPECT_EQ(refusal(Program{{I(Op::neg), ret()}, {}}), "insn 0 (neg): needs one int, stack is empty");
	EXPECT_EQ(refusal(Program{{pushf(), push(1), I(Op::fadd), ret()}, {}}),
	          "insn 2 (fadd): needs two floats, stack has float, int");
	EXPECT_EQ(refusal(Program{{pushf(), I(Op::to_float), ret()}, {}}),
	          "insn 1 (to_float): needs one int, stack has float");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::float_to_bool), ret()}, {}}),
	          "insn 1 (float_to_bool): needs one float, stack has int");
	EXPECT_EQ(refusal(Program{{pushf(), pushf(), I(Op::feq), I(Op::fneg), ret()}, {}}),
	          "insn 3 (fneg): needs one float, stack has int");
	EXPECT_EQ(refusal(Program{{pushf(), I(Op::jump_if_true, 0, 0, 2), ret()}, {}}),
	          "insn 1 (jump_if_true): needs one int, stack has float");
	Program deep;
	for (size_t i = 0; i <= kMaxStack; ++i)
		deep.code.push_back(push(1));
	deep.code.push_back(ret());
	EXPECT_EQ(refusal(deep), "insn 64 (push_int): stack overflow (over 64 slots)");
}

TEST(Verifier, RefusesBadJumps)
{
	EXPECT_EQ(refusal(Program{{push(1), I(Op::jump_if_false, 0, 0, 1), push(1), ret()}, {}}),
	          "insn 1 (jump_if_false): jump target 1 is not forward");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::jump_if_false, 0, 0, 0), push(1), ret()}, {}}),
	          "insn 1 (jump_if_false): jump target 0 is not forward");
	EXPECT_EQ(refusal(Program{{push(1), I(Op::jump_if_false, 0, 0, 4), push(1), ret()}, {}}),
	          "insn 1 (jump_if_false): jump target 4 out of range");
	// Jumping keeps the top: fall-through to ret has one slot fewer.
	EXPECT_EQ(refusal(Program{{push(1), push(1), I(Op::jump_if_true, 0, 0, 3), ret()}, {}}),
	          "insn 3 (ret): stack int on fall-through, int, int from a jump");
	// Two jumps to one target with different stacks.
	EXPECT_EQ(refusal(Program{{push(1), I(Op::jump_if_true, 0, 0, 5), pushf(), push(0),
	                           I(Op::jump_if_false, 0, 0, 5), ret()},
	                          {}}),
	          "insn 4 (jump_if_false): jump to 5 with stack float, int, another edge has int");
	// Same depth, different kinds.
	EXPECT_EQ(refusal(Program{{push(1), push(0), I(Op::jump_if_true, 0, 0, 5), I(Op::to_float), pushf(),
	                           I(Op::float_to_bool), I(Op::to_bool), ret()},
	                          {}}),
	          "insn 5 (float_to_bool): stack float, float on fall-through, int, int from a jump");
}

TEST(Verifier, RefusesBadReturns)
{
	EXPECT_EQ(refusal(Program{{push(1)}, {}}), "insn 0 (push_int): the last instruction must be ret");
	EXPECT_EQ(refusal(Program{{push(1), ret(), push(1), ret()}, {}}),
	          "insn 1 (ret): ret before the last instruction");
	EXPECT_EQ(refusal(Program{{push(1), push(1), ret()}, {}}),
	          "insn 2 (ret): needs exactly one int, stack has int, int");
	EXPECT_EQ(refusal(Program{{ret()}, {}}), "insn 0 (ret): needs exactly one int, stack has empty");
	EXPECT_EQ(refusal(Program{{pushf(), ret()}, {}}), "insn 1 (ret): needs one int, stack has float");
}

} // namespace
} // namespace tracery::filter
