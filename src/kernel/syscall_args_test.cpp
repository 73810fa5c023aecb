// kernel/syscall_args_test.cpp — system-call entries as lttng-modules
// records them (syscall_args.hpp, the entry classes of kernel_events.hpp on
// this kernel's formats), and the join of the BPF program's records
// (bpf/user_strings.hpp: parsing, matching, bounds), without a kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "kernel/bpf/user_strings.hpp"
#include "kernel/kernel_events.hpp"
#include "kernel/syscall_args.hpp"

extern "C" {
#include "kernel/bpf/syscall_record.h"
}

using namespace tracery::kernel;

namespace {

EventFormat testdata_format(const std::string &system, const std::string &name)
{
	std::ifstream in(std::string(TRACERY_KERNEL_TESTDATA) + "/events/" + system + "/" + name + "/format");
	std::stringstream text;
	text << in.rdbuf();
	return parse_event_format(text.str(), system);
}

// A ring buffer record as the BPF program writes it.
std::vector<uint8_t> record_bytes(uint32_t tid, int32_t nr, std::vector<uint64_t> args,
                                  std::vector<std::string> strings, std::vector<int> faults = {})
{
	tracery_syscall_record h{};
	h.tid = tid;
	h.nr = nr;
	for (size_t i = 0; i < args.size() && i < 6; ++i)
		h.args[i] = args[i];
	h.strings = static_cast<unsigned>(strings.size() + faults.size());
	std::string data;
	size_t k = 0;
	for (const std::string &s : strings) {
		h.len[k++] = static_cast<int>(s.size() + 1);
		data += s;
		data += '\0';
	}
	for (const int f : faults)
		h.len[k++] = f;
	std::vector<uint8_t> out(sizeof h + data.size());
	std::memcpy(out.data(), &h, sizeof h);
	std::memcpy(out.data() + sizeof h, data.data(), data.size());
	return out;
}

// The tracefs payload of sys_enter_openat (ID, pid, nr, 4 arguments).
std::vector<uint8_t> openat_payload(uint32_t tid, uint64_t dfd, uint64_t filename, uint64_t flags, uint64_t mode)
{
	std::vector<uint8_t> p(48, 0);
	const uint16_t type = 782;
	std::memcpy(p.data(), &type, 2);
	std::memcpy(p.data() + 4, &tid, 4);
	const int32_t nr = 257;
	std::memcpy(p.data() + 8, &nr, 4);
	const uint64_t args[] = {dfd, filename, flags, mode};
	std::memcpy(p.data() + 16, args, sizeof args);
	return p;
}

} // namespace

TEST(SyscallArgs, CTypes)
{
	const auto is = [](const char *type, uint8_t size, bool is_signed) {
		const std::optional<CIntegerType> t = c_integer_type(type);
		ASSERT_TRUE(t.has_value()) << type;
		EXPECT_EQ(t->size, size) << type;
		EXPECT_EQ(t->is_signed, is_signed) << type;
	};
	is("int", 4, true);
	is("const int", 4, true);
	is("unsigned int", 4, false);
	is("unsigned", 4, false);
	is("umode_t", 2, false);
	is("size_t", 8, false);
	is("long", 8, true);
	is("loff_t", 8, true);
	is("pid_t", 4, true);
	is("uid_t", 4, false);
	is("const clockid_t", 4, true);
	is("const char *", 8, false);
	is("struct sockaddr __user *", 8, false);
	is("const char *const *", 8, false);
	is("const enum landlock_rule_type", 4, false);
	EXPECT_FALSE(c_integer_type("struct stat").has_value());
	EXPECT_FALSE(c_integer_type("").has_value());
}

