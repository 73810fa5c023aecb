// analysis/sql/json_text.cpp — UTF-8 checks and JSON of decoded fields (see
// json_text.hpp).
#include "analysis/sql/json_text.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace tracery::analysis::sql {

namespace reader = ctf::reader;
using reader::OpKind;

namespace {

// The length of the valid UTF-8 sequence at s[i], 0 if invalid.
size_t sequence_at(std::string_view s, size_t i)
{
	const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
	const unsigned char c = b(i);
	if (c < 0x80)
		return 1;
	size_t n;
	uint32_t cp;
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (i + n > s.size())
		return 0;
	for (size_t k = 1; k < n; ++k) {
		if ((b(i + k) & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (b(i + k) & 0x3f);
	}
	static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

const char kReplacement[] = "\xef\xbf\xbd";

} // namespace

bool valid_utf8(std::string_view s)
{
	for (size_t i = 0; i < s.size();) {
		if (static_cast<unsigned char>(s[i]) < 0x80) {
			++i;
			continue;
		}
		const size_t n = sequence_at(s, i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

void append_utf8(std::string &out, std::string_view s)
{
	for (size_t i = 0; i < s.size();) {
		const size_t n = sequence_at(s, i);
		if (n)
			out.append(s.data() + i, n);
		else
			out += kReplacement;
		i += n ? n : 1;
	}
}

void append_json_string(std::string &out, std::string_view s)
{
	out += '"';
	for (size_t i = 0; i < s.size();) {
		const auto c = static_cast<unsigned char>(s[i]);
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			out += static_cast<char>(c);
			++i;
			continue;
		}
		if (c < 0x80) {
			switch (c) {
			case '"':
				out += "\\\"";
				break;
			case '\\':
				out += "\\\\";
				break;
			case '\n':
				out += "\\n";
				break;
			case '\t':
				out += "\\t";
				break;
			case '\r':
				out += "\\r";
				break;
			default: {
				char b[8];
				snprintf(b, sizeof b, "\\u%04x", c);
				out += b;
			}
			}
			++i;
			continue;
		}
		const size_t n = sequence_at(s, i);
		if (n)
			out.append(s.data() + i, n);
		else
			out += kReplacement;
		i += n ? n : 1;
	}
	out += '"';
}

size_t append_json_value(std::string &out, const reader::Plan &plan, uint32_t i, const reader::Value *values, size_t v)
{
	const reader::Op &op = plan.ops[i];
	const reader::Value &val = values[v];
	switch (op.kind) {
	case OpKind::u8:
	case OpKind::u16:
	case OpKind::u32:
	case OpKind::u64:
	case OpKind::integer: {
		if (op.type && op.type->kind == reader::TypeKind::enumeration) {
			bool any = false;
			reader::for_each_enum_label(*op.type, val.u, [&](const std::string &label) {
				if (!any)
					append_json_string(out, label);
				any = true;
			});
			if (any)
				return v + 1;
		}
		char b[24];
		if (op.is_signed)
			snprintf(b, sizeof b, "%" PRId64, val.i);
		else
			snprintf(b, sizeof b, "%" PRIu64, val.u);
		out += b;
		return v + 1;
	}
	case OpKind::float32:
	case OpKind::float64: {
		if (!std::isfinite(val.f)) {
			out += "null";
			return v + 1;
		}
		char b[32];
		snprintf(b, sizeof b, "%.17g", val.f);
		out += b;
		return v + 1;
	}
	case OpKind::string:
	case OpKind::text_array:
	case OpKind::text_sequence:
		append_json_string(out, {val.s, static_cast<size_t>(val.n)});
		return v + 1;
	case OpKind::structure: {
		out += '{';
		size_t w = v + 1;
		uint32_t c = i + 1;
		for (uint32_t k = 0; k < op.count; ++k) {
			const reader::Op &m = plan.ops[c];
			if (k)
				out += ',';
			std::string_view name = m.name ? std::string_view(*m.name) : std::string_view();
			if (!name.empty() && name[0] == '_')
				name.remove_prefix(1);
			append_json_string(out, name);
			out += ':';
			w = append_json_value(out, plan, c, values, w);
			c = m.next;
		}
		out += '}';
		return w;
	}
	case OpKind::array:
	case OpKind::sequence: {
		out += '[';
		size_t w = v + 1;
		for (uint64_t k = 0; k < val.n; ++k) {
			if (k)
				out += ',';
			w = append_json_value(out, plan, i + 1, values, w);
		}
		out += ']';
		return w;
	}
	case OpKind::variant:
		return append_json_value(out, plan, plan.selectors[op.table].option_ops[val.n], values, v + 1);
	}
	return v + 1;
}

} // namespace tracery::analysis::sql
