// ctf/reader/tsdl_parser.cpp — TSDL lexer and recursive-descent parser, and
// the metadata file reader (see tsdl_parser.hpp).
#include "ctf/reader/tsdl_parser.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "base/fd.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/tsdl_keywords.hpp"

namespace tracery::ctf::reader {

namespace {

enum class Tok : uint8_t { end, ident, integer, string, punct };

struct Token {
	Tok kind = Tok::end;
	std::string text; // identifier, decoded string, punctuation
	uint64_t value = 0;
	size_t offset = 0;
	size_t line = 1;
};

class Lexer {
public:
	explicit Lexer(std::string_view s) : s_(s) {}

	Token next()
	{
		skip_space();
		Token t;
		t.offset = pos_;
		t.line = line_;
		if (pos_ >= s_.size())
			return t;
		const char c = s_[pos_];
		if (is_ident_start(c)) {
			size_t b = pos_;
			while (pos_ < s_.size() && is_ident(s_[pos_]))
				++pos_;
			t.kind = Tok::ident;
			t.text = std::string(s_.substr(b, pos_ - b));
		} else if (c >= '0' && c <= '9') {
			lex_integer(t);
		} else if (c == '"') {
			lex_string(t);
		} else {
			t.kind = Tok::punct;
			static constexpr std::string_view kMulti[] = {":=", "..."};
			for (std::string_view m : kMulti)
				if (s_.substr(pos_, m.size()) == m) {
					t.text = std::string(m);
					pos_ += m.size();
					return t;
				}
			if (!std::strchr("{}()[];,=:<>.-+*", c))
				throw TsdlError(line_, pos_,
				                std::string("unexpected character '") + printable(c) + "'");
			t.text = std::string(1, c);
			++pos_;
		}
		return t;
	}

private:
	static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
	static bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
	static std::string printable(char c)
	{
		if (c >= 0x20 && c < 0x7f)
			return std::string(1, c);
		char buf[8];
		snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
		return buf;
	}

	void skip_space()
	{
		while (pos_ < s_.size()) {
			const char c = s_[pos_];
			if (c == '\n') {
				++line_;
				++pos_;
			} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\0') {
				++pos_;
			} else if (s_.substr(pos_, 2) == "/*") {
				const size_t start = pos_, start_line = line_;
				pos_ += 2;
				while (pos_ < s_.size() && s_.substr(pos_, 2) != "*/") {
					if (s_[pos_] == '\n')
						++line_;
					++pos_;
				}
				if (pos_ >= s_.size())
					throw TsdlError(start_line, start, "comment not closed");
				pos_ += 2;
			} else if (s_.substr(pos_, 2) == "//") {
				while (pos_ < s_.size() && s_[pos_] != '\n')
					++pos_;
			} else {
				break;
			}
		}
	}

	void lex_integer(Token &t)
	{
		t.kind = Tok::integer;
		unsigned radix = 10;
		if (s_[pos_] == '0' && pos_ + 1 < s_.size() && (s_[pos_ + 1] == 'x' || s_[pos_ + 1] == 'X')) {
			radix = 16;
			pos_ += 2;
		} else if (s_[pos_] == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '7') {
			radix = 8;
			++pos_;
		}
		uint64_t v = 0;
		size_t digits = 0;
		while (pos_ < s_.size()) {
			const char c = s_[pos_];
			unsigned d;
			if (c >= '0' && c <= '9')
				d = static_cast<unsigned>(c - '0');
			else if (c >= 'a' && c <= 'f')
				d = static_cast<unsigned>(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				d = static_cast<unsigned>(c - 'A' + 10);
			else
				break;
			if (d >= radix)
				throw TsdlError(line_, pos_, "bad digit in a number");
			if (v > (UINT64_MAX - d) / radix)
				throw TsdlError(line_, t.offset, "number out of range (more than 64 bits)");
			v = v * radix + d;
			++pos_;
			++digits;
		}
		if (radix == 16 && digits == 0)
			throw TsdlError(line_, t.offset, "0x without digits");
		while (pos_ < s_.size() && (s_[pos_] == 'u' || s_[pos_] == 'U' || s_[pos_] == 'l' || s_[pos_] == 'L'))
			++pos_;
		if (pos_ < s_.size() && is_ident(s_[pos_]))
			throw TsdlError(line_, pos_, "bad character in a number");
		t.value = v;
	}

	void lex_string(Token &t)
	{
		t.kind = Tok::string;
		const size_t start = pos_;
		++pos_;
		while (true) {
			if (pos_ >= s_.size() || s_[pos_] == '\n')
				throw TsdlError(line_, start, "string literal not closed");
			const char c = s_[pos_++];
			if (c == '"')
				break;
			if (c != '\\') {
				t.text += c;
				continue;
			}
			if (pos_ >= s_.size())
				throw TsdlError(line_, start, "string literal not closed");
			const char e = s_[pos_++];
			static constexpr char kEscapes[][2] = {{'n', '\n'}, {'t', '\t'}, {'r', '\r'}, {'a', '\a'},
			                                       {'b', '\b'}, {'f', '\f'}, {'v', '\v'}};
			bool simple = false;
			for (const auto &m : kEscapes)
				if (e == m[0]) {
					t.text += m[1];
					simple = true;
				}
			if (simple)
				continue;
			switch (e) {
			case 'x': {
				unsigned v = 0, n = 0;
				while (n < 2 && pos_ < s_.size() && isxdigit(static_cast<unsigned char>(s_[pos_]))) {
					const char h = s_[pos_++];
					v = v * 16 + static_cast<unsigned>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
					++n;
				}
				if (n == 0)
					throw TsdlError(line_, pos_, "\\x without hex digits");
				t.text += static_cast<char>(v);
				break;
			}
			default:
				if (e >= '0' && e <= '7') {
					unsigned v = static_cast<unsigned>(e - '0'), n = 1;
					while (n < 3 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7') {
						v = v * 8 + static_cast<unsigned>(s_[pos_++] - '0');
						++n;
					}
					t.text += static_cast<char>(v & 0xff);
				} else {
					t.text += e; // \" \\ \' \? and anything else: the character
				}
			}
		}
	}

	std::string_view s_;
	size_t pos_ = 0;
	size_t line_ = 1;
};

// A declared name, one of: a typealias/typedef, "struct N", "variant N", "enum N".
using Names = std::map<std::string, TypePtr, std::less<>>;

class Parser {
public:
	explicit Parser(std::string_view text) : lex_(text) { advance(); }

