// filter/glob.cpp — glob matching (greedy, backtracking only to the last
// star: O(pattern x text) at worst, linear for the usual "prefix*" globs).
#include "filter/glob.hpp"

#include <cstring>

namespace tracery::filter {

namespace {

struct Bytes {
	const char *ptr;
	size_t len;
};

// A STRING field's or the procname's bytes: those before the first NUL.
Bytes c_bytes(const void *ptr, size_t len)
{
	if (!ptr || len == 0)
		return {"", 0};
	const void *nul = std::memchr(ptr, 0, len);
	const char *p = static_cast<const char *>(ptr);
	return {p, nul ? size_t(static_cast<const char *>(nul) - p) : len};
}

Bytes operand(StringKind kind, uint32_t index, const char *literal, size_t literal_len, const tracery_arg *args,
              const Context *ctx)
{
	switch (kind) {
	case StringKind::field:
		return c_bytes(args[index].ptr, args[index].len);
	case StringKind::procname:
		return c_bytes(ctx->procname, ctx->procname_len);
	default:
		return {literal, literal_len};
	}
}

} // namespace

bool glob_match(const char *pattern, size_t pattern_len, const char *text, size_t text_len) noexcept
{
	size_t p = 0, t = 0;
	size_t star_p = SIZE_MAX, star_t = 0; // just after the last star; text position it matched up to
	while (t < text_len) {
		if (p < pattern_len && pattern[p] == '*') {
			star_p = ++p;
			star_t = t;
			continue;
		}
		if (p < pattern_len) {
			char c = pattern[p];
			size_t step = 1;
			if (c == '\\' && p + 1 < pattern_len && (pattern[p + 1] == '*' || pattern[p + 1] == '\\')) {
				c = pattern[p + 1];
				step = 2;
			}
			if (c == text[t]) {
				p += step;
				++t;
				continue;
			}
		}
		if (star_p == SIZE_MAX)
			return false;
		p = star_p;
		t = ++star_t;
	}
	while (p < pattern_len && pattern[p] == '*')
		++p;
	return p == pattern_len;
}

StrMatchSpec make_str_match_spec(const Insn &insn, const std::vector<std::string> &strings) noexcept
{
	StrMatchSpec s{StringKind(insn.type & 15), StringKind(insn.type >> 4), insn.field, insn.arg, "", 0, "", 0};
	if (s.left_kind == StringKind::literal) {
		s.left_literal = strings[insn.field].data();
		s.left_literal_len = strings[insn.field].size();
	}
	if (s.right_kind == StringKind::literal) {
		s.right_literal = strings[insn.arg].data();
		s.right_literal_len = strings[insn.arg].size();
	}
	return s;
}

extern "C" int tracery_filter_str_match(const tracery_arg *args, const Context *ctx, const StrMatchSpec *s) noexcept
{
	const Bytes l = operand(s->left_kind, s->left_index, s->left_literal, s->left_literal_len, args, ctx);
	const Bytes r = operand(s->right_kind, s->right_index, s->right_literal, s->right_literal_len, args, ctx);
	if (s->right_kind == StringKind::literal) // never the left one (verified)
		return glob_match(r.ptr, r.len, l.ptr, l.len);
	return l.len == r.len && std::memcmp(l.ptr, r.ptr, l.len) == 0;
}

} // namespace tracery::filter
