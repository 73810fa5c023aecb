// kernel/fuzz/fuzz_format.cpp — libFuzzer target: arbitrary bytes as the
// text of a tracefs layout file, which a privileged daemon reads (the first
// byte chooses which: an event's format, events/header_page or
// events/header_event). Checks that the parser either refuses the text with
// FormatError or returns a layout within its limits: every field inside
// kMaxPayload, arrays that fill their bytes, 4-byte __data_loc words, unique
// names, at most kMaxFields fields; a page whose header parts do not
// overlap; an event header word of 32 bits with distinct special types.
#include "base/fuzz_check.hpp"
#include "kernel/format.hpp"

#include <set>
#include <string_view>

using namespace tracery::kernel;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_format", what); }

void check_field(const FieldFormat &f)
{
	check(!f.name.empty() && !f.type.empty(), "a field without name or type");
	check(f.offset <= kMaxPayload && f.size <= kMaxPayload - f.offset, "a field beyond the payload limit");
	switch (f.kind) {
	case FieldKind::scalar:
		check(f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8, "a scalar of an odd size");
		break;
	case FieldKind::array:
		check(f.elem_size > 0 && uint64_t{f.elem_size} * f.array_length == f.size, "an array not its bytes");
		break;
	case FieldKind::data_loc:
	case FieldKind::rel_loc:
		check(f.size == 4 && f.elem_size > 0, "a __data_loc word not of 4 bytes");
		break;
	case FieldKind::trailing:
		check(f.size == 0 && f.elem_size > 0, "a flexible array with bytes");
		break;
	}
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
	try {
		switch (data[0] % 3) {
		case 0: {
			const EventFormat ev = parse_event_format(text, "fuzz");
			check(!ev.name.empty(), "an event without a name");
			check(ev.common_fields.size() + ev.fields.size() <= kMaxFields, "too many fields");
			std::set<std::string> names;
			for (const auto *list : {&ev.common_fields, &ev.fields})
				for (const FieldFormat &f : *list) {
					check_field(f);
					check(names.insert(f.name).second, "two fields of one name");
					check(ev.field(f.name) == &f, "field() finds another field");
				}
			check(ev.fixed_size() <= kMaxPayload, "fixed size beyond the payload limit");
			break;
		}
		case 1: {
			const PageHeaderFormat p = parse_header_page(text);
			check(p.commit_size == 4 || p.commit_size == 8, "a commit word of an odd size");
			check(p.timestamp_offset + 8 <= p.data_offset &&
			              p.commit_offset + p.commit_size <= p.data_offset,
			      "header parts after the data");
			check(p.timestamp_offset + 8 <= p.commit_offset ||
			              p.commit_offset + p.commit_size <= p.timestamp_offset,
			      "timestamp and commit overlap");
			check(p.page_size() <= kMaxPayload, "a page beyond the limit");
			break;
		}
		default: {
			const EventHeaderFormat h = parse_header_event(text);
			check(h.type_len_bits + h.time_delta_bits == 32, "an event header word not of 32 bits");
			check(h.data_max < h.padding && h.data_max < h.time_extend && h.data_max < h.time_stamp,
			      "special types among the data types");
			check(h.padding != h.time_extend && h.padding != h.time_stamp && h.time_extend != h.time_stamp,
			      "special types overlap");
			break;
		}
		}
	} catch (const FormatError &) {
	}
	return 0;
}