	TraceClass run()
	{
		scopes_.emplace_back();
		while (tok_.kind != Tok::end)
			top_level();
		attach_events();
		return std::move(out_);
	}

private:
	// --- tokens ---
	void advance() { tok_ = has_peek_ ? take_peek() : lex_.next(); }
	Token take_peek()
	{
		has_peek_ = false;
		Token t = std::move(peek_);
		peek_ = Token{};
		return t;
	}
	const Token &peek()
	{
		if (!has_peek_) {
			peek_ = lex_.next();
			has_peek_ = true;
		}
		return peek_;
	}
	[[noreturn]] void fail(const std::string &what) const { throw TsdlError(tok_.line, tok_.offset, what); }
	// What is ignored is said, once, where it stands; bounded like the text.
	void warn(size_t line, size_t offset, std::string what)
	{
		if (out_.warnings.size() < kMaxMetadataWarnings)
			out_.warnings.push_back({line, offset, std::move(what)});
	}
	// KEY = value; of a type or block this reader does not know: said, skipped.
	void ignore_attribute(const Token &key, const std::string &name, const char *in)
	{
		warn(key.line, key.offset, "unknown attribute '" + name + "' in " + in + ", ignored");
		skip_value();
	}
	// KEY := type; in a block where KEY means nothing (the type is parsed).
	void ignore_type(const std::string &name, const char *in)
	{
		warn(block_key_.line, block_key_.offset, "unknown type '" + name + "' in " + in + ", ignored");
	}
	std::string describe() const
	{
		switch (tok_.kind) {
		case Tok::end:
			return "the end of the metadata";
		case Tok::integer:
			return "number " + std::to_string(tok_.value);
		case Tok::string:
			return "a string";
		default:
			return "'" + tok_.text + "'";
		}
	}
	bool is(const char *p) const { return (tok_.kind == Tok::punct || tok_.kind == Tok::ident) && tok_.text == p; }
	bool accept(const char *p)
	{
		if (!is(p))
			return false;
		advance();
		return true;
	}
	void expect(const char *p)
	{
		if (!accept(p))
			fail(std::string("expected '") + p + "', found " + describe());
	}
	std::string ident()
	{
		if (tok_.kind != Tok::ident)
			fail("expected a name, found " + describe());
		std::string s = std::move(tok_.text);
		advance();
		return s;
	}

	struct Depth {
		explicit Depth(Parser &p) : p_(p)
		{
			if (++p_.depth_ > kMaxTsdlDepth)
				p_.fail("nesting deeper than " + std::to_string(kMaxTsdlDepth) + " levels");
		}
		~Depth() { --p_.depth_; }
		Parser &p_;
	};

