// analysis/output/json_text.cpp — UTF-8 repair, JSON strings and JSON of decoded
// fields (see json_text.hpp).
#include "analysis/output/json_text.hpp"

#include "base/utf8.hpp"

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace tracery::analysis {

namespace reader = ctf::reader;

void append_utf8(std::string &out, std::string_view s)
{
	const size_t from = out.size();
	out.append(s);
	auto *p = reinterpret_cast<uint8_t *>(out.data() + from);
	if (!base::is_ascii(p, s.size()))
		base::sanitize_utf8_in_place(p, s.size());
}

void append_json_string(std::string &out, std::string_view s)
{
	out += '"';
	size_t plain = 0; // bytes that need no escape, from the start
	while (plain < s.size()) {
		const auto c = static_cast<unsigned char>(s[plain]);
		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
			break;
		++plain;
	}
	out.append(s.data(), plain);
	if (plain < s.size()) {
		const std::string clean = base::sanitize_utf8(s.substr(plain));
		for (const char ch : clean) {
			const auto c = static_cast<unsigned char>(ch);
			if (c == '"' || c == '\\') {
				out += '\\';
				out += ch;
			} else if (c < 0x20) {
				static const char hex[] = "0123456789abcdef";
				out += "\\u00";
				out += hex[c >> 4];
				out += hex[c & 15];
			} else {
				out += ch;
			}
		}
	}
	out += '"';
}

namespace {

constexpr int64_t kExactInJs = int64_t{1} << 53; // integers a JavaScript number holds exactly

} // namespace

void append_decimal(std::string &out, int64_t v)
{
	char b[24];
	const auto r = std::to_chars(b, b + sizeof b, v);
	out.append(b, r.ptr);
}

void append_json_number(std::string &out, int64_t v)
{
	if (v >= -kExactInJs && v <= kExactInJs) {
		append_decimal(out, v);
		return;
	}
	out += '"';
	append_decimal(out, v);
	out += '"';
}

void append_json_number(std::string &out, uint64_t v)
{
	if (v <= static_cast<uint64_t>(kExactInJs)) {
		append_decimal(out, static_cast<int64_t>(v));
		return;
	}
	char b[24];
	const auto r = std::to_chars(b, b + sizeof b, v);
	out += '"';
	out.append(b, r.ptr);
	out += '"';
}

void append_json_number(std::string &out, double v)
{
	if (!std::isfinite(v)) {
		out += std::isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"";
		return;
	}
	char b[32];
	const auto r = std::to_chars(b, b + sizeof b, v); // the shortest that reads back the same
	out.append(b, r.ptr);
}

namespace {

constexpr int kMaxDepth = 64;

size_t append_value(std::string &out, const reader::FieldDecl &decl, std::span<const reader::Value> values, size_t v,
                    int depth)
{
	if (v >= values.size() || depth > kMaxDepth) {
		out += "null";
		return values.size();
	}
	// Each child is read at the index its previous sibling's subtree ended,
	// as found here: bounded by values, whatever lengths the trace claims.
	const reader::Field field(decl, values.data(), v);
	switch (decl.kind()) {
	case reader::FieldKind::integer: {
		if (decl.is_enumeration()) {
			bool any = false;
			field.for_each_label([&](const std::string &label) {
				if (!any)
					append_json_string(out, label);
				any = true;
			});
			if (any)
				return v + 1;
		}
		char b[24];
		if (decl.is_signed())
			snprintf(b, sizeof b, "%" PRId64, field.as_signed());
		else
			snprintf(b, sizeof b, "%" PRIu64, field.as_unsigned());
		out += b;
		return v + 1;
	}
	case reader::FieldKind::floating: {
		if (!std::isfinite(field.as_double())) {
			out += "null";
			return v + 1;
		}
		char b[32];
		snprintf(b, sizeof b, "%.17g", field.as_double());
		out += b;
		return v + 1;
	}
	case reader::FieldKind::string:
		append_json_string(out, field.text());
		return v + 1;
	case reader::FieldKind::structure: {
		out += '{';
		size_t w = v + 1;
		bool first = true;
		for (const reader::FieldDecl m : decl.members()) {
			if (!first)
				out += ',';
			first = false;
			append_json_string(out, m.name());
			out += ':';
			w = append_value(out, m, values, w, depth + 1);
		}
		out += '}';
		return w;
	}
	case reader::FieldKind::array: {
		out += '[';
		size_t w = v + 1;
		for (uint64_t k = 0; k < field.length() && w < values.size(); ++k) {
			if (k)
				out += ',';
			w = append_value(out, decl.element(), values, w, depth + 1);
		}
		out += ']';
		return w;
	}
	case reader::FieldKind::variant:
		if (field.option_index() >= decl.option_count()) {
			out += "null";
			return values.size();
		}
		return append_value(out, decl.option(field.option_index()), values, v + 1, depth + 1);
	}
	out += "null";
	return v + 1;
}

} // namespace

size_t append_json_value(std::string &out, const reader::FieldDecl &decl, std::span<const reader::Value> values,
                         size_t v)
{
	return append_value(out, decl, values, v, 0);
}

} // namespace tracery::analysis
