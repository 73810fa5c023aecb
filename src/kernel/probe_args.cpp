// kernel/probe_args.cpp — the texts of dynamic probes (probe_site.hpp):
// the --userspace-probe spec, the --args list of fetch-args, an SDT note's
// operand string translated into fetch-args, and the close names offered
// for a mistyped symbol. Pure functions of their text, bounded; the fuzz
// targets fuzz_probe_args and fuzz_sdt_args run them.
#include "kernel/probe_site.hpp"

#include "kernel/probe_elf.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::kernel {

using probe_detail::cat;

namespace {

constexpr size_t kMaxPathLength = 4096;
constexpr size_t kMaxSymbolLength = 1024;
constexpr size_t kMaxArgName = 31;
constexpr int64_t kMaxFetchOffset = INT32_MAX;

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

bool is_identifier(std::string_view s)
{
	return !s.empty() && is_ident_start(s[0]) && std::all_of(s.begin(), s.end(), is_ident_char);
}

// A linker symbol: C and C++ (mangled) names, GCC's local suffixes
// ("f.cold", "f.constprop.0"), '$' and '@'.
bool is_symbol_name(std::string_view s)
{
	return !s.empty() && s.size() <= kMaxSymbolLength && std::all_of(s.begin(), s.end(), [](char c) {
		return is_ident_char(c) || c == '.' || c == '$' || c == '@';
	});
}

// An unsigned integer, decimal or 0x hex, the whole of `s`.
std::optional<uint64_t> parse_unsigned(std::string_view s)
{
	int base = 10;
	if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s.remove_prefix(2);
		base = 16;
	}
	uint64_t v = 0;
	if (s.empty() || !std::all_of(s.begin(), s.end(), [&](char c) {
		    return (c >= '0' && c <= '9') || (base == 16 && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
	    }))
		return std::nullopt;
	const auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
	if (r.ec != std::errc{} || r.ptr != s.data() + s.size())
		return std::nullopt;
	return v;
}

// A signed integer (optional '-' or '+'), decimal or 0x hex, |v| <= limit.
std::optional<int64_t> parse_signed(std::string_view s, int64_t limit)
{
	bool negative = false;
	if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
		negative = s[0] == '-';
		s.remove_prefix(1);
	}
	const auto v = parse_unsigned(s);
	if (!v || *v > static_cast<uint64_t>(limit))
		return std::nullopt;
	return negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

[[noreturn]] void bad_spec(std::string_view text, const std::string &why)
{
	std::string m("bad --userspace-probe '");
	for (char c : text.substr(0, 200)) // control characters shown as '?'
		m += static_cast<unsigned char>(c) < ' ' || c == 0x7f ? '?' : c;
	m += "': ";
	m += why;
	m += "; expected elf:PATH:SYMBOL[+OFFSET], elf:PATH:SYMBOL%return or sdt:PATH:PROVIDER:NAME";
	throw ProbeError(m);
}

} // namespace

ProbeSpec parse_probe_spec(std::string_view text)
{
	if (text.size() > kMaxPathLength + kMaxSymbolLength + 64)
		bad_spec(text, "too long");
	if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) <= ' '; }))
		bad_spec(text, "spaces or control characters");
	ProbeSpec spec;
	std::string_view rest;
	if (text.starts_with("elf:")) {
		rest = text.substr(4);
		const size_t colon = rest.rfind(':');
		if (colon == std::string_view::npos)
			bad_spec(text, "no ':' before the symbol");
		spec.path = std::string(rest.substr(0, colon));
		std::string_view sym = rest.substr(colon + 1);
		spec.kind = ProbeSpec::Kind::function;
		if (sym.ends_with("%return")) {
			spec.kind = ProbeSpec::Kind::function_return;
			sym.remove_suffix(7);
		} else if (const size_t plus = sym.find('+'); plus != std::string_view::npos) {
			const auto off = parse_unsigned(sym.substr(plus + 1));
			if (!off || *off > kMaxFetchOffset)
				bad_spec(text, "the offset after '+' is not a number (decimal or 0x hex) below 2^31");
			spec.symbol_offset = *off;
			sym = sym.substr(0, plus);
		}
		if (!is_symbol_name(sym))
			bad_spec(text, "the symbol is empty or not a symbol name");
		spec.symbol = std::string(sym);
	} else if (text.starts_with("sdt:")) {
		rest = text.substr(4);
		const size_t c2 = rest.rfind(':');
		const size_t c1 =
			c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : rest.rfind(':', c2 - 1);
		if (c1 == std::string_view::npos)
			bad_spec(text, "an SDT probe needs PATH:PROVIDER:NAME");
		spec.kind = ProbeSpec::Kind::sdt;
		spec.path = std::string(rest.substr(0, c1));
		spec.provider = std::string(rest.substr(c1 + 1, c2 - c1 - 1));
		spec.name = std::string(rest.substr(c2 + 1));
		if (!is_identifier(spec.provider) || !is_identifier(spec.name) ||
		    spec.provider.size() + spec.name.size() > kMaxSymbolLength)
			bad_spec(text, "PROVIDER and NAME must be C identifiers");
	} else {
		bad_spec(text, "it starts with neither 'elf:' nor 'sdt:'");
	}
	if (spec.path.empty())
		bad_spec(text, "the path is empty");
	if (spec.path.size() > kMaxPathLength)
		bad_spec(text, "the path is too long");
	return spec;
}