	// --- names ---
	TypePtr lookup(const std::string &name) const
	{
		for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
			if (auto f = it->find(name); f != it->end())
				return f->second;
		return nullptr;
	}
	bool is_prefix_of_name(const std::string &prefix) const
	{
		for (const Names &s : scopes_) {
			auto it = s.lower_bound(prefix);
			if (it != s.end() && it->first.size() > prefix.size() &&
			    it->first.compare(0, prefix.size(), prefix) == 0 && it->first[prefix.size()] == ' ')
				return true;
		}
		return false;
	}
	// A name is declared once in a scope; an inner scope may declare it again.
	void declare(const std::string &name, TypePtr t, const Token &at)
	{
		if (!scopes_.back().emplace(name, std::move(t)).second)
			throw TsdlError(at.line, at.offset, "'" + name + "' is declared twice in the same scope");
	}

	// --- values ---
	int64_t signed_value()
	{
		bool neg = false;
		if (accept("-"))
			neg = true;
		else
			accept("+");
		if (tok_.kind != Tok::integer)
			fail("expected a number, found " + describe());
		const uint64_t v = tok_.value;
		if (neg ? v > uint64_t{1} << 63 : false)
			fail("number out of range");
		advance();
		return neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
	}
	uint64_t unsigned_value(const char *what)
	{
		if (tok_.kind != Tok::integer)
			fail(std::string("expected a number for ") + what + ", found " + describe());
		const uint64_t v = tok_.value;
		advance();
		return v;
	}
	bool bool_value(const char *what)
	{
		if (tok_.kind == Tok::integer) {
			const uint64_t v = tok_.value;
			advance();
			return v != 0;
		}
		const std::string s = ident();
		if (s == "true" || s == "TRUE")
			return true;
		if (s == "false" || s == "FALSE")
			return false;
		fail(std::string("expected true or false for ") + what + ", found '" + s + "'");
	}
	std::string string_value(const char *what)
	{
		if (tok_.kind != Tok::string)
			fail(std::string("expected a string for ") + what + ", found " + describe());
		std::string s = std::move(tok_.text);
		advance();
		return s;
	}
	// a.b.c
	std::string dotted()
	{
		std::string s = ident();
		while (accept(".")) {
			s += '.'; // appended apart: GCC 12 -O3 -Wrestrict false positive on "." + string
			s += ident();
		}
		return s;
	}
	ByteOrder byte_order_value()
	{
		const std::string s = ident();
		if (s == "le" || s == "little")
			return ByteOrder::le;
		if (s == "be" || s == "big" || s == "network")
			return ByteOrder::be;
		if (s == "native")
			return ByteOrder::native;
		fail("unknown byte order '" + s + "'");
	}
	Encoding encoding_value()
	{
		const std::string s = ident();
		if (s == "none")
			return Encoding::none;
		if (s == "UTF8" || s == "utf8")
			return Encoding::utf8;
		if (s == "ASCII" || s == "ascii")
			return Encoding::ascii;
		fail("unknown encoding '" + s + "'");
	}
	static uint32_t default_align(uint32_t size) { return size % 8 ? 1 : 8; }
	uint32_t align_value()
	{
		const uint64_t a = unsigned_value("align");
		if (a == 0 || (a & (a - 1)) || a > (uint64_t{1} << 31))
			fail("align must be a power of two (bits), not " + std::to_string(a));
		return static_cast<uint32_t>(a);
	}

