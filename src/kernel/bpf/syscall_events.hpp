// kernel/bpf/syscall_events.hpp — system-call events written whole by BPF
// (syscall_events.bpf.c), one record per entry and per exit, into one BPF
// ring buffer per CPU, and read where they are: no join with tracefs's
// events, no copy out of the ring buffer, no lock shared by the CPUs.
//
// A record (syscall_record.h, tracery_syscall_event) carries the event's
// time (bpf_ktime_get_ns(): CLOCK_MONOTONIC, tracefs's `mono` clock), the
// CTF event class it belongs to (set per call in the attach cookie), the
// thread, its process and name, the call's arguments, an exit's return
// value, and its slots (strings, a socket address, a buffer: SyscallSlots,
// the same as the joined path's). Records are untrusted bytes all the
// same: parse_syscall_event() checks each against its length, and a
// malformed one is counted, not read.
//
// Each CPU's ring buffer is read by one thread at a time (that CPU's
// reader): read() returns the records committed so far, sorted by time (a
// program preempted between its reservation and its clock reading may have
// its record after a later one), viewing the ring buffer's memory until
// release() gives it back to the kernel.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/bpf/user_strings.hpp"

struct bpf_object;
struct bpf_link;

namespace tracery::kernel {

// One record, viewed in the ring buffer.
struct SyscallEventView {
	uint64_t timestamp = 0; // CLOCK_MONOTONIC ns
	uint32_t pid = 0;       // the thread group's id
	uint32_t event_id = 0;  // the CTF event class (attach())
	int64_t ret = 0;        // an exit's return value
	std::string_view comm;  // the task's name, up to its NUL (at most 15 bytes)
	SyscallSlots call;      // tid, nr, arguments, slots
};

// False if `bytes` is not a well-formed record (shorter than its header or
// its slots' lengths, a string without its NUL, a name without its NUL).
bool parse_syscall_event(std::span<const uint8_t> bytes, SyscallEventView &out);

// The size of each CPU's ring buffer for a kernel channel whose buffer is
// `channel_bytes` per CPU: a record holds the whole event (128 bytes before
// its strings: the thread's name, pid, six arguments), about
// kRecordsPerEventBytes times a tracefs system-call event, so the ring
// holds about as many events as the channel's buffer. Rounded up to a power
// of 2 of `page` bytes (as the kernel requires), between kMinRingBytes (the
// largest record fits) and kMaxRingBytes (the daemon's largest channel
// buffer per CPU).
constexpr uint64_t kRecordsPerEventBytes = 4;
constexpr uint64_t kMinRingBytes = uint64_t{64} << 10;
constexpr uint64_t kMaxRingBytes = uint64_t{1} << 30;
uint64_t ring_bytes_for_channel(uint64_t channel_bytes, uint64_t page);

// How long a CPU's reader may sleep between two reads of a ring of
// `ring_bytes`: long enough to read records in large batches (each wake-up
// and each write of the stream costs the reader about as much whether it
// carries 400 records or 2,000), short enough that the ring holds what a CPU
// writes meanwhile at kRingBytesPerMs, several times the fastest rate
// measured (about 50 bytes per microsecond: 250,000 records a second with
// their paths). 2 ms to 10 ms; the default ring (8 MiB) gets 10 ms.
constexpr uint64_t kRingBytesPerMs = uint64_t{512} << 10;
std::chrono::milliseconds reader_pause_for_ring(uint64_t ring_bytes);

struct SyscallEventsCounts {
	uint64_t records = 0;   // read
	uint64_t malformed = 0; // read and not parsed
	uint64_t lost = 0;      // a ring buffer was full (the program's count)
	uint64_t unpaired = 0;  // exits whose entry's arguments were not kept
	uint64_t unlisted = 0;  // children of listed threads the full map of threads could not take
	uint64_t faults = 0;    // slots the program could not read
};

class SyscallEvents {
public:
	// Loads the program with one ring buffer of `ring_bytes` (a power of 2
	// of at least a page) for each of `num_cpus` CPUs; `buffer_bytes`: the
	// bound of the read and written buffers the session captures (0: none).
	// Throws std::runtime_error saying why BPF is not available.
	SyscallEvents(uint32_t num_cpus, uint64_t ring_bytes, uint32_t buffer_bytes = 0);
	~SyscallEvents();
	SyscallEvents(const SyscallEvents &) = delete;
	SyscallEvents &operator=(const SyscallEvents &) = delete;

	// Attaches a program to syscalls:sys_enter_NAME (or sys_exit_NAME):
	// its records are of the class `event_id` (16 bits: the tracefs event's
	// ID, which the trace's classes are indexed by) and copy what the cookie
	// says (user_strings.hpp: address_cookie()...; an exit reads its
	// entry's arguments when its cookie has kCookieKeep, as its entry's
	// does). Once per tracepoint; the entry first. Throws
	// std::runtime_error.
	void attach_entry(const std::string &syscall, uint64_t cookie, uint16_t event_id);
	void attach_exit(const std::string &syscall, uint64_t cookie, uint16_t event_id);
	// Detaches the program from `tracepoint` (sys_enter_NAME...), if any.
	void detach(const std::string &tracepoint);
	bool attached(const std::string &tracepoint) const;

	// Whether the programs write records (false until a start, and between
	// a stop and the next start: the readers drain what came before).
	void set_recording(bool on);
	// Whose calls are recorded: every thread's (the default) or only the
	// threads set traced; a thread set not traced never (the session's
	// own). Any thread.
	void record_listed_only(bool only);
	void set_thread(uint32_t tid, bool traced);
	// The children a listed thread makes from now on are listed (tracefs's
	// event-fork): the program on sched:sched_process_fork, whose format
	// has the child's pid at `child_pid_offset`. Throws std::runtime_error.
	void follow_forks(uint32_t child_pid_offset);
	void forget_thread(uint32_t tid);

	// The records of CPU `cpu` committed so far, in time order, viewing the
	// ring buffer until release(cpu). One thread per CPU.
	std::span<const SyscallEventView> read(uint32_t cpu);
	void release(uint32_t cpu);

	// The records CPU `cpu`'s ring buffer could not take so far.
	uint64_t lost(uint32_t cpu) const;
	SyscallEventsCounts counts() const;
	uint32_t num_cpus() const noexcept { return static_cast<uint32_t>(rings_.size()); }
	uint32_t buffer_bytes() const noexcept { return buffer_bytes_; }
	// The size of each CPU's ring buffer, as the kernel reports its map.
	// Throws std::runtime_error.
	uint64_t ring_bytes() const;

private:
	void attach(const char *program, const char *system, const std::string &tracepoint, uint64_t cookie);
	void update_settings();
	struct Ring {
		int fd = -1;
		uint64_t *consumer = nullptr;       // the consumer position's page
		const uint64_t *producer = nullptr; // the producer position's page, then the data twice
		const uint8_t *data = nullptr;
		uint64_t mask = 0;
		uint64_t read_to = 0; // where release() sets the consumer position
		std::vector<SyscallEventView> batch;
		// Its reader's counts (added to by it alone, read by counts()).
		uint64_t records = 0, malformed = 0, faults = 0;
	};
	void close() noexcept; // everything released (the destructor, a failed load)

	bpf_object *object_ = nullptr;
	int lost_map_ = -1, threads_map_ = -1, settings_map_ = -1;
	bool listed_only_ = false, recording_ = false, follow_forks_ = false;
	size_t page_ = 0;
	uint32_t buffer_bytes_ = 0;
	std::vector<Ring> rings_;
	std::map<std::string, bpf_link *> links_;
};

} // namespace tracery::kernel
