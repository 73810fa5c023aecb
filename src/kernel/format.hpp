// kernel/format.hpp — parsers of tracefs's layout descriptions: the ring
// buffer's page header (events/header_page), its event header
// (events/header_event) and each event's payload (events/SYS/NAME/format).
//
// These are text the kernel writes, read by a privileged daemon: they are
// parsed as untrusted input. Every loop is bounded by the text, sizes and
// offsets are range-checked, and anything unexpected is a FormatError whose
// message names the file's line and what is wrong with it — never a crash.
//
// An event's format file:
//
//   name: sched_switch
//   ID: 372
//   format:
//   <TAB>field:unsigned short common_type;<TAB>offset:0;<TAB>size:2;<TAB>signed:0;
//   ...                                         (common_* fields, blank line)
//   <TAB>field:char prev_comm[16];<TAB>offset:8;<TAB>size:16;<TAB>signed:0;
//   <TAB>field:__data_loc char[] name;<TAB>offset:8;<TAB>size:4;<TAB>signed:0;
//   ...
//   print fmt: "..."
//
// A `__data_loc` field is a u32 in the fixed part: offset (low 16 bits, from
// the payload start) and length (high 16 bits) of variable data; a
// `__rel_loc` field the same with the offset counted from the end of the
// field itself.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::kernel {

class FormatError : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// Limits on what a format file may describe (the kernel's largest event on
// this machine has 40 fields; a payload never exceeds a page).
inline constexpr size_t kMaxFormatText = 1 << 20;
inline constexpr size_t kMaxFields = 512;
inline constexpr uint32_t kMaxPayload = 1 << 16;

enum class FieldKind : uint8_t {
	scalar,   // integer of 1, 2, 4 or 8 bytes (pointers too)
	array,    // array_length elements of elem_size bytes (char[16]: a string)
	data_loc, // u32 offset | length << 16, offset from the payload start
	rel_loc,  // same, offset from the end of this field
	trailing, // "char buf[]" of size 0: elements up to the payload's end
};

struct FieldFormat {
	std::string name;
	std::string type; // the C type as written, without the name and "[N]"
	uint32_t offset = 0;
	uint32_t size = 0;
	bool is_signed = false;
	FieldKind kind = FieldKind::scalar;
	uint32_t elem_size = 0;    // array, data_loc, rel_loc, trailing: bytes per element
	uint32_t array_length = 0; // array: number of elements
	bool is_char = false;      // elements are char: a NUL-terminated string
};

struct EventFormat {
	std::string system;
	std::string name;
	uint32_t id = 0;
	std::vector<FieldFormat> common_fields; // common_type, common_flags, ...
	std::vector<FieldFormat> fields;        // the event's own fields

	// The bytes every payload of this event holds (end of its last fixed
	// field): a shorter payload is malformed.
	uint32_t fixed_size() const noexcept;
	const FieldFormat *field(std::string_view name) const noexcept;
};

// Parses events/SYSTEM/NAME/format. Throws FormatError.
EventFormat parse_event_format(std::string_view text, std::string_view system);

// events/header_page: where a page's timestamp, commit word and data are.
struct PageHeaderFormat {
	uint32_t timestamp_offset = 0; // u64
	uint32_t commit_offset = 0;
	uint32_t commit_size = 0; // 4 or 8 (local_t)
	uint32_t data_offset = 0;
	uint32_t data_size = 0; // bytes of data a page can hold

	uint32_t page_size() const noexcept { return data_offset + data_size; }
};

// Throws FormatError unless the timestamp is a u64, the commit word 4 or 8
// bytes and the three do not overlap (a page is at most kMaxPayload bytes,
// as every field).
PageHeaderFormat parse_header_page(std::string_view text);

// events/header_event: the bits of an event header word and the type_len
// values with a special meaning.
struct EventHeaderFormat {
	uint32_t type_len_bits = 0;
	uint32_t time_delta_bits = 0;
	uint32_t padding = 0;     // type == 29
	uint32_t time_extend = 0; // type == 30
	uint32_t time_stamp = 0;  // type == 31
	uint32_t data_max = 0;    // data max type_len == 28
};

// Throws FormatError if a line is missing or unreadable, or if the bits do
// not add up to 32 or the special types overlap the data ones.
EventHeaderFormat parse_header_event(std::string_view text);

} // namespace tracery::kernel