	// --- types ---
	TypePtr integer_type()
	{
		expect("{");
		auto t = std::make_shared<FieldType>();
		t->kind = TypeKind::integer;
		bool have_size = false, have_align = false;
		while (!accept("}")) {
			const Token at = tok_;
			const std::string key = ident();
			expect("=");
			if (key == "size") {
				const uint64_t s = unsigned_value("size");
				if (s == 0 || s > 64)
					fail("integer size must be 1 to 64 bits, not " + std::to_string(s));
				t->size = static_cast<uint32_t>(s);
				have_size = true;
			} else if (key == "align") {
				t->align = align_value();
				have_align = true;
			} else if (key == "signed") {
				t->is_signed = bool_value("signed");
			} else if (key == "byte_order") {
				t->byte_order = byte_order_value();
			} else if (key == "base") {
				t->base = base_value();
			} else if (key == "encoding") {
				t->encoding = encoding_value();
			} else if (key == "map") {
				const std::string m = dotted();
				if (m.rfind("clock.", 0) != 0 || m.size() < 13 ||
				    m.compare(m.size() - 6, 6, ".value") != 0)
					fail("map must be clock.NAME.value, not " + m);
				t->mapped_clock = m.substr(6, m.size() - 12);
			} else {
				ignore_attribute(at, key, "an integer");
			}
			expect(";");
		}
		if (!have_size)
			fail("integer without a size");
		if (!have_align)
			t->align = default_align(t->size);
		return t;
	}
	Base base_value()
	{
		if (tok_.kind == Tok::integer) {
			const uint64_t v = unsigned_value("base");
			if (v == 10 || v == 16 || v == 8 || v == 2)
				return static_cast<Base>(v);
			fail("unknown base " + std::to_string(v));
		}
		const std::string s = ident();
		if (s == "decimal" || s == "dec" || s == "d" || s == "i" || s == "u")
			return Base::dec;
		if (s == "hexadecimal" || s == "hex" || s == "x" || s == "X" || s == "p")
			return Base::hex;
		if (s == "octal" || s == "oct" || s == "o")
			return Base::oct;
		if (s == "binary" || s == "b")
			return Base::bin;
		fail("unknown base '" + s + "'");
	}
	TypePtr float_type()
	{
		expect("{");
		auto t = std::make_shared<FieldType>();
		t->kind = TypeKind::floating;
		bool have_align = false;
		while (!accept("}")) {
			const Token at = tok_;
			const std::string key = ident();
			expect("=");
			if (key == "exp_dig")
				t->exp_dig = static_cast<uint32_t>(std::min<uint64_t>(unsigned_value("exp_dig"), 1024));
			else if (key == "mant_dig")
				t->mant_dig =
					static_cast<uint32_t>(std::min<uint64_t>(unsigned_value("mant_dig"), 1024));
			else if (key == "align") {
				t->align = align_value();
				have_align = true;
			} else if (key == "byte_order")
				t->byte_order = byte_order_value();
			else
				ignore_attribute(at, key, "a floating_point");
			expect(";");
		}
		t->size = t->exp_dig + t->mant_dig;
		if (!((t->exp_dig == 8 && t->mant_dig == 24) || (t->exp_dig == 11 && t->mant_dig == 53)))
			fail("floating_point of exp_dig " + std::to_string(t->exp_dig) + ", mant_dig " +
			     std::to_string(t->mant_dig) + ": only 32-bit (8, 24) and 64-bit (11, 53) are read");
		if (!have_align)
			t->align = default_align(t->size);
		return t;
	}
	TypePtr string_type()
	{
		auto t = std::make_shared<FieldType>();
		t->kind = TypeKind::string;
		t->align = 8;
		t->encoding = Encoding::utf8;
		if (accept("{")) {
			while (!accept("}")) {
				const Token at = tok_;
				const std::string key = ident();
				expect("=");
				if (key == "encoding")
					t->encoding = encoding_value();
				else
					ignore_attribute(at, key, "a string");
				expect(";");
			}
		}
		return t;
	}
	TypePtr enum_type()
	{
		std::string name;
		const Token name_at = tok_;
		if (tok_.kind == Tok::ident)
			name = ident();
		TypePtr container;
		if (accept(":"))
			container = type_specifier();
		if (!is("{"))
			return declared("enum", name);
		advance();
		if (!container) {
			container = lookup("int");
			if (!container)
				fail("enum without a container type, and no 'int' type declared");
		}
		if (container->kind != TypeKind::integer)
			fail("an enum's container must be an integer type");
		auto t = std::make_shared<FieldType>(*container);
		t->kind = TypeKind::enumeration;
		int64_t next = 0;
		while (!accept("}")) {
			std::string label;
			if (tok_.kind == Tok::string)
				label = string_value("a label");
			else
				label = ident();
			int64_t lo = next, hi = next;
			if (accept("=")) {
				lo = hi = enum_value(*t, label);
				if (accept("..."))
					hi = enum_value(*t, label);
			}
			if (t->is_signed ? lo > hi : static_cast<uint64_t>(lo) > static_cast<uint64_t>(hi))
				fail("enum range of '" + label + "' ends before it begins");
			next = static_cast<int64_t>(static_cast<uint64_t>(hi) + 1);
			EnumMapping *m = nullptr;
			for (EnumMapping &e : t->mappings)
				if (e.label == label)
					m = &e;
			if (!m) {
				t->mappings.push_back({label, {}});
				m = &t->mappings.back();
			}
			m->ranges.push_back({lo, hi});
			if (!accept(",")) {
				expect("}");
				break;
			}
		}
		if (!name.empty())
			declare("enum " + name, t, name_at);
		return t;
	}
	// A value of an enum's label, within what its container integer holds
	// (stored as int64_t: an unsigned one's bits).
	int64_t enum_value(const FieldType &container, const std::string &label)
	{
		const bool negative = accept("-");
		if (!negative)
			accept("+");
		if (tok_.kind != Tok::integer)
			fail("expected a number, found " + describe());
		const uint64_t magnitude = tok_.value;
		const uint32_t bits = container.size;
		const uint64_t unsigned_max = bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
		const uint64_t positive_max = container.is_signed ? unsigned_max >> 1 : unsigned_max;
		const uint64_t negative_max = container.is_signed ? (unsigned_max >> 1) + 1 : 0;
		if (negative ? magnitude > negative_max : magnitude > positive_max) {
			const std::string range = container.is_signed ? "-" + std::to_string(negative_max) + " to " +
			                                                        std::to_string(positive_max)
			                                              : "0 to " + std::to_string(positive_max);
			fail("value " + std::string(negative ? "-" : "") + std::to_string(magnitude) + " of '" + label +
			     "' is out of its " + std::to_string(bits) + "-bit " +
			     (container.is_signed ? "signed" : "unsigned") + " integer's range (" + range + ")");
		}
		advance();
		return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
	}
	// `enum NAME`, `struct NAME`, `variant NAME` without a body: the type
	// declared earlier under that name.
	TypePtr declared(const char *keyword, const std::string &name)
	{
		if (name.empty())
			fail(std::string(keyword) + " without a body");
		std::string key = keyword;
		key += ' ';
		key += name;
		TypePtr t = lookup(key);
		if (!t)
			fail("unknown " + std::string(keyword) + " '" + name + "'");
		return t;
	}
	// Members of a struct or options of a variant, up to and with the '}'.
	void members(std::vector<Member> &out)
	{
		scopes_.emplace_back();
		while (!accept("}")) {
			if (is("typealias")) {
				typealias();
				continue;
			}
			if (is("typedef")) {
				typedef_();
				continue;
			}
			TypePtr t = type_specifier();
			if (accept(";"))
				continue; // a named struct/enum/variant declared here
			do {
				std::string name;
				TypePtr full = declarator(t, name);
				for (const Member &m : out)
					if (m.name == name)
						fail("two fields named '" + name + "'");
				out.push_back({std::move(name), std::move(full)});
			} while (accept(","));
			expect(";");
		}
		scopes_.pop_back();
	}
	TypePtr struct_type()
	{
		std::string name;
		const Token name_at = tok_;
		if (tok_.kind == Tok::ident)
			name = ident();
		if (!is("{"))
			return declared("struct", name);
		advance();
		auto t = std::make_shared<FieldType>();
		t->kind = TypeKind::structure;
		t->align = 1;
		members(t->members);
		if (accept("align")) {
			expect("(");
			t->align = align_value();
			expect(")");
		}
		for (const Member &m : t->members)
			t->align = std::max(t->align, m.type->align);
		if (!name.empty())
			declare("struct " + name, t, name_at);
		return t;
	}
	TypePtr variant_type()
	{
		std::string name, tag;
		const Token name_at = tok_;
		if (tok_.kind == Tok::ident)
			name = ident();
		const Token tag_at = tok_;
		if (accept("<")) {
			tag = dotted();
			expect(">");
		}
		if (!is("{")) {
			TypePtr t = declared("variant", name);
			if (tag.empty())
				return t;
			auto tagged = std::make_shared<FieldType>(*t);
			tagged->tag = tag;
			tagged->line = tag_at.line;
			tagged->offset = tag_at.offset;
			return tagged;
		}
		advance();
		auto t = std::make_shared<FieldType>();
		t->kind = TypeKind::variant;
		t->tag = tag;
		t->line = tag_at.line;
		t->offset = tag_at.offset;
		t->align = 1;
		members(t->members);
		if (t->members.empty())
			fail("variant without options");
		if (!name.empty())
			declare("variant " + name, t, name_at);
		return t;
	}
	TypePtr type_specifier()
	{
		Depth d(*this);
		if (tok_.kind != Tok::ident)
			fail("expected a type, found " + describe());
		const std::string w = tok_.text;
		using Make = TypePtr (Parser::*)();
		static constexpr std::pair<std::string_view, Make> kTypes[] = {
			{"integer", &Parser::integer_type}, {"floating_point", &Parser::float_type},
			{"string", &Parser::string_type},   {"enum", &Parser::enum_type},
			{"struct", &Parser::struct_type},   {"variant", &Parser::variant_type},
		};
		for (const auto &[keyword, make] : kTypes)
			if (w == keyword) {
				advance();
				return (this->*make)();
			}
		if (w == "const" || w == "volatile") {
			advance();
			return type_specifier();
		}
		// A declared name, maybe several words ("unsigned long").
		std::string name = ident();
		while (tok_.kind == Tok::ident) {
			std::string longer = name;
			longer += ' ';
			longer += tok_.text;
			if (!lookup(longer) && !is_prefix_of_name(longer))
				break;
			advance();
			name = std::move(longer);
		}
		TypePtr t = lookup(name);
		if (!t)
			fail("unknown type '" + name + "'");
		return t;
	}
	// NAME followed by [N] or [path] suffixes; the outermost suffix comes first.
	TypePtr declarator(TypePtr t, std::string &name)
	{
		if (tok_.kind == Tok::ident && is_tsdl_keyword(tok_.text))
			fail("'" + tok_.text + "' is a TSDL keyword: it cannot name a field or a type");
		name = ident();
		struct Dimension {
			uint64_t length = 0;
			std::string length_ref; // a sequence's
			Token at;
		};
		std::vector<Dimension> dims;
		while (accept("[")) {
			const Token at = tok_;
			if (tok_.kind == Tok::integer)
				dims.push_back({unsigned_value("array length"), "", at});
			else
				dims.push_back({0, dotted(), at});
			expect("]");
		}
		for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
			auto a = std::make_shared<FieldType>();
			a->kind = it->length_ref.empty() ? TypeKind::array : TypeKind::sequence;
			a->length = it->length;
			a->length_ref = it->length_ref;
			a->line = it->at.line;
			a->offset = it->at.offset;
			a->align = t->align;
			a->element = std::move(t);
			t = std::move(a);
		}
		return t;
	}
	// The name of a typealias target: words up to ';' (or declarator suffixes).
	std::string alias_name()
	{
		std::string name = ident();
		while (tok_.kind == Tok::ident) {
			name += ' ';
			name += ident();
		}
		return name;
	}
	void typealias()
	{
		expect("typealias");
		TypePtr t = type_specifier();
		expect(":=");
		const Token at = tok_;
		const std::string name = alias_name();
		expect(";");
		declare(name, t, at);
	}
	void typedef_()
	{
		expect("typedef");
		TypePtr t = type_specifier();
		std::string name;
		const Token at = tok_;
		TypePtr full = declarator(t, name);
		expect(";");
		declare(name, full, at);
	}

