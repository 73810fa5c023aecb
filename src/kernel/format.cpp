// kernel/format.cpp — see format.hpp.
#include "kernel/format.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_set>

namespace tracery::kernel {

namespace {

std::string_view trim(std::string_view s)
{
	while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
		s.remove_prefix(1);
	while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
		s.remove_suffix(1);
	return s;
}

bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::optional<uint32_t> parse_u32(std::string_view s)
{
	uint32_t v = 0;
	const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
	if (ec != std::errc() || end != s.data() + s.size() || s.empty())
		return std::nullopt;
	return v;
}

// Walks a text line by line, counting lines for the messages.
class Lines {
public:
	Lines(std::string_view text, std::string what) : text_(text), what_(std::move(what))
	{
		if (text.size() > kMaxFormatText)
			throw FormatError(what_ + ": longer than " + std::to_string(kMaxFormatText) + " bytes");
	}
	bool next(std::string_view &line)
	{
		if (pos_ >= text_.size())
			return false;
		size_t end = text_.find('\n', pos_);
		if (end == std::string_view::npos)
			end = text_.size();
		line = text_.substr(pos_, end - pos_);
		pos_ = end + 1;
		++number_;
		return true;
	}
	[[noreturn]] void fail(const std::string &why) const
	{
		throw FormatError(what_ + ", line " + std::to_string(number_) + ": " + why);
	}
	[[noreturn]] void fail_at_end(const std::string &why) const { throw FormatError(what_ + ": " + why); }

private:
	std::string_view text_;
	std::string what_;
	size_t pos_ = 0;
	size_t number_ = 0;
};

// Bytes of one value of a C type as the kernel's formats write them, 0 if
// not known. Pointers and longs are 8 bytes (64-bit kernels only).
uint32_t c_type_size(std::string_view type)
{
	if (type.find('*') != std::string_view::npos)
		return 8;
	// The last word names the size ("unsigned int", "const char", "u64").
	const size_t space = type.find_last_of(' ');
	const std::string_view word = space == std::string_view::npos ? type : type.substr(space + 1);
	static constexpr std::pair<std::string_view, uint32_t> kSizes[] = {
		{"char", 1},  {"bool", 1},  {"_Bool", 1},  {"u8", 1},     {"s8", 1},    {"__u8", 1}, {"__s8", 1},
		{"short", 2}, {"u16", 2},   {"s16", 2},    {"__u16", 2},  {"__s16", 2}, {"int", 4},  {"u32", 4},
		{"s32", 4},   {"__u32", 4}, {"__s32", 4},  {"pid_t", 4},  {"long", 8},  {"u64", 8},  {"s64", 8},
		{"__u64", 8}, {"__s64", 8}, {"size_t", 8}, {"ssize_t", 8}};
	for (const auto &[name, size] : kSizes)
		if (word == name)
			return size;
	return 0;
}

bool is_char_type(std::string_view type)
{
	type = trim(type);
	if (type.starts_with("const "))
		type = trim(type.substr(6));
	return type == "char";
}

// "field:DECL;<TAB>offset:N;<TAB>size:N;<TAB>signed:N;" (signed optional).
FieldFormat parse_field(std::string_view line, const Lines &lines)
{
	line = trim(line);
	if (!line.starts_with("field:"))
		lines.fail("expected 'field:', found '" + std::string(line.substr(0, 40)) + "'");
	FieldFormat f;
	std::optional<uint32_t> offset, size, is_signed;
	std::string_view decl;
	size_t pos = 0;
	for (int item = 0; pos < line.size(); ++item) {
		size_t end = line.find(';', pos);
		if (end == std::string_view::npos)
			lines.fail("a field item without its ';'");
		const std::string_view part = trim(line.substr(pos, end - pos));
		pos = end + 1;
		const size_t colon = part.find(':');
		if (colon == std::string_view::npos)
			lines.fail("a field item without ':' ('" + std::string(part) + "')");
		const std::string_view key = trim(part.substr(0, colon)), value = trim(part.substr(colon + 1));
		if (item == 0) {
			decl = value;
			continue;
		}
		std::optional<uint32_t> *slot = key == "offset"   ? &offset
		                                : key == "size"   ? &size
		                                : key == "signed" ? &is_signed
		                                                  : nullptr;
		if (!slot)
			continue; // a key newer kernels may add
		if (slot->has_value())
			lines.fail("'" + std::string(key) + "' given twice");
		*slot = parse_u32(value);
		if (!slot->has_value())
			lines.fail("'" + std::string(key) + "' is not a number: '" + std::string(value) + "'");
	}
	if (!offset || !size)
		lines.fail("a field without offset or size");
	if (is_signed && *is_signed > 1)
		lines.fail("signed is neither 0 nor 1");
	f.offset = *offset;
	f.size = *size;
	f.is_signed = is_signed.value_or(0) == 1;
	if (f.offset > kMaxPayload || f.size > kMaxPayload - f.offset)
		lines.fail("field beyond " + std::to_string(kMaxPayload) + " bytes (offset " +
		           std::to_string(f.offset) + ", size " + std::to_string(f.size) + ")");

	if (decl.starts_with("__data_loc ")) {
		f.kind = FieldKind::data_loc;
		decl = trim(decl.substr(11));
	} else if (decl.starts_with("__rel_loc ")) {
		f.kind = FieldKind::rel_loc;
		decl = trim(decl.substr(10));
	}
	// The name: the identifier at the end, before any "[N]".
	std::string_view length_text;
	bool bracket = false;
	if (f.kind == FieldKind::scalar && decl.ends_with(']')) {
		const size_t open = decl.rfind('[');
		if (open == std::string_view::npos)
			lines.fail("']' without '['");
		length_text = trim(decl.substr(open + 1, decl.size() - open - 2));
		decl = trim(decl.substr(0, open));
		bracket = true;
	}
	size_t name_start = decl.size();
	while (name_start > 0 && is_ident_char(decl[name_start - 1]))
		--name_start;
	const std::string_view name = decl.substr(name_start);
	std::string_view type = trim(decl.substr(0, name_start));
	if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
		lines.fail("no field name in '" + std::string(decl) + "'");
	if (type.empty())
		lines.fail("no type for field '" + std::string(name) + "'");
	f.name = name;

	if (f.kind == FieldKind::data_loc || f.kind == FieldKind::rel_loc) {
		// "char[] name": the element type before "[]".
		if (type.ends_with("[]"))
			type = trim(type.substr(0, type.size() - 2));
		if (f.size != 4)
			lines.fail("a __data_loc/__rel_loc field of " + std::to_string(f.size) + " bytes, not 4");
		f.type = type;
		f.elem_size = std::max<uint32_t>(c_type_size(type), 1);
		f.is_char = is_char_type(type);
		return f;
	}
	f.type = type;
	if (bracket && length_text.empty()) {
		if (f.size != 0)
			lines.fail("a flexible array '" + f.name + "' of " + std::to_string(f.size) + " bytes, not 0");
		f.kind = FieldKind::trailing;
		f.elem_size = std::max<uint32_t>(c_type_size(type), 1);
		f.is_char = is_char_type(type);
		return f;
	}
	if (f.size == 0)
		lines.fail("field '" + f.name + "' of 0 bytes");
	if (bracket) {
		f.kind = FieldKind::array;
		if (const std::optional<uint32_t> n = parse_u32(length_text)) {
			if (*n == 0 || f.size % *n != 0)
				lines.fail("array '" + f.name + "' of " + std::to_string(*n) + " elements in " +
				           std::to_string(f.size) + " bytes");
			f.array_length = *n;
			f.elem_size = f.size / *n;
		} else {
			// A length written as a macro (TASK_COMM_LEN): from the type.
			f.elem_size = c_type_size(type);
			if (f.elem_size == 0 || f.size % f.elem_size != 0)
				lines.fail("array '" + f.name + "' of unknown element size ('" + std::string(type) +
				           "')");
			f.array_length = f.size / f.elem_size;
		}
		f.is_char = f.elem_size == 1 && is_char_type(type);
		return f;
	}
	if (f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8) {
		// A struct or a wider value: opaque bytes.
		f.kind = FieldKind::array;
		f.elem_size = 1;
		f.array_length = f.size;
	}
	return f;
}

} // namespace

uint32_t EventFormat::fixed_size() const noexcept
{
	uint32_t end = 0;
	for (const auto *list : {&common_fields, &fields})
		for (const FieldFormat &f : *list)
			end = std::max(end, f.offset + f.size);
	return end;
}

const FieldFormat *EventFormat::field(std::string_view name) const noexcept
{
	for (const auto *list : {&common_fields, &fields})
		for (const FieldFormat &f : *list)
			if (f.name == name)
				return &f;
	return nullptr;
}

EventFormat parse_event_format(std::string_view text, std::string_view system)
{
	Lines lines(text, "format of " + std::string(system) + " event");
	EventFormat ev;
	ev.system = system;
	bool have_id = false, in_format = false;
	std::unordered_set<std::string> names;
	std::string_view line;
	while (lines.next(line)) {
		const std::string_view t = trim(line);
		if (!in_format) {
			if (t.starts_with("name:")) {
				if (!ev.name.empty())
					lines.fail("a second 'name:'");
				ev.name = trim(t.substr(5));
				if (ev.name.empty() || !std::all_of(ev.name.begin(), ev.name.end(),
				                                    [](char c) { return is_ident_char(c); }))
					lines.fail("event name '" + ev.name + "' is not an identifier");
			} else if (t.starts_with("ID:")) {
				const std::optional<uint32_t> id = parse_u32(trim(t.substr(3)));
				if (!id || *id > 0xffff || have_id)
					lines.fail("bad or repeated ID '" + std::string(t.substr(3)) + "'");
				ev.id = *id;
				have_id = true;
			} else if (t == "format:") {
				in_format = true;
			} else if (!t.empty()) {
				lines.fail("expected 'name:', 'ID:' or 'format:'");
			}
			continue;
		}
		if (t.empty())
			continue;
		if (t.starts_with("print fmt:"))
			break;
		FieldFormat f = parse_field(t, lines);
		if (!names.insert(f.name).second)
			lines.fail("field '" + f.name + "' given twice");
		if (ev.common_fields.size() + ev.fields.size() == kMaxFields)
			lines.fail("more than " + std::to_string(kMaxFields) + " fields");
		(f.name.starts_with("common_") ? ev.common_fields : ev.fields).push_back(std::move(f));
	}
	if (ev.name.empty() || !have_id || !in_format)
		lines.fail_at_end("no 'name:', 'ID:' or 'format:' line");
	return ev;
}

PageHeaderFormat parse_header_page(std::string_view text)
{
	Lines lines(text, "events/header_page");
	std::optional<FieldFormat> timestamp, commit, data;
	std::string_view line;
	while (lines.next(line)) {
		if (trim(line).empty())
			continue;
		FieldFormat f = parse_field(line, lines);
		std::optional<FieldFormat> *slot = f.name == "timestamp" ? &timestamp
		                                   : f.name == "commit"  ? &commit
		                                   : f.name == "data"    ? &data
		                                                         : nullptr;
		if (!slot)
			continue; // "overwrite": a flag inside the commit word
		if (slot->has_value())
			lines.fail("field '" + f.name + "' given twice");
		*slot = std::move(f);
	}
	if (!timestamp || !commit || !data)
		lines.fail_at_end("no timestamp, commit or data field");
	if (timestamp->size != 8)
		lines.fail_at_end("a timestamp of " + std::to_string(timestamp->size) + " bytes, not 8");
	if (commit->size != 4 && commit->size != 8)
		lines.fail_at_end("a commit word of " + std::to_string(commit->size) + " bytes, not 4 or 8");
	const uint32_t header_end = std::max(timestamp->offset + 8, commit->offset + commit->size);
	const bool overlap =
		timestamp->offset < commit->offset + commit->size && commit->offset < timestamp->offset + 8;
	if (overlap || data->offset < header_end)
		lines.fail_at_end("timestamp, commit and data overlap");
	if (data->offset % 4 != 0)
		lines.fail_at_end("data not 4-byte aligned");
	return {timestamp->offset, commit->offset, commit->size, data->offset, data->size};
}

EventHeaderFormat parse_header_event(std::string_view text)
{
	Lines lines(text, "events/header_event");
	std::optional<uint32_t> type_len, time_delta, padding, time_extend, time_stamp, data_max;
	std::string_view line;
	while (lines.next(line)) {
		const std::string_view t = trim(line);
		if (t.empty() || t.front() == '#')
			continue;
		std::optional<uint32_t> *slot = nullptr;
		std::string_view value;
		if (t.starts_with("data max type_len")) {
			const size_t eq = t.find("==");
			if (eq == std::string_view::npos)
				lines.fail("no '==' after 'data max type_len'");
			slot = &data_max;
			value = trim(t.substr(eq + 2));
		} else {
			const size_t colon = t.find(':');
			if (colon == std::string_view::npos)
				lines.fail("expected 'KEY : VALUE'");
			const std::string_view key = trim(t.substr(0, colon));
			value = trim(t.substr(colon + 1));
			slot = key == "type_len"      ? &type_len
			       : key == "time_delta"  ? &time_delta
			       : key == "padding"     ? &padding
			       : key == "time_extend" ? &time_extend
			       : key == "time_stamp"  ? &time_stamp
			                              : nullptr;
			if (!slot)
				continue; // "array : 32 bits" and anything newer
			if (slot == &type_len || slot == &time_delta) {
				if (!value.ends_with("bits"))
					lines.fail("expected 'N bits'");
				value = trim(value.substr(0, value.size() - 4));
			} else {
				if (!value.starts_with("type =="))
					lines.fail("expected 'type == N'");
				value = trim(value.substr(7));
			}
		}
		if (slot->has_value())
			lines.fail("given twice");
		*slot = parse_u32(value);
		if (!slot->has_value())
			lines.fail("not a number: '" + std::string(value) + "'");
	}
	if (!type_len || !time_delta || !padding || !time_extend || !time_stamp || !data_max)
		lines.fail_at_end("type_len, time_delta, padding, time_extend, time_stamp or data max missing");
	const EventHeaderFormat h{*type_len, *time_delta, *padding, *time_extend, *time_stamp, *data_max};
	if (h.type_len_bits == 0 || h.type_len_bits > 8 || h.type_len_bits + h.time_delta_bits != 32)
		lines.fail_at_end("type_len and time_delta bits do not make a 32-bit word");
	const uint32_t types = 1u << h.type_len_bits;
	if (h.data_max == 0 || h.data_max >= h.padding || h.padding >= types || h.time_extend >= types ||
	    h.time_stamp >= types || h.time_extend <= h.data_max || h.time_stamp <= h.data_max ||
	    h.padding == h.time_extend || h.padding == h.time_stamp || h.time_extend == h.time_stamp)
		lines.fail_at_end("special types overlap the data types or each other");
	return h;
}

} // namespace tracery::kernel
