// kernel/syscall_args.hpp — system-call arguments as lttng-modules records
// them: which fields a syscall_entry_NAME event has (lttng-modules'
// instrumentation, syscall_table.inc), their integer types from the
// declared C type (tracefs says `int dfd` with size 8 and signed 0: every
// argument is an unsigned long in its record), and which of them are
// strings in the calling process's memory.
//
// lttng-modules records an entry's `in` and `inout` arguments (an `out`
// argument, such as read's `buf`, belongs to its exit event); integers as
// their C type (int: s32, umode_t: u16, size_t: u64, pointers: u64 in base
// 10, a few in base 16), user strings as strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tracery::kernel {

// A C integer type's size and signedness (pointers: 8, unsigned). nullopt
// for a type that is not an integer this table knows.
struct CIntegerType {
	uint8_t size = 8;
	bool is_signed = false;
};
std::optional<CIntegerType> c_integer_type(std::string_view c_type);

struct SyscallField {
	enum class Kind : uint8_t { integer, hex, string };
	enum class Direction : uint8_t { in, out, inout };
	const char *name;
	const char *c_type; // "" for a string
	Kind kind;
	Direction direction;
};

struct SyscallFields {
	const char *name;
	std::vector<SyscallField> fields; // in lttng-modules' order
};

// lttng-modules' fields of system call `name` (without sys_enter_), or
// nullptr if its instrumentation does not know the call.
const SyscallFields *lttng_syscall_fields(std::string_view name);

} // namespace tracery::kernel