	// --- blocks ---
	// KEY = value; or KEY := type; entries of a trace/stream/event/clock/env
	// block, up to the '}' and its ';'. on_type/on_value handle each.
	template <class OnValue, class OnType>
	void block(OnValue on_value, OnType on_type)
	{
		Depth d(*this);
		expect("{");
		scopes_.emplace_back();
		while (!accept("}")) {
			if (is("typealias")) {
				typealias();
				continue;
			}
			if (is("typedef")) {
				typedef_();
				continue;
			}
			block_key_ = tok_;
			const std::string key = dotted();
			if (accept(":=")) {
				TypePtr t = type_specifier();
				on_type(key, t);
			} else {
				expect("=");
				on_value(key);
			}
			expect(";");
		}
		scopes_.pop_back();
		expect(";");
	}
	TypePtr struct_root(const std::string &what, const TypePtr &t)
	{
		if (t->kind != TypeKind::structure)
			fail(what + " must be a struct");
		return t;
	}
	void skip_value()
	{
		if (tok_.kind == Tok::string || tok_.kind == Tok::integer)
			advance();
		else if (accept("-"))
			unsigned_value("a value");
		else
			dotted();
	}

	// The trace block's major or minor: CTF 1.8 only.
	uint32_t version_part(const char *what, uint32_t wanted)
	{
		if (tok_.kind == Tok::integer && tok_.value != wanted)
			fail(std::string(what) + " = " + std::to_string(tok_.value) +
			     ": this reader reads CTF 1.8 (major = 1; minor = 8;)");
		return static_cast<uint32_t>(unsigned_value(what));
	}
	void trace_block()
	{
		bool have_order = false;
		block(
			[&](const std::string &k) {
				if (k == "major")
					out_.major = version_part("major", 1);
				else if (k == "minor")
					out_.minor = version_part("minor", 8);
				else if (k == "uuid")
					out_.uuid = string_value("uuid");
				else if (k == "byte_order") {
					const ByteOrder o = byte_order_value();
					if (o == ByteOrder::native)
						fail("the trace's byte_order must be le or be");
					out_.big_endian = o == ByteOrder::be;
					have_order = true;
				} else
					ignore_attribute(block_key_, k, "the trace block");
			},
			[&](const std::string &k, const TypePtr &t) {
				if (k == "packet.header")
					out_.packet_header = struct_root("trace packet.header", t);
				else
					ignore_type(k, "the trace block");
			});
		if (!have_order)
			fail("trace block without byte_order");
		if (out_.major == 0 || out_.minor == 0)
			fail("trace block without major and minor (CTF 1.8: major = 1; minor = 8;)");
	}
	void env_block()
	{
		block(
			[&](const std::string &k) {
				EnvValue v;
				if (tok_.kind == Tok::string)
					v = string_value("env");
				else if (tok_.kind == Tok::integer || is("-"))
					v = signed_value();
				else
					v = dotted();
				for (auto &e : out_.env)
					if (e.first == k) {
						e.second = std::move(v);
						return;
					}
				out_.env.emplace_back(k, std::move(v));
			},
			[&](const std::string &k, const TypePtr &) { ignore_type(k, "env"); });
	}
	void clock_block()
	{
		Clock c;
		block(
			[&](const std::string &k) {
				if (k == "name")
					c.name = tok_.kind == Tok::string ? string_value("name") : ident();
				else if (k == "uuid")
					c.uuid = string_value("uuid");
				else if (k == "description")
					c.description = string_value("description");
				else if (k == "freq")
					c.freq = unsigned_value("freq");
				else if (k == "precision")
					c.precision = unsigned_value("precision");
				else if (k == "offset_s")
					c.offset_s = signed_value();
				else if (k == "offset")
					c.offset = unsigned_value("offset");
				else if (k == "absolute")
					c.absolute = bool_value("absolute");
				else
					ignore_attribute(block_key_, k, "a clock");
			},
			[&](const std::string &k, const TypePtr &) { ignore_type(k, "a clock"); });
		if (c.name.empty())
			fail("clock without a name");
		if (c.freq == 0)
			fail("clock '" + c.name + "' has frequency 0");
		if (out_.clock(c.name))
			fail("two clocks named '" + c.name + "'");
		out_.clocks.push_back(std::move(c));
	}
	void stream_block()
	{
		StreamClass s;
		bool have_id = false;
		block(
			[&](const std::string &k) {
				if (k == "id") {
					s.id = unsigned_value("id");
					have_id = true;
				} else
					ignore_attribute(block_key_, k, "a stream");
			},
			[&](const std::string &k, const TypePtr &t) {
				if (k == "packet.context")
					s.packet_context = struct_root("stream packet.context", t);
				else if (k == "event.header")
					s.event_header = struct_root("stream event.header", t);
				else if (k == "event.context")
					s.event_context = struct_root("stream event.context", t);
				else
					ignore_type(k, "a stream");
			});
		if (!have_id && !out_.streams.empty())
			fail("a stream block without an id, and not the only one");
		if (out_.streams.count(s.id))
			fail("two stream blocks with id " + std::to_string(s.id));
		const uint64_t id = s.id;
		out_.streams.emplace(id, std::move(s));
	}
	void event_block()
	{
		EventClass e;
		bool have_id = false;
		block(
			[&](const std::string &k) {
				if (k == "name")
					e.name = tok_.kind == Tok::string ? string_value("name") : ident();
				else if (k == "id") {
					e.id = unsigned_value("id");
					have_id = true;
				} else if (k == "stream_id")
					e.stream_id = unsigned_value("stream_id");
				else if (k == "loglevel")
					e.loglevel = signed_value();
				else if (k == "model.emf.uri")
					e.emf_uri = string_value("model.emf.uri");
				else
					ignore_attribute(block_key_, k, "an event");
			},
			[&](const std::string &k, const TypePtr &t) {
				if (k == "fields")
					e.fields = struct_root("event fields", t);
				else if (k == "context")
					e.context = struct_root("event context", t);
				else
					ignore_type(k, "an event");
			});
		if (!have_id && !events_.empty())
			fail("event '" + e.name + "' without an id");
		events_.push_back({std::move(e), tok_.line, tok_.offset});
	}