TEST(SyscallArgs, LttngTable)
{
	const SyscallFields *openat = lttng_syscall_fields("openat");
	ASSERT_NE(openat, nullptr);
	ASSERT_EQ(openat->fields.size(), 4u);
	EXPECT_STREQ(openat->fields[1].name, "filename");
	EXPECT_EQ(openat->fields[1].kind, SyscallField::Kind::string);
	const SyscallFields *read = lttng_syscall_fields("read");
	ASSERT_NE(read, nullptr);
	EXPECT_EQ(read->fields[1].direction, SyscallField::Direction::out); // buf
	const SyscallFields *rename = lttng_syscall_fields("rename");
	ASSERT_NE(rename, nullptr);
	EXPECT_EQ(rename->fields[0].kind, SyscallField::Kind::string);
	EXPECT_EQ(rename->fields[1].kind, SyscallField::Kind::string);
	EXPECT_EQ(lttng_syscall_fields("no_such_call"), nullptr);
	EXPECT_EQ(lttng_syscall_fields(""), nullptr);
}

TEST(SyscallArgs, OpenatEntryAsLttngRecordsIt)
{
	const EventFormat format = testdata_format("syscalls", "sys_enter_openat");
	// Without strings: dfd s32, filename the pointer (u64, base 10), flags s32, mode u16.
	const KernelEventClass raw = make_event_class(format, 0, UserMemory{});
	ASSERT_EQ(raw.fields.size(), 4u);
	EXPECT_EQ(raw.user_string_args, 0u);
	EXPECT_EQ(raw.fields[0].size, 4);
	EXPECT_TRUE(raw.fields[0].is_signed);
	EXPECT_EQ(raw.fields[1].type, CtfField::Type::integer);
	EXPECT_EQ(raw.fields[1].size, 8);
	EXPECT_FALSE(raw.fields[1].is_signed);
	EXPECT_EQ(raw.fields[3].size, 2);
	EXPECT_FALSE(raw.fields[3].is_signed);
	std::vector<uint8_t> out;
	encode_payload(raw, openat_payload(7, 0xffffff9c, 0x7f0012345678, 0x80000, 0), proc_tgid, out);
	ASSERT_EQ(out.size(), 4u + 8 + 4 + 2);
	int32_t dfd = 0;
	std::memcpy(&dfd, out.data(), 4);
	EXPECT_EQ(dfd, -100);

	// With strings: filename a string, then the unfetched mask.
	const KernelEventClass c = make_event_class(format, 0, UserMemory{true});
	ASSERT_EQ(c.fields.size(), 5u);
	EXPECT_EQ(c.fields[1].type, CtfField::Type::string);
	EXPECT_EQ(c.fields[4].name, "unfetched");
	EXPECT_EQ(c.user_string_args, 0b10u);
	// No source of strings: empty, its bit set.
	out.clear();
	encode_payload(c, openat_payload(7, 0xffffff9c, 0x7f0012345678, 0x80000, 0644), proc_tgid, out, nullptr);
	const std::vector<uint8_t> expected = {0x9c, 0xff, 0xff, 0xff, 0, 0x00, 0x00, 0x08, 0x00, 0xa4, 0x01, 1};
	EXPECT_EQ(out, expected);
}

TEST(UserStrings, RecordsParsedAsUntrustedBytes)
{
	const std::vector<uint8_t> ok = record_bytes(7, 257, {1, 2}, {"/etc/hostname"}, {-14});
	std::optional<UserStringsRecord> r = parse_user_strings_record(ok);
	ASSERT_TRUE(r.has_value());
	EXPECT_EQ(r->slots.tid, 7u);
	EXPECT_EQ(r->slots.nr, 257);
	EXPECT_EQ(r->string(0), "/etc/hostname");
	EXPECT_EQ(r->string(1), "");
	EXPECT_EQ(r->unfetched(2), 0b10);
	EXPECT_EQ(r->unfetched(3), 0b110); // a string the record lacks
	// Shorter than its lengths, a string without its NUL, too many strings.
	EXPECT_FALSE(parse_user_strings_record({ok.data(), ok.size() - 1}).has_value());
	EXPECT_FALSE(parse_user_strings_record({ok.data(), 10}).has_value());
	std::vector<uint8_t> no_nul = ok;
	no_nul.back() = 'x';
	EXPECT_FALSE(parse_user_strings_record(no_nul).has_value());
	std::vector<uint8_t> many = ok;
	const unsigned five = 5;
	std::memcpy(many.data() + offsetof(tracery_syscall_record, strings), &five, 4);
	EXPECT_FALSE(parse_user_strings_record(many).has_value());
	std::vector<uint8_t> huge = ok;
	const int big = 1 << 20;
	std::memcpy(huge.data() + offsetof(tracery_syscall_record, len), &big, 4);
	EXPECT_FALSE(parse_user_strings_record(huge).has_value());
}

