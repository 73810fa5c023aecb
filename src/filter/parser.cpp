// filter/parser.cpp — lexer and precedence-climbing parser of filter
// expressions, and error rendering.
#include "filter/parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>

namespace tracery::filter {

namespace {

enum class Tok : uint8_t { end, integer, floating, string, name, context, punct };

struct Token {
	Tok kind = Tok::end;
	size_t position = 0;
	std::string_view text; // as written
	int64_t integer = 0;
	double floating = 0;
	std::string value; // string: the literal as Program::strings holds it
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int digit_value(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 99;
}

// 'c', or '\xNN' for a byte that is not printable ASCII.
std::string quote_char(char c)
{
	if (c > ' ' && c < 0x7f)
		return std::string("'") + c + "'";
	char buf[8];
	std::snprintf(buf, sizeof buf, "'\\x%02x'", static_cast<unsigned char>(c));
	return buf;
}

// Longest first, so that "<<" is not read as "<" "<".
constexpr std::string_view kPuncts[] = {
	"&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+", "-", "*", "/",
	"%",  "<",  ">",  "&",  "|",  "^",  "!",  "~",  "(", ")", "[", "]",
};

struct BinaryInfo {
	std::string_view text;
	Operator op;
	int precedence; // higher binds tighter
};

constexpr BinaryInfo kBinary[] = {
	{"||", Operator::lor, 1}, {"&&", Operator::land, 2}, {"|", Operator::bor, 3}, {"^", Operator::bxor, 4},
	{"&", Operator::band, 5}, {"==", Operator::eq, 6},   {"!=", Operator::ne, 6}, {"<", Operator::lt, 7},
	{"<=", Operator::le, 7},  {">", Operator::gt, 7},    {">=", Operator::ge, 7}, {"<<", Operator::shl, 8},
	{">>", Operator::shr, 8}, {"+", Operator::add, 9},   {"-", Operator::sub, 9}, {"*", Operator::mul, 10},
	{"/", Operator::div, 10}, {"%", Operator::mod, 10},
};

constexpr std::pair<std::string_view, Operator> kUnary[] = {
	{"!", Operator::lnot},
	{"-", Operator::neg},
	{"~", Operator::bnot},
	{"+", Operator::plus},
};

constexpr std::pair<std::string_view, ContextName> kContext[] = {
	{"$ctx.vpid", ContextName::vpid},
	{"$ctx.vtid", ContextName::vtid},
	{"$ctx.procname", ContextName::procname},
	{"$ctx.cpu_id", ContextName::cpu_id},
};

// Errors are thrown as Error and caught by parse().
class Parser {
public:
	explicit Parser(std::string_view src) : src_(src) { next(); }

	std::unique_ptr<Expr> parse_all()
	{
		if (tok_.kind == Tok::end)
			throw Error{"empty filter expression", tok_.position};
		auto e = parse_binary(0);
		if (tok_.kind != Tok::end) {
			const std::string_view shown = tok_.text.substr(0, 32);
			throw Error{"unexpected '" + std::string(shown) +
			                    (shown.size() < tok_.text.size() ? "...'" : "'") + " after the expression",
			            tok_.position};
		}
		return e;
	}

private:
	// ---- lexer ----