	// Events may come before their stream block (LTTng writes them so): each
	// joins its stream class at the end.
	void attach_events()
	{
		for (Pending &p : events_) {
			EventClass &e = p.cls;
			auto sit = out_.streams.find(e.stream_id);
			if (sit == out_.streams.end()) {
				if (!out_.streams.empty() || e.stream_id != 0)
					throw TsdlError(p.line, p.offset,
					                "event '" + e.name + "' of stream " +
					                        std::to_string(e.stream_id) +
					                        ", which no stream block declares");
				sit = out_.streams.emplace(0, StreamClass{}).first; // one implicit stream class
			}
			if (sit->second.events.count(e.id))
				throw TsdlError(p.line, p.offset,
				                "two events with id " + std::to_string(e.id) + " in stream " +
				                        std::to_string(e.stream_id));
			const uint64_t id = e.id;
			sit->second.events.emplace(id, std::move(e));
		}
		events_.clear();
	}

	void top_level()
	{
		if (is("typealias"))
			return typealias();
		if (is("typedef"))
			return typedef_();
		if (tok_.kind == Tok::ident && peek().kind == Tok::punct && peek().text == "{") {
			const std::string w = tok_.text;
			if (w == "trace" || w == "env" || w == "clock" || w == "stream" || w == "event" ||
			    w == "callsite") {
				advance();
				if (w == "trace")
					trace_block();
				else if (w == "env")
					env_block();
				else if (w == "clock")
					clock_block();
				else if (w == "stream")
					stream_block();
				else if (w == "event")
					event_block();
				else
					block([&](const std::string &) { skip_value(); },
					      [&](const std::string &, const TypePtr &) {});
				return;
			}
		}
		type_specifier(); // struct NAME {...}; enum NAME : T {...}; variant NAME {...};
		expect(";");
	}