TEST(UserStrings, StoreJoinsByThreadCallAndPointer)
{
	UserStringsStore store;
	UserStringsCounts counts;
	const auto add = [&](uint32_t tid, uint64_t ptr, const char *path, uint64_t now = 0) {
		store.add(record_bytes(tid, 257, {0xffffff9c, ptr}, {path}), now, counts);
	};
	add(7, 0x1000, "/a");
	add(8, 0x1000, "/b");
	add(7, 0x2000, "/c");
	const uint64_t a1[] = {0xffffff9c, 0x2000};
	// Thread 7's second call first (its CPU's page read before the first's).
	UserStringsRecord r;
	ASSERT_TRUE(store.take(7, 257, 0b10, a1, r));
	EXPECT_EQ(r.string(0), "/c");
	const uint64_t a0[] = {0xffffff9c, 0x1000};
	EXPECT_FALSE(store.take(7, 2, 0b10, a0, r));   // another call
	EXPECT_FALSE(store.take(9, 257, 0b10, a0, r)); // another thread
	ASSERT_TRUE(store.take(7, 257, 0b10, a0, r));
	EXPECT_EQ(r.string(0), "/a");
	EXPECT_FALSE(store.take(7, 257, 0b10, a0, r)); // taken once
	EXPECT_EQ(store.pending(), 1u);
	// A slot reused: a new record of thread 7 in the slot "/c" left.
	add(7, 0x3000, "/d");
	const uint64_t a2[] = {0xffffff9c, 0x3000};
	ASSERT_TRUE(store.take(7, 257, 0b10, a2, r));
	EXPECT_EQ(r.string(0), "/d");
	EXPECT_EQ(store.pending(), 1u);
	std::vector<uint8_t> bad = record_bytes(7, 257, {0xffffff9c, 0x4000}, {"/e"});
	bad.pop_back();
	store.add(bad, 0, counts);
	EXPECT_EQ(counts.malformed, 1u);
	EXPECT_EQ(store.pending(), 1u);
	// Aged out: thread 8's record, never joined.
	store.expire(UserStringsStore::kMaxAgeNs + 1, counts);
	EXPECT_EQ(store.pending(), 0u);
	EXPECT_EQ(counts.unjoined, 1u);
	// Bounded: the oldest go first.
	for (uint64_t i = 0; i < UserStringsStore::kMaxPending + 10; ++i)
		add(static_cast<uint32_t>(100 + i % 7), i, "/x", UserStringsStore::kMaxAgeNs + 2);
	EXPECT_EQ(store.pending(), UserStringsStore::kMaxPending);
	EXPECT_EQ(counts.unjoined, 11u);
	const uint64_t oldest[] = {0xffffff9c, 0};
	EXPECT_FALSE(store.take(100, 257, 0b10, oldest, r));
	const uint64_t newest[] = {0xffffff9c, UserStringsStore::kMaxPending + 9};
	EXPECT_TRUE(
		store.take(static_cast<uint32_t>(100 + (UserStringsStore::kMaxPending + 9) % 7), 257, 0b10, newest, r));
}

