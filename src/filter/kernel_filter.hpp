// filter/kernel_filter.hpp — a Tracery filter expression (filter/parser.hpp)
// as the kernel's event filter (the instance's events/SYSTEM/NAME/filter),
// so that `enable-event -k --filter` is evaluated where the event happens
// and a rejected event takes no buffer space.
//
// The kernel's filters compare one field with one constant and combine such
// predicates with && || ! and parentheses: integers with == != < <= > >=
// and & (a bit test), strings with == != (exact) and ~ (glob). Translated:
//
//   field OP integer, integer OP field     field OP' integer-bias (flipped)
//   signed argument OP integer             the raw ranges that hold the
//                                          values OP selects: `dfd == -100`
//                                          is (dfd == 4294967196 ||
//                                          dfd == 18446744073709551516)
//   field & integer, (field & integer) != 0, == 0   field & integer, !(...)
//   field (integer, as a truth value)      field != -bias
//   field == "text", != "text"             field == "text", != "text"
//   field == "a*b" (a '*' glob)            field ~ "a*b", !(field ~ "a*b")
//   $ctx.procname, $ctx.cpu_id, $ctx.vtid  COMM, CPU, common_pid
//   && || ! ( )                            the same
//
// Fields are named as in the trace (LTTng's names: prev_tid, prio - 100);
// KernelField says which tracefs field holds each and with what bias.
// Anything else is refused, with the expression and a caret under the
// part the kernel cannot take, never widened: arithmetic, two fields
// compared, floats, array elements, $ctx.vpid (the kernel sees threads),
// fields Tracery computes (a thread's process id), a negative constant
// for an unsigned field, a constant out of a signed argument's range, string globs with ? or [ (the kernel's glob would
// read them as wildcards) or mixing '*' and "\*", quotes or backslashes in
// a string (the kernel's filter strings have no escapes).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/parser.hpp"

namespace tracery::filter {

struct KernelField {
	std::string name;    // as the trace names it
	std::string tracefs; // the format file's field name
	enum class Kind : uint8_t { integer, string, other } kind = Kind::integer;
	bool is_signed = false; // as the format file says (how the kernel compares it)
	int64_t bias = 0;       // trace value = tracefs value + bias
	bool computed = false;  // the trace's value is not the kernel's (a tid's tgid)
	// A signed value in an unsigned tracefs field of 8 bytes (a system
	// call's argument: tracefs declares each an unsigned long, its C type
	// may say int or long): its bits, 0 if none. The trace's value is the
	// field's low `signed_bits` bits, sign-extended; the kernel's field
	// holds them zero- or sign-extended (how the caller's register held
	// them), and a comparison takes both.
	uint8_t signed_bits = 0;
};

// The kernel filter text, or nullopt with *error set (its position in
// `expression`, for render_error()); *missing_field tells whether
// the refusal was a field this event does not have (a rule naming several
// events may filter on a field that only some of them have).
std::optional<std::string> kernel_filter(std::string_view expression, std::span<const KernelField> fields, Error *error,
                                         bool *missing_field = nullptr);

// The kernel's filter text is at most this long.
inline constexpr size_t kMaxKernelFilter = 4096;

} // namespace tracery::filter