// ---- --args -------------------------------------------------------------

namespace {

// The registers uprobes fetch on x86-64 (the kernel's names).
constexpr std::array<std::string_view, 18> kRegisters = {"ax", "bx",  "cx",  "dx",  "si",  "di",  "bp",  "sp", "r8",
                                                         "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ip", "flags"};

bool is_register(std::string_view s) { return std::find(kRegisters.begin(), kRegisters.end(), s) != kRegisters.end(); }

bool is_type(std::string_view t)
{
	if (t == "string")
		return true;
	if (t.size() < 2 || (t[0] != 's' && t[0] != 'u' && t[0] != 'x'))
		return false;
	const std::string_view bits = t.substr(1);
	return bits == "8" || bits == "16" || bits == "32" || bits == "64";
}

class ArgsParser {
public:
	explicit ArgsParser(std::string_view text) : text_(text) {}

	std::vector<ProbeArg> parse()
	{
		if (text_.size() > kMaxUserArgsLength)
			fail(kMaxUserArgsLength, cat("longer than ", std::to_string(kMaxUserArgsLength), " bytes"));
		if (text_.empty())
			fail(0, "empty: give name=FETCH:TYPE[,...]");
		std::vector<ProbeArg> out;
		std::set<std::string, std::less<>> names;
		for (;;) {
			if (out.size() == kMaxProbeArgs)
				fail(pos_, cat("more than ", std::to_string(kMaxProbeArgs), " arguments"));
			out.push_back(one(names));
			if (pos_ == text_.size())
				return out;
			if (text_[pos_] != ',')
				fail(pos_, "expected ',' or the end after the type");
			++pos_;
		}
	}

private:
	[[noreturn]] void fail(size_t position, const std::string &why) const
	{
		std::string m("bad --args: ");
		m += why;
		m += "\n  ";
		for (char c : text_)
			m += static_cast<unsigned char>(c) < ' ' || c == 0x7f ? ' ' : c;
		m += "\n  ";
		m.append(std::min(position, text_.size()), ' ');
		m += '^';
		throw ProbeError(m, std::min(position, text_.size()));
	}

	char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

	size_t span_of(bool (*pred)(char)) const
	{
		size_t e = pos_;
		while (e < text_.size() && pred(text_[e]))
			++e;
		return e - pos_;
	}