TEST(SyscallArgs, ConnectAddressAsLttngOverrideRecordsIt)
{
	const EventFormat format = testdata_format("syscalls", "sys_enter_connect");
	const KernelEventClass c = make_event_class(format, 0, UserMemory{true});
	std::vector<std::string> names;
	for (const CtfField &f : c.fields)
		names.push_back(f.name);
	EXPECT_EQ(names, (std::vector<std::string>{"fd", "uservaddr", "addrlen", "family", "dport", "v4addr", "v6addr",
	                                           "unfetched"}));
	EXPECT_TRUE(c.fields[1].hex);
	EXPECT_TRUE(c.fields[2].hex);
	EXPECT_TRUE(c.fields[2].is_signed);
	EXPECT_EQ(c.fields[5].type, CtfField::Type::sequence);
	EXPECT_EQ(c.fields[6].size, 2);
	EXPECT_EQ(c.user_string_args, address_cookie(1, 2));
	EXPECT_EQ(cookie_pointer_args(c.user_string_args), 0b10u);
	EXPECT_EQ(cookie_slots(c.user_string_args), 1);
	// No record: no family, no port, empty addresses, its bit set.
	std::vector<uint8_t> payload(40, 0);
	const uint64_t args[] = {3, 0x7ffd0000, 16};
	std::memcpy(payload.data() + 16, args, sizeof args);
	std::vector<uint8_t> out;
	encode_payload(c, payload, proc_tgid, out, nullptr);
	const std::vector<uint8_t> expected = {3, 0, 0, 0, 0, 0, 0xfd, 0x7f, 0, 0, 0, 0, 16, 0, 0,
	                                       0, 0, 0, 0, 0, 0, 0,    0,    0, 0, 0, 0, 0,  1};
	EXPECT_EQ(out, expected);
	// Without BPF: the override's fields are not there, the pointer is.
	EXPECT_EQ(make_event_class(format, 0, UserMemory{}).fields.size(), 3u);
}

TEST(SyscallArgs, WriteBufferCapturedWhenAsked)
{
	const EventFormat format = testdata_format("syscalls", "sys_enter_write");
	EXPECT_EQ(make_event_class(format, 0, UserMemory{true}).user_string_args, 0u); // not asked: no record
	const KernelEventClass c = make_event_class(format, 0, UserMemory{true, 16});
	std::vector<std::string> names;
	for (const CtfField &f : c.fields)
		names.push_back(f.name);
	EXPECT_EQ(names, (std::vector<std::string>{"fd", "buf", "count", "buf_data", "unfetched"}));
	EXPECT_EQ(c.fields[3].type, CtfField::Type::sequence);
	EXPECT_EQ(c.fields[3].size, 1);
	EXPECT_EQ(c.user_string_args, buffer_cookie(1, 2, 16));
	EXPECT_EQ(cookie_pointer_args(c.user_string_args), 0b10u);
	EXPECT_EQ(cookie_slots(c.user_string_args), 1);
	// A record with the buffer's bytes (no NUL), joined by thread, call and pointer.
	tracery_syscall_record h{};
	h.tid = 7;
	h.nr = 1;
	h.args[0] = 1;
	h.args[1] = 0x1000;
	h.args[2] = 5;
	h.strings = 1;
	h.len[0] = 5;
	h.buffer = 1;
	std::vector<uint8_t> bytes(sizeof h + 5);
	std::memcpy(bytes.data(), &h, sizeof h);
	std::memcpy(bytes.data() + sizeof h, "hello", 5);
	std::optional<UserStringsRecord> r = parse_user_strings_record(bytes);
	ASSERT_TRUE(r);
	EXPECT_EQ(r->string(0), "hello");
	EXPECT_EQ(r->unfetched(1), 0);
	// An empty buffer is read, not a fault; a negative length is a fault.
	h.len[0] = 0;
	std::memcpy(bytes.data(), &h, sizeof h);
	ASSERT_TRUE(parse_user_strings_record(bytes));
	EXPECT_EQ(parse_user_strings_record(bytes)->unfetched(1), 0);
	h.len[0] = -14;
	std::memcpy(bytes.data(), &h, sizeof h);
	EXPECT_EQ(parse_user_strings_record(bytes)->unfetched(1), 1);
	// Longer than the largest capture, or the same slot as the address: refused.
	h.len[0] = 4097;
	std::vector<uint8_t> long_record(sizeof h + 4097);
	std::memcpy(long_record.data(), &h, sizeof h);
	EXPECT_FALSE(parse_user_strings_record(long_record));
	h.len[0] = 5;
	h.address = 1;
	std::memcpy(bytes.data(), &h, sizeof h);
	EXPECT_FALSE(parse_user_strings_record(bytes));
	// No record: an empty sequence, its bit set.
	std::vector<uint8_t> payload(40, 0);
	const uint64_t args[] = {1, 0x1000, 5};
	std::memcpy(payload.data() + 16, args, sizeof args);
	std::vector<uint8_t> out;
	encode_payload(c, payload, proc_tgid, out, nullptr);
	const std::vector<uint8_t> expected = {1, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 5,
	                                       0, 0, 0, 0, 0, 0,    0, 0, 0, 0, 0, 1};
	EXPECT_EQ(out, expected);
}

