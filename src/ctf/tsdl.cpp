// ctf/tsdl.cpp — TSDL escaping and identifier rules (see tsdl.hpp).
#include "ctf/tsdl.hpp"

#include <array>

#include "base/utf8.hpp"

namespace tracery::ctf {

namespace {

bool is_ident_char(unsigned char c) noexcept
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

} // namespace

std::string tsdl_string_literal(std::string_view raw)
{
	const std::string s = base::sanitize_utf8(raw);
	std::string out;
	out.reserve(s.size() + 2);
	out += '"';
	for (unsigned char c : s) {
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
		default:
			if (c < 0x20 || c == 0x7F) {
				out += '\\';
				out += static_cast<char>('0' + ((c >> 6) & 7));
				out += static_cast<char>('0' + ((c >> 3) & 7));
				out += static_cast<char>('0' + (c & 7));
			} else {
				out += static_cast<char>(c);
			}
		}
	}
	out += '"';
	return out;
}

bool is_tsdl_identifier(std::string_view s) noexcept
{
	if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (unsigned char c : s)
		if (!is_ident_char(c))
			return false;
	return true;
}

bool is_preamble_type_name(std::string_view s) noexcept
{
	static constexpr std::array<std::string_view, 11> kTypes = {
		"uint5_t",
		"uint8_t",
		"uint16_t",
		"uint32_t",
		"uint64_t",
		"int8_t",
		"int16_t",
		"int32_t",
		"int64_t",
		"uint27_clock_monotonic_t",
		"uint64_clock_monotonic_t",
	};
	for (std::string_view t : kTypes)
		if (s == t)
			return true;
	return false;
}

std::string tsdl_field_name(std::string_view name)
{
	if (name.empty())
		return "_field";
	std::string out;
	out.reserve(name.size() + 2);
	out += '_';
	for (unsigned char c : name)
		out += is_ident_char(c) ? static_cast<char>(c) : '_';
	if (is_tsdl_keyword(out))
		out += '_';
	return out;
}

std::string FieldNameSet::unique(std::string name)
{
	if (used_.insert(name).second)
		return name;
	for (unsigned n = 2;; ++n) {
		std::string candidate = name + "_" + std::to_string(n);
		if (used_.insert(candidate).second)
			return candidate;
	}
}

} // namespace tracery::ctf
