// filter/bytecode.cpp — the wire form of a filter program (encode/decode) and
// opcode names; see bytecode.hpp for the format.
#include "filter/bytecode.hpp"

#include "base/byte_order.hpp"

namespace tracery::filter {

namespace {

using base::load_le;
using base::store_le;

constexpr char kMagic[4] = {'T', 'R', 'F', 'B'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderSize = 4 + 2 + 4 + 4;
constexpr size_t kInsnSize = 16;

constexpr const char *kOpNames[] = {
	"push_int",
	"push_float",
	"load_field",
	"load_element",
	"load_context",
	"str_match",
	"add",
	"sub",
	"mul",
	"div",
	"mod",
	"shl",
	"shr",
	"band",
	"bor",
	"bxor",
	"neg",
	"bnot",
	"lnot",
	"eq",
	"ne",
	"lt",
	"le",
	"gt",
	"ge",
	"fadd",
	"fsub",
	"fmul",
	"fdiv",
	"fneg",
	"feq",
	"fne",
	"flt",
	"fle",
	"fgt",
	"fge",
	"to_float",
	"to_bool",
	"float_to_bool",
	"jump_if_false",
	"jump_if_true",
	"ret",
};
static_assert(std::size(kOpNames) == static_cast<size_t>(Op::count_));

template <class T>
void append_le(std::string &out, T v)
{
	uint8_t b[sizeof v];
	store_le(b, v);
	out.append(reinterpret_cast<const char *>(b), sizeof b);
}

bool fail(std::string *why, std::string reason)
{
	if (why)
		*why = std::move(reason);
	return false;
}

} // namespace

std::string encode(const Program &program)
{
	std::string out(kMagic, sizeof kMagic);
	append_le(out, kVersion);
	append_le(out, static_cast<uint32_t>(program.code.size()));
	append_le(out, static_cast<uint32_t>(program.strings.size()));
	for (const Insn &insn : program.code) {
		append_le(out, static_cast<uint8_t>(insn.op));
		append_le(out, insn.type);
		append_le(out, insn.field);
		append_le(out, insn.arg);
		append_le(out, insn.imm);
	}
	for (const std::string &s : program.strings) {
		append_le(out, static_cast<uint32_t>(s.size()));
		out += s;
	}
	return out;
}

bool decode(std::string_view bytes, Program &program, std::string *why)
{
	const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
	const uint8_t *end = p + bytes.size();
	if (bytes.size() < kHeaderSize)
		return fail(why, "truncated header");
	if (bytes.substr(0, sizeof kMagic) != std::string_view(kMagic, sizeof kMagic))
		return fail(why, "bad magic (not a filter program)");
	if (const uint16_t version = load_le<uint16_t>(p + 4); version != kVersion)
		return fail(why, "unsupported version " + std::to_string(version));
	const uint32_t nr_insns = load_le<uint32_t>(p + 6);
	const uint32_t nr_strings = load_le<uint32_t>(p + 10);
	if (nr_insns > kMaxInsns)
		return fail(why, std::to_string(nr_insns) + " instructions (limit " + std::to_string(kMaxInsns) + ")");
	if (nr_strings > kMaxStrings)
		return fail(why, std::to_string(nr_strings) + " strings (limit " + std::to_string(kMaxStrings) + ")");
	p += kHeaderSize;
	if (static_cast<size_t>(end - p) < size_t{nr_insns} * kInsnSize)
		return fail(why, "truncated instructions");

	Program out;
	out.code.resize(nr_insns);
	for (Insn &insn : out.code) {
		insn.op = static_cast<Op>(p[0]);
		insn.type = p[1];
		insn.field = load_le<uint16_t>(p + 2);
		insn.arg = load_le<uint32_t>(p + 4);
		insn.imm = load_le<int64_t>(p + 8);
		p += kInsnSize;
	}
	size_t string_bytes = 0;
	out.strings.resize(nr_strings);
	for (std::string &s : out.strings) {
		if (end - p < 4)
			return fail(why, "truncated string length");
		const uint32_t len = load_le<uint32_t>(p);
		p += 4;
		if (len > kMaxStringBytes - string_bytes)
			return fail(why, "strings over " + std::to_string(kMaxStringBytes) + " bytes");
		if (static_cast<size_t>(end - p) < len)
			return fail(why, "truncated string");
		s.assign(reinterpret_cast<const char *>(p), len);
		string_bytes += len;
		p += len;
	}
	if (p != end)
		return fail(why, std::to_string(end - p) + " trailing bytes");
	program = std::move(out);
	return true;
}

const char *op_name(Op op)
{
	const auto i = static_cast<size_t>(op);
	return i < std::size(kOpNames) ? kOpNames[i] : "?";
}

} // namespace tracery::filter