TEST(SyscallArgs, ExitsCarryLttngOutArguments)
{
	const auto names_of = [](const KernelEventClass &c) {
		std::vector<std::string> names;
		for (const CtfField &f : c.fields)
			names.push_back(f.name);
		return names;
	};
	// read: ret, the entry's buf pointer, with capture what was read.
	const EventFormat read = testdata_format("syscalls", "sys_exit_read");
	EXPECT_EQ(names_of(make_event_class(read, 0, UserMemory{})), (std::vector<std::string>{"ret"}));
	const KernelEventClass r = make_event_class(read, 0, UserMemory{true, 64});
	EXPECT_EQ(names_of(r), (std::vector<std::string>{"ret", "buf", "buf_data", "unfetched"}));
	EXPECT_TRUE(r.exit_record);
	EXPECT_EQ(r.user_string_args, buffer_cookie(1, kFixedLength, 64) | kCookieLengthReturn | kCookieExit);
	// pipe2: the fd pair as an array of 2 int32.
	const KernelEventClass p = make_event_class(testdata_format("syscalls", "sys_exit_pipe2"), 0, UserMemory{true});
	EXPECT_EQ(names_of(p), (std::vector<std::string>{"ret", "fildes", "unfetched"}));
	EXPECT_EQ(p.fields[1].type, CtfField::Type::array);
	EXPECT_EQ(p.fields[1].length, 2u);
	EXPECT_TRUE(p.fields[1].is_signed);
	EXPECT_EQ(p.user_string_args, buffer_cookie(0, kFixedLength, 8) | kCookieExit);
	// No record: ret, zeros, every slot's bit and bit 7.
	std::vector<uint8_t> payload(24, 0);
	payload[16] = 0;
	std::vector<uint8_t> out;
	encode_payload(p, payload, proc_tgid, out, nullptr);
	const std::vector<uint8_t> expected = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81};
	EXPECT_EQ(out, expected);
	// An exit's record: nr with TRACERY_RECORD_EXIT, the fds as 8 raw bytes.
	tracery_syscall_record h{};
	h.tid = 9;
	h.nr = 293 | TRACERY_RECORD_EXIT;
	h.strings = 1;
	h.len[0] = 8;
	h.buffer = 1;
	std::vector<uint8_t> bytes(sizeof h + 8);
	std::memcpy(bytes.data(), &h, sizeof h);
	const int32_t fds[] = {3, 4};
	std::memcpy(bytes.data() + sizeof h, fds, sizeof fds);
	std::optional<UserStringsRecord> rec = parse_user_strings_record(bytes);
	ASSERT_TRUE(rec);
	EXPECT_TRUE(rec->slots.exit);
	EXPECT_EQ(rec->string(0).size(), 8u);
	UserStringsStore store;
	UserStringsCounts counts;
	store.add(bytes, 0, counts);
	UserStringsRecord taken;
	EXPECT_FALSE(store.take(9, 293, 0, {}, taken)); // an entry's number does not take an exit's record
	EXPECT_TRUE(store.take(9, 293 | TRACERY_RECORD_EXIT, 0, {}, taken));
	EXPECT_FALSE(taken.slots.unpaired);
}

