// kernel/kernel_events.cpp — see kernel_events.hpp.
#include "kernel/kernel_events.hpp"

#include <sys/utsname.h>

#include <cstring>
#include <fstream>
#include <string_view>

#include "base/byte_order.hpp"
#include "base/utf8.hpp"
#include "ctf/tsdl.hpp"
#include "kernel/bpf/user_strings.hpp"
#include "kernel/fields.hpp"
#include "kernel/syscall_args.hpp"

#ifndef TRACERY_VERSION_STRING
#define TRACERY_VERSION_STRING "0.0.0"
#endif

namespace tracery::kernel {

namespace {

constexpr int64_t kMaxRtPrio = 100; // LTTng records prio - MAX_RT_PRIO

// An LTTng field: its name, the tracefs field it comes from, and how.
struct Renamed {
	const char *name;
	const char *from;
	int64_t bias = 0;
	bool tgid = false;
	bool optional = false; // absent from some kernels' format: left out then
};

struct LttngEvent {
	const char *tracepoint; // sched:NAME
	std::vector<Renamed> fields;
};

// lttng-modules include/instrumentation/events/sched.h, as ftrace's
// sched events carry them.
const std::vector<LttngEvent> &lttng_sched_events()
{
	static const std::vector<LttngEvent> events = [] {
		const std::vector<Renamed> wakeup = {
			{"comm", "comm"}, {"tid", "pid"}, {"prio", "prio", -kMaxRtPrio}, {"target_cpu", "target_cpu"}};
		const std::vector<Renamed> process = {{"comm", "comm"}, {"tid", "pid"}, {"prio", "prio", -kMaxRtPrio}};
		std::vector<LttngEvent> v = {
			{"sched_switch",
		         {{"prev_comm", "prev_comm"},
		          {"prev_tid", "prev_pid"},
		          {"prev_prio", "prev_prio", -kMaxRtPrio},
		          {"prev_state", "prev_state"},
		          {"next_comm", "next_comm"},
		          {"next_tid", "next_pid"},
		          {"next_prio", "next_prio", -kMaxRtPrio}}},
			{"sched_process_fork",
		         {{"parent_comm", "parent_comm"},
		          {"parent_tid", "parent_pid"},
		          {"parent_pid", "parent_pid", 0, true},
		          {"child_comm", "child_comm"},
		          {"child_tid", "child_pid"},
		          {"child_pid", "child_pid", 0, true}}},
			{"sched_process_exec", {{"filename", "filename"}, {"tid", "pid"}, {"old_tid", "old_pid"}}},
			{"sched_process_exit",
		         {{"comm", "comm"},
		          {"tid", "pid"},
		          {"prio", "prio", -kMaxRtPrio},
		          {"group_dead", "group_dead", 0, false, true}}},
			{"sched_process_free", process},
			{"sched_process_wait", process},
			{"sched_wait_task", process},
			{"sched_waking", wakeup},
			{"sched_wakeup", wakeup},
			{"sched_wakeup_new", wakeup},
			{"sched_migrate_task",
		         {{"comm", "comm"},
		          {"tid", "pid"},
		          {"prio", "prio", -kMaxRtPrio},
		          {"orig_cpu", "orig_cpu"},
		          {"dest_cpu", "dest_cpu"}}},
			{"sched_pi_setprio",
		         {{"comm", "comm"},
		          {"tid", "pid"},
		          {"oldprio", "oldprio", -kMaxRtPrio},
		          {"newprio", "newprio", -kMaxRtPrio}}},
			{"sched_kthread_stop", {{"comm", "comm"}, {"tid", "pid"}}},
			{"sched_stat_runtime",
		         {{"comm", "comm"},
		          {"tid", "pid"},
		          {"runtime", "runtime"},
		          {"vruntime", "vruntime", 0, false, true}}},
		};
		for (const char *stat :
		     {"sched_stat_wait", "sched_stat_sleep", "sched_stat_iowait", "sched_stat_blocked"})
			v.push_back({stat, {{"comm", "comm"}, {"tid", "pid"}, {"delay", "delay"}}});
		return v;
	}();
	return events;
}

// The CTF field of a tracefs field, keeping its name and type.
CtfField ctf_field(const FieldFormat &f, std::string name)
{
	CtfField c;
	c.name = std::move(name);
	c.is_signed = f.is_signed;
	const auto integer_size = [](uint32_t s) { return s == 1 || s == 2 || s == 4 || s == 8; };
	switch (f.kind) {
	case FieldKind::scalar:
		if (integer_size(f.size)) {
			c.type = CtfField::Type::integer;
			c.size = static_cast<uint8_t>(f.size);
			return c;
		}
		break;
	case FieldKind::array:
		if (f.is_char) {
			c.type = CtfField::Type::string;
			return c;
		}
		if (integer_size(f.elem_size)) {
			c.type = CtfField::Type::array;
			c.size = static_cast<uint8_t>(f.elem_size);
			c.length = f.array_length;
			return c;
		}
		break;
	case FieldKind::data_loc:
	case FieldKind::rel_loc:
	case FieldKind::trailing:
		if (f.is_char) {
			c.type = CtfField::Type::string;
			return c;
		}
		if (integer_size(f.elem_size)) {
			c.type = CtfField::Type::sequence;
			c.size = static_cast<uint8_t>(f.elem_size);
			return c;
		}
		break;
	}
	// Anything else: its bytes.
	c.type = CtfField::Type::sequence;
	c.size = 1;
	c.is_signed = false;
	c.hex = true;
	return c;
}

const char *integer_type(uint8_t size, bool is_signed)
{
	switch (size) {
	case 1:
		return is_signed ? "int8_t" : "uint8_t";
	case 2:
		return is_signed ? "int16_t" : "uint16_t";
	case 4:
		return is_signed ? "int32_t" : "uint32_t";
	default:
		return is_signed ? "int64_t" : "uint64_t";
	}
}

std::string tsdl_integer(const CtfField &f)
{
	if (!f.hex)
		return integer_type(f.size, f.is_signed);
	return "integer { size = " + std::to_string(f.size * 8) +
	       "; align = 8; signed = " + (f.is_signed ? "true" : "false") + "; base = 16; }";
}

// An argument of a system call's entry: an integer of its declared C type
// (tracefs records every argument as an unsigned long).
CtfField syscall_integer(const FieldFormat &f, std::string_view c_type, bool hex)
{
	CtfField field = ctf_field(f, f.name);
	if (f.kind != FieldKind::scalar)
		return field;
	if (const std::optional<CIntegerType> t = c_integer_type(c_type)) {
		field.size = t->size;
		field.is_signed = t->is_signed;
	}
	field.hex = hex;
	return field;
}

// connect's address as lttng-modules records it (its override of the
// call's instrumentation): family, dport, v4addr (4 bytes) or v6addr (8
// u16), from the bytes the BPF program copies at `address_arg` (of the
// length at `length_arg`) into slot `slot`.
void add_connect_address(KernelEventClass &c, size_t address_arg, size_t length_arg, int8_t slot,
                         const char *port = "dport")
{
	using Part = FieldSource::AddressPart;
	if (address_arg >= 6 || length_arg >= 6)
		return;
	const auto add = [&](const char *name, CtfField::Type type, uint8_t size, Part part) {
		c.fields.push_back({name, type, size, false});
		FieldSource s;
		s.user_string = slot;
		s.address_part = part;
		c.sources.push_back(s);
	};
	add("family", CtfField::Type::integer, 2, Part::family);
	add(port, CtfField::Type::integer, 2, Part::dport);
	add("v4addr", CtfField::Type::sequence, 1, Part::v4addr);
	add("v6addr", CtfField::Type::sequence, 2, Part::v6addr);
	c.user_string_args |= address_cookie(address_arg, length_arg);
}

// Appends one part of a socket address (sockaddr bytes, untrusted) as
// lttng-modules records it: the family if the bytes hold one; the port and
// address of an AF_INET or AF_INET6 address long enough for its structure,
// else 0 and empty sequences.
void put_address_part(std::vector<uint8_t> &out, FieldSource::AddressPart part, std::string_view a)
{
	constexpr uint16_t kInet = 2, kInet6 = 10;
	constexpr size_t kInetSize = 16, kInet6Size = 28;
	const auto u8 = [&](size_t i) { return static_cast<uint8_t>(a[i]); };
	const auto be16 = [&](size_t i) { return static_cast<uint16_t>(u8(i) << 8 | u8(i + 1)); };
	const uint16_t family = a.size() >= 2 ? static_cast<uint16_t>(u8(0) | u8(1) << 8) : 0;
	const bool inet = family == kInet && a.size() >= kInetSize;
	const bool inet6 = family == kInet6 && a.size() >= kInet6Size;
	switch (part) {
	case FieldSource::AddressPart::family:
		put_integer(out, family, 2);
		break;
	case FieldSource::AddressPart::dport:
		put_integer(out, inet || inet6 ? be16(2) : 0, 2);
		break;
	case FieldSource::AddressPart::v4addr:
		put_integer(out, inet ? 4 : 0, 4);
		for (size_t i = 0; inet && i < 4; ++i)
			out.push_back(u8(4 + i));
		break;
	case FieldSource::AddressPart::v6addr:
		put_integer(out, inet6 ? 8 : 0, 4);
		for (size_t i = 0; inet6 && i < 8; ++i)
			put_integer(out, be16(8 + 2 * i), 2);
		break;
	case FieldSource::AddressPart::none:
		break;
	}
}

// A system call entry's fields: lttng-modules' when its table has the call
// and this kernel's format has each of them, else the format's arguments
// with their C types.
// The bytes of the record's slot `slot` as a field: `buf_data`, a
// sequence of uint8 (a read or written buffer), or an fd pair.
void add_slot_bytes(KernelEventClass &c, CtfField field, int8_t slot)
{
	c.fields.push_back(std::move(field));
	FieldSource s;
	s.user_string = slot;
	s.slot_bytes = true;
	c.sources.push_back(s);
}

void add_buffer_data(KernelEventClass &c, int8_t slot)
{
	add_slot_bytes(c, {"buf_data", CtfField::Type::sequence, 1, false}, slot);
}

void add_unfetched(KernelEventClass &c)
{
	c.fields.push_back({"unfetched", CtfField::Type::integer, 1, false});
	FieldSource mask;
	mask.unfetched_mask = true;
	c.sources.push_back(mask);
}

// The calls whose buffer argument is written out by the call: its
// argument and the argument of its length (kFixedLength: an iovec array,
// whose first element is taken).
struct WrittenBuffer {
	std::string_view call, buffer, length;
};
constexpr WrittenBuffer kWrittenBuffers[] = {
	{"write", "buf", "count"}, {"pwrite64", "buf", "count"}, {"sendto", "buff", "len"}, {"writev", "vec", ""}};
// The calls that read into their buffer argument (its index).
constexpr std::pair<std::string_view, size_t> kReadBuffers[] = {{"read", 1}, {"pread64", 1}, {"recvfrom", 1}};

void add_syscall_entry_fields(KernelEventClass &c, const EventFormat &format, const UserMemory &memory)
{
	const bool user_strings = memory.read;
	std::vector<std::string_view> args; // the format's arguments, in order
	for (const FieldFormat &f : format.fields)
		if (f.name != "__syscall_nr")
			args.push_back(f.name);
	const auto arg_index = [&](std::string_view name) {
		return static_cast<size_t>(std::find(args.begin(), args.end(), name) - args.begin());
	};
	const std::string_view name = std::string_view(format.name).substr(std::string_view("sys_enter_").size());
	const SyscallFields *lttng = lttng_syscall_fields(name);
	bool known = lttng != nullptr;
	for (size_t i = 0; known && i < lttng->fields.size(); ++i)
		known = format.field(lttng->fields[i].name) != nullptr && arg_index(lttng->fields[i].name) < 6;
	if (!known) {
		for (const FieldFormat &f : format.fields)
			if (f.name != "__syscall_nr") {
				c.fields.push_back(syscall_integer(f, f.type, false));
				c.sources.push_back({f});
			}
		return;
	}
	int8_t strings = 0;
	const bool accept = name == "accept" || name == "accept4";
	for (const SyscallField &sf : lttng->fields) {
		// recorded at the exit by lttng-modules (accept's address pointer
		// at the entry, by its override)
		if (sf.direction == SyscallField::Direction::out &&
		    !(accept && sf.name == std::string_view("upeer_sockaddr")))
			continue;
		const FieldFormat &f = *format.field(sf.name);
		if (sf.kind == SyscallField::Kind::string && user_strings && strings < kMaxUserStrings) {
			CtfField field;
			field.name = f.name;
			field.type = CtfField::Type::string;
			c.fields.push_back(field);
			c.sources.push_back({f, 0, false, strings++});
			c.user_string_args |= uint64_t{1} << arg_index(sf.name);
		} else {
			c.fields.push_back(syscall_integer(f,
			                                   sf.kind == SyscallField::Kind::string ? f.type : sf.c_type,
			                                   sf.kind == SyscallField::Kind::hex));
			c.sources.push_back({f});
		}
	}
	if (name == "connect" && user_strings) {
		for (CtfField &f : c.fields)
			f.hex = f.hex || f.name == "uservaddr" || f.name == "addrlen"; // as its override has them
		add_connect_address(c, arg_index("uservaddr"), arg_index("addrlen"), strings);
	}
	if (accept)
		for (CtfField &f : c.fields)
			f.hex = f.hex || f.name == "upeer_sockaddr" || (name == "accept4" && f.name == "flags");
	if (user_strings && memory.buffer_bytes > 0)
		for (const WrittenBuffer &w : kWrittenBuffers) {
			if (w.call != name)
				continue;
			const size_t buffer = arg_index(w.buffer);
			const bool iovec = w.length.empty();
			const size_t length = iovec ? kFixedLength : arg_index(w.length);
			if (buffer >= 6 || length > kFixedLength)
				break;
			add_buffer_data(c, static_cast<int8_t>(cookie_slots(c.user_string_args)));
			c.user_string_args |=
				buffer_cookie(buffer, length, memory.buffer_bytes) | (iovec ? kCookieIovec : 0);
		}
	if (c.user_string_args != 0)
		add_unfetched(c);
}

// A system call's exit: tracefs's `ret`, then, when the session reads user
// memory, lttng-modules' out and inout arguments (lttng-modules' table
// lists a call's arguments in its order: the kept entry's argument of the
// same index), with its overrides of pipe, pipe2, socketpair (the fds
// written) and accept, accept4 (the address written, its length read at
// the exit), then `buf_data` of a call that read into a buffer.
void add_syscall_exit_fields(KernelEventClass &c, const EventFormat &format, const UserMemory &memory)
{
	for (const FieldFormat &f : format.fields)
		if (f.name != "__syscall_nr") {
			c.fields.push_back(ctf_field(f, f.name));
			c.sources.push_back({f});
		}
	const std::string_view name = std::string_view(format.name).substr(std::string_view("sys_exit_").size());
	const SyscallFields *lttng = lttng_syscall_fields(name);
	if (!memory.read || !lttng || lttng->fields.size() > 6)
		return;
	const bool accept = name == "accept" || name == "accept4";
	const bool fd_pair = name == "pipe" || name == "pipe2" || name == "socketpair";
	uint64_t cookie = 0;
	for (size_t i = 0; i < lttng->fields.size(); ++i) {
		const SyscallField &sf = lttng->fields[i];
		if (sf.direction == SyscallField::Direction::in)
			continue;
		if (fd_pair) { // ctf_user_array(int, NAME, fildes, 2)
			add_slot_bytes(
				c,
				{name == "socketpair" ? "socket" : "fildes", CtfField::Type::array, 4, true, false, 2},
				0);
			cookie |= buffer_cookie(i, kFixedLength, 8);
			break;
		}
		if (accept && sf.name == std::string_view("upeer_sockaddr"))
			continue; // recorded at the entry
		CtfField field{sf.name, CtfField::Type::integer, 8, false, sf.kind == SyscallField::Kind::hex};
		if (accept) // its override: the length itself, read at the exit
			field.size = 4, field.is_signed = true;
		else if (const std::optional<CIntegerType> t = c_integer_type(sf.c_type))
			field.size = t->size, field.is_signed = t->is_signed;
		c.fields.push_back(field);
		FieldSource s;
		s.record_arg = static_cast<int8_t>(i);
		c.sources.push_back(s);
	}
	if (accept) {
		add_connect_address(c, 1, 2, 0, "sport");
		cookie |= c.user_string_args | kCookieLengthPointer;
	}
	if (memory.buffer_bytes > 0)
		for (const auto &[call, buffer] : kReadBuffers)
			if (call == name) {
				add_buffer_data(c, 0);
				cookie |=
					buffer_cookie(buffer, kFixedLength, memory.buffer_bytes) | kCookieLengthReturn;
			}
	if (c.fields.size() == 1)
		return; // nothing read: ret alone
	c.user_string_args = cookie | kCookieExit;
	c.exit_record = true;
	add_unfetched(c);
}

} // namespace

std::vector<ctf::EnvEntry> lttng_kernel_identity()
{
	struct utsname u {};
	::uname(&u);
	return {
		{"domain", std::string("kernel")},
		{"sysname", std::string(u.sysname)},
		{"kernel_release", std::string(u.release)},
		{"kernel_version", std::string(u.version)},
		{"tracer_name", std::string("lttng-modules")},
		{"tracer_major", kLttngModulesMajor},
		{"tracer_minor", kLttngModulesMinor},
		{"tracer_patchlevel", kLttngModulesPatchlevel},
		{"trace_buffering_scheme", std::string("global")},
		{"tracery_version", std::string(TRACERY_VERSION_STRING)},
	};
}

std::string event_class_tsdl(const std::string &name, uint32_t id, uint32_t stream_id, std::span<const CtfField> fields)
{
	ctf::FieldNameSet names;
	std::vector<std::string> field_names;
	for (const CtfField &f : fields)
		field_names.push_back(names.unique(ctf::tsdl_field_name(f.name)));
	std::string m = "event {\n";
	m += "\tname = " + ctf::tsdl_string_literal(name) + ";\n";
	m += "\tid = " + std::to_string(id) + ";\n";
	m += "\tstream_id = " + std::to_string(stream_id) + ";\n";
	m += "\tfields := struct {\n";
	for (size_t i = 0; i < fields.size(); ++i) {
		const CtfField &f = fields[i];
		const std::string &n = field_names[i];
		switch (f.type) {
		case CtfField::Type::integer:
			m += "\t\t" + tsdl_integer(f) + " " + n + ";\n";
			break;
		case CtfField::Type::string:
			m += "\t\tstring " + n + ";\n";
			break;
		case CtfField::Type::array:
			m += "\t\t" + tsdl_integer(f) + " " + n + "[" + std::to_string(f.length) + "];\n";
			break;
		case CtfField::Type::sequence: {
			// lttng-modules' ctf_sequence: a field "_NAME_length", which
			// its metadata writes with the '_' every field name takes.
			const std::string length = names.unique("_" + n + "_length");
			m += "\t\tuint32_t " + length + ";\n";
			m += "\t\t" + tsdl_integer(f) + " " + n + "[" + length + "];\n";
			break;
		}
		}
	}
	m += "\t};\n};\n\n";
	return m;
}

KernelEventClass make_event_class(const EventFormat &format, uint32_t id, UserMemory memory)
{
	if (format.id > 0xffff)
		throw FormatError("event " + format.system + ":" + format.name + ": ID " + std::to_string(format.id) +
		                  " does not fit common_type");
	KernelEventClass c;
	c.id = id;
	c.type = static_cast<uint16_t>(format.id);
	c.fixed_size = format.fixed_size();
	const auto add = [&](const FieldFormat &f, std::string name, int64_t bias, bool tgid) {
		CtfField field = ctf_field(f, std::move(name));
		if (tgid) { // a pid_t written as the thread group id
			field.type = CtfField::Type::integer;
			field.size = 4;
			field.is_signed = true;
		}
		c.fields.push_back(field);
		c.sources.push_back({f, bias, tgid});
	};
	constexpr std::string_view kEnter = "sys_enter_", kExit = "sys_exit_";
	if (format.system == "syscalls" && (format.name.starts_with(kEnter) || format.name.starts_with(kExit))) {
		const bool entry = format.name.starts_with(kEnter);
		c.name = std::string(entry ? "syscall_entry_" : "syscall_exit_") +
		         format.name.substr((entry ? kEnter : kExit).size());
		if (entry)
			add_syscall_entry_fields(c, format, memory);
		else
			add_syscall_exit_fields(c, format, memory);
		return c;
	}
	if (format.system == "sched")
		for (const LttngEvent &e : lttng_sched_events()) {
			if (format.name != e.tracepoint)
				continue;
			bool complete = true;
			for (const Renamed &r : e.fields)
				complete = complete && (r.optional || format.field(r.from) != nullptr);
			if (!complete)
				break; // not the fields LTTng's event has: kept as it is
			c.name = format.name;
			for (const Renamed &r : e.fields)
				if (const FieldFormat *f = format.field(r.from))
					add(*f, r.name, r.bias, r.tgid);
			return c;
		}
	c.name = format.name;
	for (const FieldFormat &f : format.fields)
		add(f, f.name, 0, false);
	return c;
}

int32_t proc_tgid(int32_t tid)
{
	std::ifstream status("/proc/" + std::to_string(tid) + "/status");
	std::string line;
	while (std::getline(status, line))
		if (line.starts_with("Tgid:")) {
			try {
				return static_cast<int32_t>(std::stol(line.substr(5)));
			} catch (const std::exception &) {
				break;
			}
		}
	return tid;
}

void put_integer(std::vector<uint8_t> &out, uint64_t value, unsigned size)
{
	// One append of the little-endian bytes (per event on the readers'
	// path: no byte-by-byte push_back).
	uint8_t bytes[8];
	base::store_le<uint64_t>(bytes, value);
	const unsigned n = size < 8 ? size : 8;
	out.insert(out.end(), bytes, bytes + n);
	if (size > n)
		out.resize(out.size() + (size - n), 0);
}

void put_string(std::vector<uint8_t> &out, const uint8_t *p, size_t n)
{
	const size_t len = p ? ::strnlen(reinterpret_cast<const char *>(p), n) : 0;
	const size_t at = out.size();
	out.insert(out.end(), p, p + len);
	base::sanitize_utf8_in_place(out.data() + at, len);
	out.push_back(0);
}

void encode_payload(const KernelEventClass &c, std::span<const uint8_t> payload, const TgidOf &tgid_of,
                    std::vector<uint8_t> &out, const SyscallSlots *record)
{
	// An exit's record may carry its entry's arguments and no slot.
	const int expected = c.user_string_args != 0 ? cookie_slots(c.user_string_args) : 0; // strings of the class
	if (c.user_string_args == 0 || (record && record->unpaired))
		record = nullptr;
	for (size_t i = 0; i < c.fields.size(); ++i) {
		const CtfField &f = c.fields[i];
		const FieldSource &s = c.sources[i];
		if (s.record_arg >= 0) {
			put_integer(out, record && s.record_arg < 6 ? record->args[s.record_arg] : 0, f.size);
			continue;
		}
		if (s.slot_bytes) {
			const std::string_view v = record ? record->string(s.user_string) : std::string_view();
			const auto *b = reinterpret_cast<const uint8_t *>(v.data());
			if (f.type == CtfField::Type::sequence) {
				put_integer(out, v.size(), 4);
				out.insert(out.end(), b, b + v.size());
			} else if (const size_t bytes = size_t{f.length} * f.size; v.size() == bytes) {
				out.insert(out.end(), b, b + bytes);
			} else {
				out.resize(out.size() + bytes, 0);
			}
			continue;
		}
		if (s.address_part != FieldSource::AddressPart::none) {
			put_address_part(out, s.address_part,
			                 record ? record->string(s.user_string) : std::string_view());
			continue;
		}
		if (s.user_string >= 0) {
			const std::string_view v = record ? record->string(s.user_string) : std::string_view();
			put_string(out, reinterpret_cast<const uint8_t *>(v.data()), v.size());
			continue;
		}
		if (s.unfetched_mask) {
			// No record: every slot, and for an exit its arguments (bit 7).
			put_integer(out,
			            record ? record->unfetched(expected)
			                   : ((1u << expected) - 1) | (c.exit_record ? 0x80 : 0),
			            1);
			continue;
		}
		switch (f.type) {
		case CtfField::Type::integer: {
			uint64_t v = 0;
			if (read_integer(s.format, payload, v)) {
				if (s.tgid)
					v = static_cast<uint64_t>(
						static_cast<int64_t>(tgid_of(static_cast<int32_t>(v))));
				v += static_cast<uint64_t>(s.bias);
			}
			put_integer(out, v, f.size);
			break;
		}
		case CtfField::Type::string: {
			const std::span<const uint8_t> b = field_bytes(s.format, payload);
			put_string(out, b.data(), b.size());
			break;
		}
		case CtfField::Type::array: {
			const std::span<const uint8_t> b = field_bytes(s.format, payload);
			const size_t bytes = size_t{f.length} * f.size;
			if (b.size() >= bytes)
				out.insert(out.end(), b.begin(), b.begin() + static_cast<ptrdiff_t>(bytes));
			else
				out.resize(out.size() + bytes, 0);
			break;
		}
		case CtfField::Type::sequence: {
			const std::span<const uint8_t> b = field_bytes(s.format, payload);
			const size_t count = b.size() / f.size;
			put_integer(out, count, 4); // elements are little-endian already
			out.insert(out.end(), b.begin(), b.begin() + static_cast<ptrdiff_t>(count * f.size));
			break;
		}
		}
	}
}

std::vector<filter::KernelField> filter_fields(const KernelEventClass &c)
{
	std::vector<filter::KernelField> out;
	for (size_t i = 0; i < c.fields.size() && i < c.sources.size(); ++i) {
		const CtfField &f = c.fields[i];
		const FieldSource &s = c.sources[i];
		filter::KernelField::Kind kind = filter::KernelField::Kind::other;
		// An exit's argument or bytes the BPF program read: not in tracefs's record.
		const bool from_bpf = s.record_arg >= 0 || s.slot_bytes;
		if (from_bpf)
			kind = filter::KernelField::Kind::other;
		else if (f.type == CtfField::Type::integer && s.format.kind == FieldKind::scalar)
			kind = filter::KernelField::Kind::integer;
		else if (f.type == CtfField::Type::string)
			kind = filter::KernelField::Kind::string;
		filter::KernelField k{f.name, s.format.name, kind, s.format.is_signed, s.bias, s.tgid};
		// A system call's argument its C type says is signed, in tracefs's
		// unsigned long: compared as the trace shows it.
		if (kind == filter::KernelField::Kind::integer && f.is_signed && !s.format.is_signed &&
		    s.format.size == 8 && s.bias == 0 && !s.tgid)
			k.signed_bits = static_cast<uint8_t>(8 * f.size);
		out.push_back(std::move(k));
	}
	return out;
}

} // namespace tracery::kernel
