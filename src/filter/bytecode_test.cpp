// filter/bytecode_test.cpp — the wire form of filter programs (encode/decode)
// and opcode names.
#include <gtest/gtest.h>

#include <bit>
#include <set>

#include "filter/bytecode.hpp"

namespace tracery::filter {
namespace {

Program sample()
{
	Program p;
	p.code = {
		{Op::load_field, 3, 1, 0, 0},   {Op::push_float, 0, 0, 0, std::bit_cast<int64_t>(-2.5)},
		{Op::str_match, 0x20, 5, 1, 0}, {Op::jump_if_false, 0, 0, 0x01020304, 0},
		{Op::push_int, 0, 0, 0, -2},    {Op::ret, 0, 0, 0, 0},
	};
	p.strings = {"/usr/*", std::string("a\0b", 3)};
	return p;
}

// Program::operator== does not compile (Insn has no operator==): programs
// are equal when their encodings are.
std::string bytes(const Program &p) { return encode(p); }

std::string header(uint16_t version, uint32_t insns, uint32_t strings)
{
	std::string h = "TRFB";
	h += static_cast<char>(version & 0xff);
	h += static_cast<char>(version >> 8);
	for (const uint32_t v : {insns, strings})
		for (int i = 0; i < 4; ++i)
			h += static_cast<char>((v >> (8 * i)) & 0xff);
	return h;
}

std::string decode_error(std::string_view bytes)
{
	Program p;
	std::string why;
	EXPECT_FALSE(decode(bytes, p, &why));
	return why;
}

TEST(FilterBytecode, EncodesLittleEndian)
{
	Program p;
	p.code = {{Op::push_int, 0x11, 0x2233, 0x44556677, 0x0102030405060708}};
	p.strings = {"ab"};
	const std::string expected = header(1, 1, 1) +
	                             std::string("\x00\x11\x33\x22\x77\x66\x55\x44"
	                                         "\x08\x07\x06\x05\x04\x03\x02\x01",
	                                         16) +
	                             std::string("\x02\x00\x00\x00"
	                                         "ab",
	                                         6);
	EXPECT_EQ(encode(p), expected);
}

TEST(FilterBytecode, RoundTrips)
{
	const Program p = sample();
	Program q;
	std::string why;
	ASSERT_TRUE(decode(encode(p), q, &why)) << why;
	EXPECT_EQ(bytes(q), bytes(p));

	const Program empty;
	ASSERT_TRUE(decode(encode(empty), q, &why)) << why;
	EXPECT_EQ(bytes(q), bytes(empty));
}

TEST(FilterBytecode, RefusesMalformedInput)
{
	const std::string good = encode(sample());
	EXPECT_EQ(decode_error(""), "truncated header");
	EXPECT_EQ(decode_error(good.substr(0, 13)), "truncated header");
	EXPECT_EQ(decode_error("XRFB" + good.substr(4)), "bad magic (not a filter program)");
	EXPECT_EQ(decode_error(header(2, 0, 0)), "unsupported version 2");
	EXPECT_EQ(decode_error(header(1, kMaxInsns + 1, 0)), "4097 instructions (limit 4096)");
	EXPECT_EQ(decode_error(header(1, 0, kMaxStrings + 1)), "257 strings (limit 256)");
	EXPECT_EQ(decode_error(header(1, 1, 0) + std::string(15, '\0')), "truncated instructions");
	EXPECT_EQ(decode_error(header(1, 0, 1) + "\x01"), "truncated string length");
	EXPECT_EQ(decode_error(header(1, 0, 1) + std::string("\x03\0\0\0ab", 6)), "truncated string");
	EXPECT_EQ(decode_error(good + "x"), "1 trailing bytes");
	EXPECT_EQ(decode_error(good.substr(0, good.size() - 1)), "truncated string");

	// String bytes are limited in total.
	Program big;
	big.strings = {std::string(kMaxStringBytes, 'a')};
	Program q;
	EXPECT_TRUE(decode(encode(big), q, nullptr));
	big.strings.push_back("b");
	EXPECT_EQ(decode_error(encode(big)), "strings over 4096 bytes");
}

TEST(FilterBytecode, FailedDecodeLeavesTheProgram)
{
	Program p = sample();
	EXPECT_FALSE(decode("nope", p, nullptr));
	EXPECT_EQ(bytes(p), bytes(sample()));
}

TEST(FilterBytecode, OpNames)
{
	EXPECT_STREQ(op_name(Op::push_int), "push_int");
	EXPECT_STREQ(op_name(Op::load_element), "load_element");
	EXPECT_STREQ(op_name(Op::float_to_bool), "float_to_bool");
	EXPECT_STREQ(op_name(Op::ret), "ret");
	EXPECT_STREQ(op_name(Op::count_), "?");
	EXPECT_STREQ(op_name(static_cast<Op>(255)), "?");
	std::set<std::string> names;
	for (unsigned i = 0; i < static_cast<unsigned>(Op::count_); ++i)
		names.insert(op_name(static_cast<Op>(i)));
	EXPECT_EQ(names.size(), static_cast<size_t>(Op::count_));
	EXPECT_EQ(names.count("?"), 0u);
}

} // namespace
} // namespace tracery::filter
