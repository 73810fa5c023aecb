// kernel/bpf/user_strings.hpp — system-call string arguments (paths) read
// from the calling process's memory, which tracefs cannot record on a
// kernel without event probes: a BPF program (syscall_strings.bpf.c) on
// syscalls:sys_enter_NAME copies them into a BPF ring buffer, and each
// tracefs syscall_entry event takes its call's strings from here when the
// kernel trace writes it.
//
// Used by the sessions whose calls BPF cannot write whole
// (syscall_events.hpp: those with the x86-tsc clock, or tracking processes
// by more than pids).
//
// The exits: an exit's program reads what the call wrote (a buffer read,
// an fd pair, an accepted address) through the arguments its entry kept
// (per thread, in a bounded map), into a record joined to the tracefs
// sys_exit event by thread and call alone.
//
// The join: tracefs stays the record of the call (its timestamp, order,
// pid scoping, filters and lost counts); the BPF record adds the strings.
// Both are written in the same tracepoint call (the program is attached
// before the session's instance enables the call's events), so the record
// is in the ring buffer by the time the tracefs event's page is read, or a
// moment later: take(), given the tracefs payload, reads the ring buffer
// (waiting up to 2 ms for a record not there yet) and takes the oldest
// record of the same thread, system call and string pointers. A thread makes one call at a time, so a record
// matches one event; records whose events were filtered out of the trace
// (pid scoping, filters) are dropped after kMaxAge or when more than
// kMaxPending wait, counted as `unjoined`.
//
// Nothing is lost silently: an event whose record the ring buffer could
// not take (counted by the program, `lost`) or that was dropped is written
// with its strings empty and their bits set in its `unfetched` field; a
// string the program could not read (a fault: a bad pointer, or a page not
// in memory, which BPF may not fault in) is empty with its bit set too —
// lttng-modules records such a string as an empty string.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct bpf_object;
struct bpf_link;
struct ring_buffer;

namespace tracery::kernel {

inline constexpr int8_t kMaxUserStrings = 4; // TRACERY_MAX_USER_STRINGS

// The attach cookie of a call (syscall_record.h): bit i, argument i is a
// string; a socket address at argument `address_arg` whose length is
// argument `length_arg`; a buffer at argument `buffer_arg` of the length in
// argument `length_arg` (kFixedLength: the bound), at most `bound` bytes.
uint64_t address_cookie(size_t address_arg, size_t length_arg);
inline constexpr size_t kFixedLength = 7; // TRACERY_COOKIE_FIXED_LENGTH
uint64_t buffer_cookie(size_t buffer_arg, size_t length_arg, uint32_t bound);
// The cookie's other bits (syscall_record.h): an iovec array, the
// arguments kept for the exit, an exit's length in its return value or
// behind a pointer, an exit's record.
extern const uint64_t kCookieIovec, kCookieKeep, kCookieLengthReturn, kCookieLengthPointer, kCookieExit;
// The largest buffer capture (TRACERY_MAX_BUFFER).
inline constexpr uint32_t kMaxBufferCapture = 4096;
// The arguments a cookie reads through (the pointers records are matched
// by), and the slots of its records (strings, then the address).
uint64_t cookie_pointer_args(uint64_t cookie);
int cookie_slots(uint64_t cookie);

// One call's slots (strings, a socket address, a buffer) as a BPF program
// read them (syscall_record.h), viewed where they are (a ring buffer's
// memory, or a UserStringsRecord's).
struct SyscallSlots {
	uint32_t tid = 0;
	int32_t nr = 0; // with TRACERY_RECORD_EXIT in an exit's
	uint64_t args[6] = {};
	uint8_t count = 0;            // slots read or tried
	uint8_t address = 0;          // 1 + the slot of the socket address, 0 if none
	uint8_t buffer = 0;           // 1 + the slot of a buffer's bytes, 0 if none
	bool exit = false;            // the record of an exit (its args: its entry's)
	bool unpaired = false;        // an exit's whose entry's arguments were missing: no slots
	int32_t len[kMaxUserStrings]; // bytes (a string's with its NUL); < 0: not read
	std::string_view data;        // the slots, one after the other

	// Slot i's bytes (a string without its NUL); empty if it was not read
	// (a buffer's may be empty and read).
	std::string_view string(int i) const;
	// Bit i: slot i of `expected` could not be read.
	uint8_t unfetched(int expected) const;
};

// Parses one record (a tracery_syscall_record and its slots' bytes) into
// `out`, whose data then views `bytes`. False if it is malformed (shorter
// than its lengths say, a string without its NUL).
bool parse_syscall_slots(std::span<const uint8_t> bytes, SyscallSlots &out);

// A record kept (UserStringsStore): its slots' bytes copied.
struct UserStringsRecord {
	SyscallSlots slots; // its data views `data` (slots_view())
	std::string data;