	ProbeArg one(std::set<std::string, std::less<>> &names)
	{
		ProbeArg arg;
		const size_t name_at = pos_;
		const size_t n = span_of(is_ident_char);
		const std::string_view name = text_.substr(pos_, n);
		if (!is_identifier(name))
			fail(name_at, "expected an argument name (a C identifier)");
		if (name.size() > kMaxArgName)
			fail(name_at, cat("a name longer than ", std::to_string(kMaxArgName), " characters"));
		if (name.starts_with("common_") || name.starts_with("__probe"))
			fail(name_at, "names common_* and __probe* are the kernel's own fields");
		if (!names.insert(std::string(name)).second)
			fail(name_at, cat("a second argument named '", name, "'"));
		arg.name = std::string(name);
		pos_ += n;
		if (peek() != '=')
			fail(pos_, "expected '=' after the name");
		++pos_;
		const size_t fetch_at = pos_;
		const bool deref = fetch(0);
		arg.fetch = std::string(text_.substr(fetch_at, pos_ - fetch_at));
		if (peek() != ':')
			fail(pos_, "expected ':TYPE' after the fetch-arg");
		++pos_;
		const size_t type_at = pos_;
		arg.type = std::string(text_.substr(pos_, span_of(is_ident_char)));
		if (!is_type(arg.type))
			fail(type_at, "expected a type: s8 s16 s32 s64 u8 u16 u32 u64 x8 x16 x32 x64 or string");
		if (arg.type == "string" && !deref)
			fail(fetch_at, "a string is read from memory: write +0(FETCH):string");
		pos_ += arg.type.size();
		return arg;
	}

	static bool is_word_char(char c) { return is_ident_char(c); }
	static bool is_number_char(char c) { return is_ident_char(c); } // digits, x, hex letters: checked after

	// One fetch-arg from pos_; true when it is a dereference.
	bool fetch(size_t depth)
	{
		const size_t at = pos_;
		switch (peek()) {
		case '%': {
			++pos_;
			const std::string_view reg = text_.substr(pos_, span_of(is_word_char));
			if (!is_register(reg))
				fail(at, "unknown register: the uprobe names are %ax %bx %cx %dx %si %di %bp %sp "
				         "%r8..%r15 %ip %flags");
			pos_ += reg.size();
			return false;
		}
		case '$': {
			++pos_;
			const std::string_view word = text_.substr(pos_, span_of(is_word_char));
			const auto numbered = [&](std::string_view prefix, size_t max_digits) {
				return word.starts_with(prefix) && word.size() > prefix.size() &&
				       word.size() <= prefix.size() + max_digits &&
				       std::all_of(word.begin() + prefix.size(), word.end(),
				                   [](char c) { return c >= '0' && c <= '9'; });
			};
			if (word != "retval" && word != "stack" && !numbered("stack", 3) && !numbered("arg", 2))
				fail(at, "expected $retval, $stack, $stackN or (SDT probes) $argN");
			pos_ += word.size();
			return false;
		}
		case '\\': {
			++pos_;
			const size_t start = pos_;
			if (peek() == '-')
				++pos_;
			pos_ += span_of(is_number_char);
			if (!parse_signed(text_.substr(start, pos_ - start), INT64_MAX))
				fail(at, "expected a constant \\N (decimal or 0x hex)");
			return false;
		}
		case '+':
		case '-': {
			if (depth >= kMaxDerefDepth)
				fail(at, cat("dereferences nested deeper than ", std::to_string(kMaxDerefDepth)));
			++pos_;
			const size_t off_at = pos_;
			pos_ += span_of(is_number_char);
			if (!parse_signed(text_.substr(off_at, pos_ - off_at), kMaxFetchOffset))
				fail(off_at, "expected an offset (decimal or 0x hex, below 2^31)");
			if (peek() != '(')
				fail(pos_, "expected '(' after the offset");
			++pos_;
			fetch(depth + 1);
			if (peek() != ')')
				fail(pos_, "expected ')'");
			++pos_;
			return true;
		}
		default:
			fail(at, "expected %REG, $retval, $stackN, $argN, \\N or +OFF(FETCH)");
		}
	}

	std::string_view text_;
	size_t pos_ = 0;
};

} // namespace

std::vector<ProbeArg> parse_user_args(std::string_view spec) { return ArgsParser(spec).parse(); }

std::string args_text(const std::vector<ProbeArg> &args, char separator)
{
	std::string out;
	for (const ProbeArg &a : args) {
		if (!out.empty())
			out += separator;
		out += cat(a.name, "=", a.fetch, ":", a.type);
	}
	return out;
}

// ---- SDT operands ---------------------------------------------------------

