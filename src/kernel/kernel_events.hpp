// kernel/kernel_events.hpp — the CTF event classes of a kernel trace, made
// from the tracefs format of each enabled tracepoint with LTTng's kernel
// trace conventions, and the encoding of one tracefs payload as a CTF event.
//
// Conventions (facts from lttng-modules' include/instrumentation/events/,
// see README.md): syscalls:sys_enter_NAME becomes syscall_entry_NAME (its
// arguments), syscalls:sys_exit_NAME syscall_exit_NAME (ret); the sched
// events LTTng records take LTTng's names and field lists (tid for ftrace's
// pid, prio - 100, parent_pid/child_pid the thread group ids); any other
// tracepoint keeps its tracefs name and fields: integers by size and
// signedness, char arrays and __data_loc char[] as strings, other arrays as
// arrays (fixed) or sequences (variable), what fits none as bytes.
//
// The payload comes from a ring-buffer page: untrusted. A field outside the
// payload is written as 0, an empty string or an empty sequence, never read
// out of bounds; strings are cut at their NUL or their bound and made valid
// UTF-8.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ctf/metadata.hpp"
#include "filter/kernel_filter.hpp"
#include "kernel/format.hpp"

namespace tracery::kernel {

// The env entries that make readers treat a trace as an LTTng kernel trace
// (README.md says which reader looks at which): domain "kernel",
// tracer_name "lttng-modules" with the version whose event layout we
// follow, tracer_patchlevel, the kernel's uname, and tracery_version, the
// build that really wrote it.
std::vector<ctf::EnvEntry> lttng_kernel_identity();

// The version of lttng-modules whose conventions the trace follows.
inline constexpr int64_t kLttngModulesMajor = 2;
inline constexpr int64_t kLttngModulesMinor = 13;
inline constexpr int64_t kLttngModulesPatchlevel = 0;

// One field of a CTF event class.
struct CtfField {
	enum class Type : uint8_t { integer, string, array, sequence };
	std::string name; // without the TSDL '_' prefix
	Type type = Type::integer;
	uint8_t size = 4;       // bytes of the integer, or of each element
	bool is_signed = false; // of the integer or of the elements
	bool hex = false;       // displayed in base 16
	uint32_t length = 0;    // array: elements
};

// "event { name; id; stream_id; fields := struct { ... }; };" Sequences get
// a uint32_t count field "_NAME_length" before them, as lttng-modules names
// it (in TSDL "__NAME_length"; readers print "_NAME_length").
std::string event_class_tsdl(const std::string &name, uint32_t id, uint32_t stream_id,
                             std::span<const CtfField> fields);

// Where a field's value comes from in a tracefs payload.
struct FieldSource {
	FieldFormat format; // the tracefs field
	int64_t bias = 0;   // added to an integer (prio: -100)
	bool tgid = false;  // the value is a tid: write its thread group id
	// A system call's string argument: the user_string-th string the BPF
	// program read for the call (bpf/user_strings.hpp); -1: none.
	int8_t user_string = -1;
	// The field saying which of the event's strings could not be read
	// (bit i: string i): recorded empty, as lttng-modules records a string
	// it cannot read.
	bool unfetched_mask = false;
	// A part of the socket address in the record's slot `user_string`, as
	// lttng-modules' connect records it.
	enum class AddressPart : uint8_t { none, family, dport, v4addr, v6addr };
	AddressPart address_part = AddressPart::none;
	// The bytes of the record's slot `user_string` (a buffer: a sequence;
	// an fd pair: an array, zeros if it could not be read).
	bool slot_bytes = false;
	// An exit's argument: the value its entry had (the record's args[k]).
	int8_t record_arg = -1;
};

// What a session reads of the system calls' user memory with BPF
// (bpf/user_strings.hpp).
struct UserMemory {
	bool read = false;         // strings, socket addresses, the exits' out-arguments
	uint32_t buffer_bytes = 0; // read/write buffers: at most this many bytes (0: not read)
};

struct KernelEventClass {
	std::string name;        // CTF name
	uint32_t id = 0;         // CTF id in the kernel stream class
	uint16_t type = 0;       // tracefs ID (common_type)
	uint32_t fixed_size = 0; // a shorter payload is malformed
	std::vector<CtfField> fields;
	std::vector<FieldSource> sources; // one per field
	// What the BPF program copies at this call (its attach cookie,
	// bpf/user_strings.hpp: bit i, argument i is a string; a socket
	// address); 0 for every other event.
	uint64_t user_string_args = 0;
	// user_string_args is an exit's: its record is the exit's.
	bool exit_record = false;

	std::string tsdl(uint32_t stream_id) const { return event_class_tsdl(name, id, stream_id, fields); }
};

// The class of a tracepoint with the conventions above. A system call's
// entry takes lttng-modules' fields and integer types (syscall_args.hpp);
// when the session reads user memory (`memory.read`: bpf/user_strings.hpp)
// its string arguments are strings, followed by an `unfetched` mask, else
// the pointers' values; with `memory.buffer_bytes`, the entries of write,
// pwrite64, sendto and writev (its first iovec) end with `buf_data`, the
// buffer's first bytes. A system call's exit has `ret` and, when the
// session reads user memory, lttng-modules' out and inout arguments (the
// entry's values; pipe's, pipe2's and socketpair's fd pair and accept's
// address read at the exit, as lttng-modules' overrides record them), the
// exits of read, pread64 and recvfrom `buf_data` (what was read) with
// `memory.buffer_bytes`, and an `unfetched` mask whose bit 7 says the
// arguments are missing (0). Throws FormatError if the format's ID does not
// fit common_type (16 bits).
KernelEventClass make_event_class(const EventFormat &format, uint32_t id, UserMemory memory = {});

// The class's fields as filter::kernel_filter() names them: integers and strings
// by their trace names, with their tracefs field, bias and whether the
// trace's value is computed.
std::vector<filter::KernelField> filter_fields(const KernelEventClass &c);

// The thread group id of a thread (/proc/TID/status), or the tid itself if
// it is gone.
using TgidOf = std::function<int32_t(int32_t tid)>;
int32_t proc_tgid(int32_t tid);

struct SyscallSlots;

// Appends the CTF payload of one event of class `c` to `out`; the strings
// of a class with user_string_args come from `record`, what the BPF program
// read for the call (none, or an exit's record saying its entry's arguments
// were missing: empty, their bits set in `unfetched`).
void encode_payload(const KernelEventClass &c, std::span<const uint8_t> payload, const TgidOf &tgid_of,
                    std::vector<uint8_t> &out, const SyscallSlots *record = nullptr);

// Little-endian appends, shared with the state dump.
void put_integer(std::vector<uint8_t> &out, uint64_t value, unsigned size);
// The bytes up to the first NUL (at most n), made valid UTF-8, and a NUL.
void put_string(std::vector<uint8_t> &out, const uint8_t *p, size_t n);

} // namespace tracery::kernel