	const SyscallSlots &view()
	{
		slots.data = data;
		return slots;
	}
	std::string_view string(int i) { return view().string(i); }
	uint8_t unfetched(int expected) { return view().unfetched(expected); }
};

// Parses one ring buffer record into `out` (its data's memory reused).
// False if it is malformed.
bool parse_user_strings_record(std::span<const uint8_t> bytes, UserStringsRecord &out);
std::optional<UserStringsRecord> parse_user_strings_record(std::span<const uint8_t> bytes);

struct UserStringsCounts {
	uint64_t records = 0;   // read from the ring buffer
	uint64_t joined = 0;    // given to their tracefs events
	uint64_t late = 0;      // of which arrived after their events were read
	uint64_t lost = 0;      // the ring buffer was full: their events' strings are unfetched
	uint64_t missing = 0;   // events written without a record (lost, late or dropped)
	uint64_t faults = 0;    // strings and addresses the program could not read
	uint64_t unjoined = 0;  // records dropped unjoined (their events not traced)
	uint64_t malformed = 0; // records that did not parse
	// Exits whose entries' arguments the program did not have (its map of
	// calls in progress full, or the entry made before it was attached):
	// their events say so in `unfetched`.
	uint64_t unpaired = 0;
};

// The records waiting for their tracefs events, bounded, in slots reused
// from record to record: after the first kMaxPending records, adding and
// taking one allocates nothing (a slot's string keeps its memory, and a
// taken record's is exchanged with the caller's). Each slot is on two
// lists, its thread's (oldest first: taken from the front, as a thread's
// calls are read in order) and the arrival order (for the age and size
// bounds), both linked through the slots. Not thread-safe.
class UserStringsStore {
public:
	static constexpr uint32_t kMaxPending = 1 << 16;
	static constexpr uint64_t kMaxAgeNs = 2'000'000'000;
	// Threads whose (empty) lists are kept; beyond, empty ones go.
	static constexpr size_t kMaxThreads = 4096;

	// Parses `bytes` into a slot, or counts it malformed. `now_ns`: a
	// steady clock reading, for the age bound.
	void add(std::span<const uint8_t> bytes, uint64_t now_ns, UserStringsCounts &counts);
	// The oldest record of thread `tid` for call `nr` whose arguments named
	// by `args_mask` equal `args`, moved into `out` (whose old data's memory
	// the store keeps); false if there is none.
	bool take(uint32_t tid, int32_t nr, uint64_t args_mask, std::span<const uint64_t> args, UserStringsRecord &out);
	void expire(uint64_t now_ns, UserStringsCounts &counts);
	size_t pending() const noexcept { return pending_; }

private:
	static constexpr uint32_t kNone = UINT32_MAX;
	struct Thread {
		uint32_t oldest = kNone, newest = kNone;
	};
	struct Slot {
		UserStringsRecord record;
		uint64_t arrived_ns = 0;
		Thread *thread = nullptr;              // in threads_ (whose nodes stay put; only empty ones are erased)
		uint32_t older = kNone, newer = kNone; // arrival order
		uint32_t thread_older = kNone, thread_newer = kNone; // its thread's
	};
	void unlink(uint32_t slot); // from both lists, onto the free list

	std::vector<Slot> slots_;
	std::vector<uint32_t> free_;
	std::unordered_map<uint32_t, Thread> threads_;
	uint32_t oldest_ = kNone, newest_ = kNone;
	size_t pending_ = 0;
};

class UserStrings {
public:
	// Loads the BPF program and its ring buffer of `ring_bytes` (a power of
	// 2 of at least a page); `buffer_bytes`: the bound of the read and
	// written buffers the session captures (0: none). Throws
	// std::runtime_error saying why BPF is not available (not root, no BPF,
	// a kernel refusing the program).
	explicit UserStrings(uint64_t ring_bytes, uint32_t buffer_bytes = 0);
	~UserStrings();
	UserStrings(const UserStrings &) = delete;
	UserStrings &operator=(const UserStrings &) = delete;

	// Attaches the program to syscalls:sys_enter_NAME, copying what its
	// attach cookie says (address_cookie()). Once per call; before the
	// instance enables its events. Throws std::runtime_error.
	void attach(const std::string &syscall, uint64_t cookie);
	bool attached(const std::string &syscall) const;
	// Attaches the exit's program to syscalls:sys_exit_NAME (the entry
	// attached with kCookieKeep first). Throws std::runtime_error.
	void attach_exit(const std::string &syscall, uint64_t cookie);

	// The record of the call whose tracefs sys_enter payload is `payload`
	// (common_pid at 4, __syscall_nr at 8, arguments from 16), read as
	// `cookie` says; false if there is no record (counted). Any thread.
	bool take(std::span<const uint8_t> payload, uint64_t cookie, UserStringsRecord &out);
	// The record of the exit whose tracefs sys_exit payload is `payload`.
	bool take_exit(std::span<const uint8_t> payload, UserStringsRecord &out);

	UserStringsCounts counts() const;
	uint32_t buffer_bytes() const noexcept { return buffer_bytes_; }

private:
	void poll(); // mutex_ held
	bool take_matching(uint32_t tid, int32_t nr, uint64_t pointers, std::span<const uint64_t> args,
	                   UserStringsRecord &out);
	static int on_record(void *self, void *data, size_t size);
	void attach_program(const char *program, const std::string &tracepoint, uint64_t cookie);

	bpf_object *object_ = nullptr;
	ring_buffer *ring_ = nullptr;
	int lost_map_ = -1;
	uint32_t buffer_bytes_ = 0;
	std::map<std::string, bpf_link *> links_;
	mutable std::mutex mutex_;
	UserStringsStore store_;
	UserStringsCounts counts_;
};

} // namespace tracery::kernel