// membarrier's exit repeats its entry's arguments (lttng-modules' inout
// fields) and reads no user memory: a record without slots still gives
// them, and only its absence sets bit 7.
TEST(SyscallArgs, ExitArgumentsWithoutSlotsComeFromTheRecord)
{
	const KernelEventClass m =
		make_event_class(testdata_format("syscalls", "sys_exit_membarrier"), 0, UserMemory{true});
	std::vector<std::string> names;
	for (const CtfField &f : m.fields)
		names.push_back(f.name);
	ASSERT_EQ(names, (std::vector<std::string>{"ret", "cmd", "flags", "cpu_id", "unfetched"}));
	EXPECT_TRUE(m.exit_record);
	std::vector<uint8_t> payload(24, 0);
	payload[16] = 7; // ret
	tracery_syscall_record h{};
	h.tid = 9;
	h.nr = 324 | TRACERY_RECORD_EXIT;
	h.args[0] = 16; // MEMBARRIER_CMD_PRIVATE_EXPEDITED
	h.args[2] = 1;  // cpu_id
	std::vector<uint8_t> bytes(sizeof h);
	std::memcpy(bytes.data(), &h, sizeof h);
	std::optional<UserStringsRecord> rec = parse_user_strings_record(bytes);
	ASSERT_TRUE(rec);
	std::vector<uint8_t> out;
	encode_payload(m, payload, proc_tgid, out, &rec->view());
	const std::vector<uint8_t> with = {7, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
	EXPECT_EQ(out, with);
	out.clear();
	encode_payload(m, payload, proc_tgid, out, nullptr);
	const std::vector<uint8_t> without = {7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80};
	EXPECT_EQ(out, without);
}

// An exit whose entry the program did not see (a call begun before it was
// attached) has a record marked unpaired: the exit takes it and is written
// as having none, and the thread's next exit of the same call takes its own.
TEST(UserStrings, UnpairedExitTakesItsMarkerNotTheNextCallsRecord)
{
	tracery_syscall_record h{};
	h.tid = 9;
	h.nr = 0 | TRACERY_RECORD_EXIT | TRACERY_RECORD_UNPAIRED;
	std::vector<uint8_t> marker(sizeof h);
	std::memcpy(marker.data(), &h, sizeof h);
	std::optional<UserStringsRecord> m = parse_user_strings_record(marker);
	ASSERT_TRUE(m);
	EXPECT_TRUE(m->slots.exit);
	EXPECT_TRUE(m->slots.unpaired);
	EXPECT_EQ(m->slots.nr, 0 | TRACERY_RECORD_EXIT);
	// the next call's record: read(2) of 3 bytes
	h.nr = 0 | TRACERY_RECORD_EXIT;
	h.strings = 1;
	h.len[0] = 3;
	h.buffer = 1;
	std::vector<uint8_t> next(sizeof h + 3);
	std::memcpy(next.data(), &h, sizeof h);
	std::memcpy(next.data() + sizeof h, "abc", 3);
	UserStringsStore store;
	UserStringsCounts counts;
	store.add(marker, 0, counts);
	store.add(next, 0, counts);
	UserStringsRecord taken;
	ASSERT_TRUE(store.take(9, 0 | TRACERY_RECORD_EXIT, 0, {}, taken));
	EXPECT_TRUE(taken.slots.unpaired);
	ASSERT_TRUE(store.take(9, 0 | TRACERY_RECORD_EXIT, 0, {}, taken));
	EXPECT_FALSE(taken.slots.unpaired);
	EXPECT_EQ(taken.string(0), "abc");
	// A marker never carries slots.
	h.nr = 0 | TRACERY_RECORD_EXIT | TRACERY_RECORD_UNPAIRED;
	std::memcpy(next.data(), &h, sizeof h);
	EXPECT_FALSE(parse_user_strings_record(next));
}