namespace {

struct X86Register {
	std::string_view name; // as the assembler writes it, without '%'
	std::string_view uprobe;
	bool full; // 64 bits: usable as an address base
};

// clang-format off
constexpr X86Register kX86Registers[] = {
	{"rax", "ax", true}, {"rbx", "bx", true}, {"rcx", "cx", true}, {"rdx", "dx", true},
	{"rsi", "si", true}, {"rdi", "di", true}, {"rbp", "bp", true}, {"rsp", "sp", true},
	{"eax", "ax", false}, {"ebx", "bx", false}, {"ecx", "cx", false}, {"edx", "dx", false},
	{"esi", "si", false}, {"edi", "di", false}, {"ebp", "bp", false}, {"esp", "sp", false},
	{"ax", "ax", false}, {"bx", "bx", false}, {"cx", "cx", false}, {"dx", "dx", false},
	{"si", "si", false}, {"di", "di", false}, {"bp", "bp", false}, {"sp", "sp", false},
	{"al", "ax", false}, {"bl", "bx", false}, {"cl", "cx", false}, {"dl", "dx", false},
	{"sil", "si", false}, {"dil", "di", false}, {"bpl", "bp", false}, {"spl", "sp", false},
};
// clang-format on

// The uprobe name of an assembler register name, "" if none; *full says
// whether it is a 64-bit register.
std::string x86_register(std::string_view name, bool *full)
{
	*full = false;
	for (const X86Register &r : kX86Registers)
		if (r.name == name) {
			*full = r.full;
			return std::string(r.uprobe);
		}
	// %r8..%r15 and their d/w/b (or l) parts.
	if (name.size() >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
		size_t digits = 1;
		while (digits + 1 < name.size() && name[digits + 1] >= '0' && name[digits + 1] <= '9')
			++digits;
		const std::string_view number = name.substr(1, digits);
		const std::string_view suffix = name.substr(1 + digits);
		const auto n = parse_unsigned(number);
		if (!n || *n < 8 || *n > 15 || number[0] == '0')
			return "";
		if (suffix.empty()) {
			*full = true;
			return std::string(name);
		}
		if (suffix == "d" || suffix == "w" || suffix == "b" || suffix == "l")
			return std::string(name.substr(0, 1 + digits));
	}
	return "";
}

// One operand (after SIZE@) as a fetch-arg, or "" with *why set.
std::string sdt_fetch(std::string_view op, std::string *why)
{
	if (op.empty()) {
		*why = "an empty operand";
		return "";
	}
	if (op[0] == '%') {
		const size_t colon = op.find(':');
		if (colon != std::string_view::npos) {
			*why = "a segment prefix (thread-local memory)";
			return "";
		}
		bool full = false;
		const std::string reg = x86_register(op.substr(1), &full);
		if (op == "%rip") {
			*why = "the instruction pointer";
			return "";
		}
		if (reg.empty()) {
			*why = "a register uprobes cannot read";
			return "";
		}
		return cat("%", reg);
	}
	if (op[0] == '$') {
		const auto v = parse_signed(op.substr(1), INT64_MAX);
		if (!v) {
			*why = "a constant that is not a number (a symbol's address)";
			return "";
		}
		return cat("\\", std::to_string(*v));
	}
	const size_t open = op.find('(');
	if (open == std::string_view::npos) {
		*why = "an absolute address or a symbol";
		return "";
	}
	if (op.back() != ')') {
		*why = "a memory operand not ending in ')'";
		return "";
	}
	const std::string_view disp = op.substr(0, open);
	const std::string_view base = op.substr(open + 1, op.size() - open - 2);
	if (base.find(',') != std::string_view::npos) {
		*why = "an index register";
		return "";
	}
	if (base == "%rip" || base == "%eip") {
		*why = "an address relative to %rip (a global variable)";
		return "";
	}
	if (disp.find(':') != std::string_view::npos) {
		*why = "a segment prefix (thread-local memory)";
		return "";
	}
	bool full = false;
	const std::string reg = base.starts_with('%') ? x86_register(base.substr(1), &full) : std::string();
	if (reg.empty() || !full) {
		*why = "a base that is not a 64-bit register";
		return "";
	}
	int64_t d = 0;
	if (!disp.empty()) {
		const auto v = parse_signed(disp, kMaxFetchOffset);
		if (!v) {
			*why = "a displacement that is not a number below 2^31 (a symbol)";
			return "";
		}
		d = *v;
	}
	std::string f(d < 0 ? "-" : "+");
	f += std::to_string(d < 0 ? -d : d);
	f += "(%";
	f += reg;
	f += ')';
	return f;
}

} // namespace

