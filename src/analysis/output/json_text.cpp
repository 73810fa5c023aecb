// analysis/output/json_text.cpp — UTF-8 repair, JSON strings and JSON of decoded
// fields (see json_text.hpp).
#include "analysis/output/json_text.hpp"

#include "base/utf8.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace tracery::analysis {

namespace reader = ctf::reader;
using reader::OpKind;

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

constexpr int kMaxDepth = 64;

size_t append_value(std::string &out, const reader::Plan &plan, uint32_t i, std::span<const reader::Value> values,
                    size_t v, int depth)
{
	if (v >= values.size() || depth > kMaxDepth) {
		out += "null";
		return values.size();
	}
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
			w = append_value(out, plan, c, values, w, depth + 1);
			c = m.next;
		}
		out += '}';
		return w;
	}
	case OpKind::array:
	case OpKind::sequence: {
		out += '[';
		size_t w = v + 1;
		for (uint64_t k = 0; k < val.n && w < values.size(); ++k) {
			if (k)
				out += ',';
			w = append_value(out, plan, i + 1, values, w, depth + 1);
		}
		out += ']';
		return w;
	}
	case OpKind::variant: {
		const auto &options = plan.selectors[op.table].option_ops;
		if (val.n >= options.size()) {
			out += "null";
			return values.size();
		}
		return append_value(out, plan, options[val.n], values, v + 1, depth + 1);
	}
	}
	out += "null";
	return v + 1;
}

} // namespace

size_t append_json_value(std::string &out, const reader::Plan &plan, uint32_t i, std::span<const reader::Value> values,
                         size_t v)
{
	return append_value(out, plan, i, values, v, 0);
}

} // namespace tracery::analysis