	Lexer lex_;
	Token tok_, peek_;
	Token block_key_; // the key of the block entry being read
	bool has_peek_ = false;
	int depth_ = 0;
	std::vector<Names> scopes_;
	TraceClass out_;
	struct Pending {
		EventClass cls;
		size_t line, offset;
	};
	std::vector<Pending> events_;
};

uint32_t load32(const uint8_t *p, bool be)
{
	uint32_t v;
	std::memcpy(&v, p, 4);
	return be ? __builtin_bswap32(v) : v;
}

} // namespace

TraceClass parse_tsdl(std::string_view text)
{
	if (text.size() > kMaxMetadataSize)
		throw TsdlError(1, 0, "metadata larger than " + std::to_string(kMaxMetadataSize) + " bytes");
	return Parser(text).run();
}

std::string metadata_text(std::string_view bytes, const std::string &path)
{
	constexpr uint32_t kMagic = 0x75D11D57;
	constexpr size_t kHeader = 37;
	const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
	if (bytes.size() < 4 || (load32(p, false) != kMagic && load32(p, true) != kMagic))
		return std::string(bytes);
	const bool be = load32(p, false) != kMagic;
	std::string text;
	size_t off = 0;
	while (off < bytes.size()) {
		if (bytes.size() - off < kHeader)
			throw ReadError(path, off,
			                "metadata packet header cut short (" + std::to_string(bytes.size() - off) +
			                        " bytes left, a header is " + std::to_string(kHeader) + ")");
		if (load32(p + off, be) != kMagic)
			throw ReadError(path, off, "bad metadata packet magic (not 0x75D11D57)");
		const uint64_t content = load32(p + off + 24, be), packet = load32(p + off + 28, be);
		if (p[off + 32] || p[off + 33] || p[off + 34])
			throw ReadError(path, off,
			                "compressed, encrypted or checksummed metadata packets are not read");
		if (content % 8 || packet % 8 || content > packet || content < kHeader * 8)
			throw ReadError(path, off,
			                "metadata packet sizes are impossible (content " + std::to_string(content) +
			                        " bits, packet " + std::to_string(packet) + " bits)");
		if (packet / 8 > bytes.size() - off)
			throw ReadError(path, off,
			                "metadata packet declares " + std::to_string(packet / 8) + " bytes but only " +
			                        std::to_string(bytes.size() - off) + " remain");
		text.append(bytes.data() + off + kHeader, content / 8 - kHeader);
		off += packet / 8;
		if (text.size() > kMaxMetadataSize)
			throw ReadError(path, off,
			                "metadata larger than " + std::to_string(kMaxMetadataSize) + " bytes");
	}
	return text;
}