	void next()
	{
		while (pos_ < src_.size() && is_space(src_[pos_]))
			++pos_;
		tok_ = Token{};
		tok_.position = pos_;
		if (pos_ == src_.size())
			return;
		const char c = src_[pos_];
		if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])))
			lex_number();
		else if (is_ident_start(c))
			lex_name(Tok::name);
		else if (c == '$' && pos_ + 1 < src_.size() && is_ident_start(src_[pos_ + 1]))
			lex_name(Tok::context);
		else if (c == '"')
			lex_string();
		else
			lex_punct();
		tok_.text = src_.substr(tok_.position, pos_ - tok_.position);
	}

	// An identifier, then ".identifier"s; a context name starts with '$'.
	void lex_name(Tok kind)
	{
		tok_.kind = kind;
		if (kind == Tok::context)
			++pos_;
		for (;;) {
			while (pos_ < src_.size() && is_ident(src_[pos_]))
				++pos_;
			if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_ident_start(src_[pos_ + 1]))
				++pos_;
			else
				break;
		}
	}

	void skip_digits()
	{
		while (pos_ < src_.size() && is_digit(src_[pos_]))
			++pos_;
	}

	void lex_number()
	{
		const size_t start = pos_;
		bool is_float = false;
		int base = 10;
		if (src_.substr(pos_, 2) == "0x" || src_.substr(pos_, 2) == "0X") {
			base = 16;
			pos_ += 2;
			while (pos_ < src_.size() && digit_value(src_[pos_]) < 16)
				++pos_;
		} else {
			skip_digits();
			if (pos_ < src_.size() && src_[pos_] == '.') {
				is_float = true;
				++pos_;
				skip_digits();
			}
			if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
				size_t p = pos_ + 1;
				if (p < src_.size() && (src_[p] == '+' || src_[p] == '-'))
					++p;
				if (p < src_.size() && is_digit(src_[p])) {
					is_float = true;
					pos_ = p;
					skip_digits();
				}
			}
			if (!is_float && src_[start] == '0')
				base = 8;
		}
		if (pos_ < src_.size() && (is_ident(src_[pos_]) || src_[pos_] == '.')) {
			while (pos_ < src_.size() && (is_ident(src_[pos_]) || src_[pos_] == '.'))
				++pos_;
			throw Error{"invalid number '" + std::string(src_.substr(start, pos_ - start)) + "'", start};
		}
		const std::string_view digits = src_.substr(start, pos_ - start);
		if (is_float) {
			tok_.kind = Tok::floating;
			const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), tok_.floating);
			if (r.ec != std::errc() || r.ptr != digits.data() + digits.size())
				throw Error{"floating literal out of range", start};
			return;
		}
		tok_.kind = Tok::integer;
		const size_t prefix = base == 16 ? 2 : 0;
		if (digits.size() == prefix)
			throw Error{"invalid number '" + std::string(digits) + "'", start};
		uint64_t v = 0;
		for (const char d : digits.substr(prefix)) {
			const int dv = digit_value(d);
			if (dv >= base)
				throw Error{"invalid octal number '" + std::string(digits) + "'", start};
			if (v > (uint64_t{INT64_MAX} - dv) / base)
				throw Error{"integer literal out of range", start};
			v = v * base + dv;
		}
		tok_.integer = static_cast<int64_t>(v);
	}

	void lex_string()
	{
		const size_t start = pos_++;
		tok_.kind = Tok::string;
		for (;;) {
			if (pos_ >= src_.size())
				throw Error{"unterminated string", start};
			const char c = src_[pos_];
			if (c == '"') {
				++pos_;
				return;
			}
			if (c != '\\') {
				tok_.value += c;
				++pos_;
				continue;
			}
			if (pos_ + 1 >= src_.size())
				throw Error{"unterminated string", start};
			switch (const char e = src_[pos_ + 1]) {
			case '"':
				tok_.value += '"';
				break;
			case 'n':
				tok_.value += '\n';
				break;
			case 't':
				tok_.value += '\t';
				break;
			case '\\': // kept escaped: glob syntax (bytecode.hpp)
			case '*':
				tok_.value += '\\';
				tok_.value += e;
				break;
			default:
				throw Error{"unknown escape sequence (known: \\\" \\\\ \\n \\t \\*)", pos_};
			}
			pos_ += 2;
		}
	}

	void lex_punct()
	{
		for (const std::string_view p : kPuncts) {
			if (src_.substr(pos_, p.size()) == p) {
				tok_.kind = Tok::punct;
				pos_ += p.size();
				return;
			}
		}
		if (src_[pos_] == '=')
			throw Error{"'=' is not an operator; did you mean '=='?", pos_};
		throw Error{"unexpected character " + quote_char(src_[pos_]), pos_};
	}

	// ---- parser ----

	bool at(std::string_view punct) const { return tok_.kind == Tok::punct && tok_.text == punct; }

	void expect(std::string_view punct)
	{
		if (!at(punct))
			throw Error{"expected '" + std::string(punct) + "' here", tok_.position};
		next();
	}

	// Around each recursion of the parser: parentheses, unary operators,
	// indices.
	void enter()
	{
		if (++nesting_ > kMaxNesting)
			throw Error{"expression nested too deeply (limit " + std::to_string(kMaxNesting) + ")",
			            tok_.position};
	}
	void leave() { --nesting_; }

	static std::unique_ptr<Expr> node(ExprKind kind, size_t position)
	{
		auto e = std::make_unique<Expr>();
		e->kind = kind;
		e->position = position;
		return e;
	}

	// Sets e's height from its children's.
	static void set_height(Expr &e)
	{
		e.height = 1 + std::max(e.lhs ? e.lhs->height : 0, e.rhs ? e.rhs->height : 0);
		if (e.height > kMaxHeight)
			throw Error{"expression too long: over " + std::to_string(kMaxHeight) + " nested operations",
			            e.position};
	}

	std::unique_ptr<Expr> parse_binary(int min_precedence)
	{
		auto lhs = parse_unary();
		for (;;) {
			const auto info = std::find_if(std::begin(kBinary), std::end(kBinary),
			                               [&](const BinaryInfo &b) { return at(b.text); });
			if (info == std::end(kBinary) || info->precedence < min_precedence)
				return lhs;
			auto e = node(ExprKind::binary, tok_.position);
			next();
			e->op = info->op;
			e->lhs = std::move(lhs);
			e->rhs = parse_binary(info->precedence + 1);
			set_height(*e);
			lhs = std::move(e);
		}
	}

	std::unique_ptr<Expr> parse_unary()
	{
		for (const auto &[text, op] : kUnary) {
			if (!at(text))
				continue;
			auto e = node(ExprKind::unary, tok_.position);
			e->op = op;
			enter();
			next();
			e->lhs = parse_unary();
			leave();
			set_height(*e);
			return e;
		}
		return parse_primary();
	}

	std::unique_ptr<Expr> parse_primary()
	{
		std::unique_ptr<Expr> e;
		switch (tok_.kind) {
		case Tok::integer:
			e = node(ExprKind::integer, tok_.position);
			e->integer = tok_.integer;
			break;
		case Tok::floating:
			e = node(ExprKind::floating, tok_.position);
			e->floating = tok_.floating;
			break;
		case Tok::string:
			e = node(ExprKind::string, tok_.position);
			e->text = std::move(tok_.value);
			break;
		case Tok::context:
			e = node(ExprKind::context, tok_.position);
			e->context = context_name();
			break;
		case Tok::name:
			return parse_field();
		case Tok::punct:
			if (at("(")) {
				enter();
				next();
				e = parse_binary(0);
				expect(")");
				leave();
				return e;
			}
			[[fallthrough]];
		case Tok::end:
			throw Error{"expected an operand here", tok_.position};
		}
		next();
		return e;
	}

	ContextName context_name() const
	{
		std::string known;
		for (const auto &[text, name] : kContext) {
			if (tok_.text == text)
				return name;
			known += (known.empty() ? "" : ", ") + std::string(text);
		}
		throw Error{"unknown context field '" + std::string(tok_.text) + "' (known: " + known + ")",
		            tok_.position};
	}

	// name, or name[index]
	std::unique_ptr<Expr> parse_field()
	{
		auto e = node(ExprKind::field, tok_.position);
		e->text = tok_.text;
		next();
		if (!at("["))
			return e;
		e->kind = ExprKind::element;
		enter();
		next();
		e->lhs = parse_binary(0);
		expect("]");
		leave();
		set_height(*e);
		return e;
	}

	std::string_view src_;
	size_t pos_ = 0;
	size_t nesting_ = 0;
	Token tok_;
};

} // namespace

std::string render_error(std::string_view expression, const Error &e)
{
	std::string out = e.message + "\n  ";
	size_t column = 0;
	for (size_t i = 0; i < expression.size(); ++i) {
		const auto c = static_cast<unsigned char>(expression[i]);
		// One column per character: control bytes show as spaces, UTF-8
		// continuation bytes take none.
		out += c < ' ' || c == 0x7f ? ' ' : static_cast<char>(c);
		if (i < e.position && (c & 0xc0) != 0x80)
			++column;
	}
	out += "\n  ";
	out.append(column, ' ');
	out += '^';
	return out;
}

std::unique_ptr<Expr> parse(std::string_view expression, Error *error)
{
	try {
		if (expression.size() > kMaxExpressionLength)
			throw Error{"expression too long (" + std::to_string(expression.size()) + " bytes, limit " +
			                    std::to_string(kMaxExpressionLength) + ")",
			            kMaxExpressionLength};
		return Parser(expression).parse_all();
	} catch (Error &e) {
		if (error)
			*error = std::move(e);
		return nullptr;
	}
}

} // namespace tracery::filter