SdtArgs parse_sdt_operands(std::string_view operands)
{
	SdtArgs out;
	size_t index = 0;
	size_t pos = 0;
	const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
	while (pos < operands.size()) {
		if (space(operands[pos])) {
			++pos;
			continue;
		}
		size_t end = pos;
		while (end < operands.size() && !space(operands[end]))
			++end;
		const std::string_view token = operands.substr(pos, end - pos);
		pos = end;
		++index;
		if (index > kMaxSdtOperands) {
			out.notes.push_back(
				cat("operands after the ", std::to_string(kMaxSdtOperands), "th: not recorded"));
			break;
		}
		const std::string name = cat("arg", std::to_string(index));
		const std::string shown(token.substr(0, 64));
		auto skip = [&](const std::string &why) {
			std::string note(name);
			note += " (";
			note += shown;
			note += "): ";
			note += why;
			note += ", not recorded";
			out.notes.push_back(std::move(note));
		};
		const size_t at = token.find('@');
		const auto size = at == std::string_view::npos ? std::nullopt : parse_signed(token.substr(0, at), 8);
		if (!size || (*size != 1 && *size != -1 && *size != 2 && *size != -2 && *size != 4 && *size != -4 &&
		              *size != 8 && *size != -8)) {
			skip("no size of 1, 2, 4 or 8 bytes before '@'");
			continue;
		}
		std::string why;
		std::string fetch = sdt_fetch(token.substr(at + 1), &why);
		if (fetch.empty()) {
			skip(why);
			continue;
		}
		const bool is_signed = *size < 0;
		const std::string bits = std::to_string((is_signed ? -*size : *size) * 8);
		ProbeArg arg;
		arg.name = name;
		arg.fetch = std::move(fetch);
		arg.type = cat(is_signed ? "s" : "u", bits);
		arg.c_type = cat(is_signed ? "int" : "uint", bits, "_t");
		out.args.push_back(std::move(arg));
	}
	return out;
}

// ---- close names -----------------------------------------------------------

std::vector<std::string> close_names(std::string_view wanted, const std::vector<std::string> &candidates, size_t count)
{
	constexpr size_t kMaxCompared = 128; // longer names are compared by their first 128 bytes
	const std::string_view w = wanted.substr(0, kMaxCompared);
	const size_t limit = std::clamp<size_t>(w.size() / 3, 1, 3);
	struct Scored {
		size_t score;
		const std::string *name;
	};
	std::vector<Scored> scored;
	std::vector<size_t> row(w.size() + 1), prev(w.size() + 1);
	for (const std::string &c : candidates) {
		if (c == wanted)
			continue;
		const std::string_view s = std::string_view(c).substr(0, kMaxCompared);
		size_t score = SIZE_MAX;
		if (s.size() + limit >= w.size() && w.size() + limit >= s.size()) {
			// Levenshtein distance, two rows.
			for (size_t j = 0; j <= w.size(); ++j)
				prev[j] = j;
			for (size_t i = 1; i <= s.size(); ++i) {
				row[0] = i;
				for (size_t j = 1; j <= w.size(); ++j)
					row[j] = std::min(
						{prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (s[i - 1] != w[j - 1])});
				std::swap(row, prev);
			}
			if (prev[w.size()] <= limit)
				score = prev[w.size()];
		}
		// Else one holding the other ("ret_enum" for "pt_ret_enum").
		if (score == SIZE_MAX && w.size() >= 4 && s.size() >= 4 &&
		    (s.find(w) != std::string_view::npos || w.find(s) != std::string_view::npos))
			score = limit + 1 + (s.size() > w.size() ? s.size() - w.size() : w.size() - s.size());
		if (score != SIZE_MAX)
			scored.push_back({score, &c});
	}
	std::stable_sort(scored.begin(), scored.end(), [](const Scored &a, const Scored &b) {
		return a.score != b.score ? a.score < b.score : *a.name < *b.name;
	});
	std::vector<std::string> out;
	for (const Scored &s : scored) {
		if (out.size() == count)
			break;
		if (std::find(out.begin(), out.end(), *s.name) == out.end())
			out.push_back(*s.name);
	}
	return out;
}

} // namespace tracery::kernel