TraceClass load_metadata(const std::string &path)
{
	base::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		throw ReadError(path, 0, std::string("cannot open: ") + strerror(errno));
	std::string bytes;
	char buf[65536];
	while (true) {
		const ssize_t n = ::read(fd.get(), buf, sizeof buf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			throw ReadError(path, bytes.size(), std::string("cannot read: ") + strerror(errno));
		}
		if (n == 0)
			break;
		bytes.append(buf, static_cast<size_t>(n));
		if (bytes.size() > kMaxMetadataSize + kMaxMetadataSize / 8)
			throw ReadError(path, bytes.size(), "metadata file too large");
	}
	return parse_metadata(bytes, path);
}

TraceClass parse_metadata(const std::string &bytes, const std::string &path)
{
	const std::string text = metadata_text(bytes, path);
	// The front end by the first byte: a record separator begins CTF 2's JSON fragments (see README.md).
	if (!text.empty() && text[0] == '\x1e')
		throw ReadError(
			path, 0,
			path + ": CTF 2 metadata (JSON fragments, as LTTng 2.15 writes by default) is not read "
			       "yet: record the trace as CTF 1.8 (LTTng 2.15: `lttng create --trace-format=ctf-1.8`)",
			true);
	try {
		return parse_tsdl(text);
	} catch (const TsdlError &e) {
		throw ReadError(path, e.offset(), path + ": metadata " + e.what(), true);
	}
}

} // namespace tracery::ctf::reader
