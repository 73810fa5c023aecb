// kernel/kernel_trace.hpp — the CTF trace of a kernel session, OUTPUT/kernel
// (or the relay's copy, or both: consumer/trace_output.hpp): its metadata (LTTng kernel identity, the user trace's clock class, one
// stream class, the event classes of kernel_events.hpp), one stream file per
// CPU (CHANNEL_CPU) into which each page the readers deliver becomes one
// packet, with system calls written whole by BPF a second stream per CPU
// (CHANNEL_syscalls_CPU, bpf/syscall_events.hpp), and the state dump's
// stream (statedump_0). A session started
// again continues the same streams (its new event classes appended to the
// metadata).
//
// Packets: cpu_id is the CPU, packet_seq_num counts the CPU's packets from
// 0, events_discarded is the CPU's running total of lost events: the larger
// of the sum of the pages' lost counts and the kernel's own count
// (per_cpu/cpuN/stats: "overrun" in overwrite mode, "dropped events" and
// "commit overrun" in discard mode, which pages never report), read when a
// page says events were lost without their number, at most every 100 ms
// otherwise, and at the end: the last packet's count is the kernel's exact
// total (an empty packet carries it if it grew after the last page). A
// stream's first packet says 0 (readers report no count for what a first
// packet claims), and what its page says was lost before it is not counted
// (nothing can be, in discard mode; in a snapshot, the older events the
// buffer overwrote are not losses within the stream).
// A packet the sink refuses (a full disk: consumer::WriteRefused) is kept
// and offered again every 250 ms; meanwhile held(cpu) tells the CPU's reader
// to read nothing, so the kernel's buffer fills and the kernel counts what
// it drops, which the packets after it carry. At the end, a packet still
// refused and the pages drained after it are decoded and counted, not
// written, and the last packet carries them too when it can be written;
// write_losses() says what refusals cost and why.
//
// Contexts (add-context -k, kernel_context.hpp): every event of the CPU
// streams carries them, its tid from common_pid, the rest from a thread
// table that events of the classes marked unrecorded (set_unrecorded())
// keep up to date without being written.
//
// Timestamps are the trace clock's values as they are (the instance's
// clock was chosen to be the user trace's), never going back within a
// stream: an earlier one (a damaged page) is raised to the one before.
//
// Every stream spans the whole trace, as LTTng's do: a CPU's first packet
// begins when the trace was made (before tracing was first turned on), or
// at its first event if that is earlier (a snapshot's trace is made after
// its events were recorded); a CPU without any page, and the state dump's
// first packet, begin at the earliest of those beginnings; each
// finish_cpu() ends the CPU's stream with a packet ending then (after its
// last page was drained), and finish() ends the state dump's stream with
// the CPUs' last end. Babeltrace 1 (which lttng-analyses
// reads traces with) by default reads only the time range in which every
// stream is active, from the latest first packet's beginning to the
// earliest last packet's end: a stream spanning less, such as a state dump
// packet spanning only itself, would cut the whole trace to it. (A
// snapshot's CPUs, whose buffers kept different time ranges, are meant to
// be cut that way: to the range every CPU's events cover.)
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "consumer/trace_output.hpp"
#include "ctf/metadata.hpp"
#include "kernel/kernel_context.hpp"
#include "kernel/kernel_events.hpp"
#include "kernel/page_decoder.hpp"

namespace tracery::kernel {

class SyscallEvents;
class UserStrings;

// The kernel's count of events lost on one CPU so far.
using LostTotal = std::function<uint64_t(uint32_t cpu)>;

// per_cpu/cpuN/stats text: overrun + commit overrun + dropped events.
// Throws FormatError if none of them is there.
uint64_t parse_lost_total(std::string_view stats);

struct KernelTraceCounts {
	uint64_t events = 0; // written
	// Lost (sum over CPUs): in the kernel, and, once the CPUs are finished,
	// in pages that could not be written.
	uint64_t discarded = 0;
	uint64_t unknown = 0;   // of a type with no class (skipped)
	uint64_t malformed = 0; // shorter than their format (skipped)
	uint64_t bad_pages = 0; // pages whose decoding stopped at an error
	uint64_t packets = 0;
	uint64_t bytes = 0;     // of the CPU streams' packets written, headers included
	uint64_t statedump = 0; // lttng_statedump_process_state events
};

class KernelTrace {
public:
	// Creates the output's local directory, if any, and writes the
	// metadata; `channel` names the stream
	// files (CHANNEL_CPU, as LTTng names them). `info.identity` is replaced by
	// lttng_kernel_identity(). `now` reads the trace clock (the tracefs
	// instance's): the streams begin at its value here, and finish_cpu()
	// ends a CPU's stream at its value then. `contexts` (sorted, unique):
	// the CPU streams' event context. Throws std::system_error,
	// FormatError.
	KernelTrace(consumer::TraceOutput out, const std::string &channel, ctf::TraceInfo info,
	            std::span<const EventFormat> formats, uint32_t num_cpus, const PageLayout &layout,
	            LostTotal lost_total, std::function<uint64_t()> now, TgidOf tgid_of = proc_tgid,
	            std::vector<KernelContext> contexts = {}, UserStrings *user_strings = nullptr,
	            SyscallEvents *syscall_events = nullptr);

	// One page of CPU `cpu` (the readers' callback). Calls for different
	// CPUs may run concurrently; for one CPU, in order. `more`: another page
	// of the CPU follows at once (the reader is not going to sleep), so the
	// page's events may stay in the CPU's open packet, which takes pages
	// until it holds kPacketBytes, a page says events were lost before it
	// (the loss falls between packets), or a page comes without `more`, or
	// idle() or finish_cpu() end it: a busy CPU is written in fewer, larger
	// writes. Without `more`, the page ends the packet (one packet per page
	// when no call says `more`).
	void write_page(uint32_t cpu, std::span<const uint8_t> page, bool more = false);
	// Event bytes at which an open packet is written.
	static constexpr size_t kPacketBytes = 64 * 1024;
	// Before each read of CPU `cpu` (the readers' callback, on its thread):
	// whether a packet of the CPU waits, refused by the sink; it is offered
	// again when due.
	bool held(uint32_t cpu);
	// What refused writes cost so far; any thread.
	consumer::WriteLosses write_losses() const;
	// Live sessions: every CPU's stream begins at once with an empty packet
	// dated when the trace was made (a viewer learns of them together:
	// babeltrace2 refuses a stream that appears later with older events);
	// then idle(cpu), called when the CPU's buffer had nothing to read, tells
	// the sink (at most once a period) that the CPU's stream is empty up to
	// now, or writes it an empty packet when a stream of the session started
	// since its last packet (for viewers that look for new streams only on
	// packets). Before the readers start.
	void set_live_period(std::chrono::nanoseconds period);
	void idle(uint32_t cpu);
	// After the last page of `cpu`: a packet ending now, with its exact lost
	// total. at_now false (a rotation, tracing on): ending at the CPU's last
	// event instead, so that the events still in the kernel's buffer keep
	// their times in the next chunk; a CPU without a packet yet gets none
	// (a reader of every chunk orders a stream's files by their first
	// packets' beginnings: no two may begin together).
	void finish_cpu(uint32_t cpu, bool at_now = true);
	// After finish_cpu() of every CPU: the state dump's stream (if there is
	// one yet) ends with theirs, with an empty packet.
	void finish();

	// System-call strings from now on (the first call with string arguments
	// enabled by a restart or while tracing), for the classes added after
	// it; any time, before those classes are added.
	void set_user_strings(UserStrings *strings) noexcept
	{
		user_strings_.store(strings, std::memory_order_release);
	}
	// With `syscall_events` (bpf/syscall_events.hpp): the system-call
	// events BPF writes whole, each CPU's into a stream of its own beside
	// the CPU's tracefs stream (CHANNEL_syscalls_CPU: same stream class,
	// cpu_id the CPU; readers merge streams by time).
	// Writes what CPU `cpu`'s BPF ring buffer holds as one packet of its
	// stream (the CPU's reader, after each page that ends a run and when
	// its tracefs buffer is empty; finish_cpu() drains it). Nothing while a
	// refused packet of that stream waits: the ring buffer fills and the
	// program counts what it cannot take.
	void write_syscall_events(uint32_t cpu);
	// More event classes (events enabled for a restart or while tracing),
	// appended to the metadata; any time, before their events are enabled.
	void add_event_classes(std::span<const EventFormat> formats);
	// The event classes (tracefs IDs) whose events update the thread table
	// only, not written (the others are written); any time.
	void set_unrecorded(std::vector<uint16_t> types);

	// The state dump: lttng_statedump_start, one lttng_statedump_process_state
	// per thread in /proc, lttng_statedump_end, timestamped by `now`: one
	// packet of statedump_0 per call (one per start).
	void write_statedump(const std::function<uint64_t()> &now);

	// Closes every stream, the state dump's after finish(). Not while pages
	// are being written. Throws std::system_error.
	void close();
	// Rotation, after finish_cpu() of every CPU and finish(), while no page
	// is being written: the local trace goes on in `dir` (made, given the
	// whole metadata), the old directory's streams closed, each a complete
	// trace. The streams continue there: their packets numbered on, their
	// lost totals carried (a chunk's first packet claims the total so far,
	// which a reader of the chunk alone does not report), the state dump's
	// stream from the next state dump on. Throws std::system_error: if `dir`
	// cannot be made, nothing changed. Returns "" or, once moved, why the
	// old streams could not be closed.
	std::string continue_in(std::string dir);

	KernelTraceCounts counts() const;
	// The events written so far of the classes named `names` (CTF names), in
	// that order (0 for a name with no class).
	std::vector<uint64_t> events_of(const std::vector<std::string> &names) const;
	// The local directory ("" if the trace only goes to a relay).
	const std::string &dir() const noexcept { return out_.local_dir(); }

private:
	struct Cpu {
		uint64_t seq = 0;
		uint64_t last_ts = 0;
		uint64_t lost_in_pages = 0;
		uint64_t lost_kernel = 0;
		uint64_t written_discarded = 0; // in the last packet
		uint64_t streams_seen = 0;      // the sink's streams_started() at the last packet
		std::chrono::steady_clock::time_point last_stats{};
		std::chrono::steady_clock::time_point last_live{}; // a page or a beacon
		KernelTraceCounts counts;
		// Events written per class, by CTF id: stored by this CPU's writer
		// alone (a relaxed load and store), read by events_of(); grown by
		// add_event_classes() under counts_mutex_ (a deque keeps the
		// counters where they are).
		std::deque<std::atomic<uint64_t>> class_events;
		std::vector<uint8_t> events; // the packet being built, or the one that waits
		// The packet being built spans pages (write_page's `more`): its
		// beginning, its last event's time and its events so far.
		bool open = false;
		uint64_t open_begin = 0, open_end = 0, open_events = 0;
		// A packet the sink refused waits (its fields; its events in
		// `events`) until retry_at. Guarded by counts_mutex_ where
		// write_losses() reads them (written by the CPU's writer only): the
		// kernel's lost count when it began to wait, the events lost while
		// packets waited (in waits that ended; in this one, as of its last
		// try), the events of pages counted but not written, and once
		// finished, the lost events no packet written counts.
		bool pending = false;
		ctf::PacketInfo pending_info;
		std::chrono::steady_clock::time_point retry_at{};
		uint64_t lost_at_hold = 0, hold_lost = 0, hold_lost_now = 0, unwritten = 0, not_in_trace = 0;
	};
	// The streams: cpus_[i] for i < num_cpus_ is CPU i's tracefs stream,
	// cpus_[num_cpus_ + i] CPU i's system-call events (when set).
	consumer::PacketSink &sink_of(uint32_t stream) const;
	uint64_t lost_of(uint32_t stream) const; // the kernel's count, or the BPF program's
	bool active(uint32_t stream) const noexcept { return stream < num_cpus_ || syscall_events_; }
	void finish_stream(uint32_t stream, bool at_now);
	void idle_stream(uint32_t stream);
	// Everything lost on the CPU so far (kernel, pages not written).
	static uint64_t lost_so_far(const Cpu &c);
	// Writes a packet of the CPU's stream (its events in c.events); false
	// when the sink refused it (it waits then).
	bool send(uint32_t cpu, Cpu &c, const ctf::PacketInfo &info);
	// A page read while a packet waits: its events counted, not written.
	void count_unwritten(Cpu &c, std::span<const uint8_t> page);
	// The end: the packet that waits offered once more, else its events
	// counted and the wait over.
	void give_up(uint32_t cpu, Cpu &c);
	void grow_class_counters(); // every CPU's class_events up to next_id_
	void write_packet(uint32_t cpu, Cpu &c, uint64_t begin, uint64_t end, uint64_t events);
	// Writes the CPU's open packet, if any.
	void close_packet(uint32_t cpu, Cpu &c);
	// A packet of the state dump's stream (statedump_mutex_ held).
	void write_statedump_packet(uint64_t begin, uint64_t end, std::span<const uint8_t> events, uint64_t count);
	void finish_statedump(); // finish(), statedump_mutex_ held
	// Live sessions, from the CPU readers: once a period, the state dump's
	// stream, idle between two starts, gets a beacon (or an empty packet, as
	// in idle()), so that a viewer waiting on it is not held; skipped while a
	// state dump is being written.
	void statedump_live();
	void index_classes();                  // by_type_ from classes_
	void add_update(const EventFormat &f); // its entry of updates_
	// The beginning of a CPU stream's first packet whose first instant is
	// `ts`: when the trace was made, or `ts` if that is earlier.
	uint64_t first_begin(uint64_t ts);

	consumer::TraceOutput out_;
	ctf::Uuid uuid_;
	std::chrono::nanoseconds live_period_{0};
	std::function<uint64_t()> now_;
	uint64_t made_;                  // now_() in the constructor
	std::atomic<uint64_t> earliest_; // beginning of the earliest first packet of a CPU
	PageDecoder decoder_;
	LostTotal lost_total_;
	TgidOf tgid_of_;
	std::atomic<UserStrings *> user_strings_;       // set once, from null, while tracing
	std::deque<KernelEventClass> classes_;          // stable addresses for by_type_
	std::vector<const KernelEventClass *> by_type_; // tracefs ID -> class
	uint32_t statedump_id_ = 0;                     // start; process_state +1, end +2
	uint32_t next_id_ = 0;                          // of the next class added
	// by_type_, updates_ and unrecorded_ change (shared by the page writers,
	// exclusive for a change while tracing).
	std::shared_mutex classes_mutex_;
	std::vector<ThreadUpdate> updates_; // tracefs ID -> what it tells the thread table
	std::vector<bool> unrecorded_;      // tracefs ID -> not written
	std::vector<KernelContext> contexts_;
	std::unique_ptr<ThreadTable> threads_;       // when a context needs it
	consumer::StreamNames stream_names_;         // of the CPU streams
	consumer::StreamNames syscall_stream_names_; // of the system-call streams
	std::unique_ptr<consumer::PacketSink> sink_;
	std::unique_ptr<consumer::PacketSink> syscalls_sink_; // with syscall_events_
	SyscallEvents *syscall_events_;
	std::vector<Cpu> cpus_; // 2 × num_cpus_ streams (see sink_of)
	uint32_t num_cpus_;
	// The state dump's stream: written by write_statedump (the session's
	// thread) and, live, by statedump_live (a CPU reader's): under its mutex.
	std::mutex statedump_mutex_;
	std::unique_ptr<consumer::PacketSink> statedump_; // made with its first packet
	uint64_t statedump_packets_ = 0;
	uint64_t statedump_end_ = 0;            // its last packet's end
	uint64_t statedump_seen_ = 0;           // the sink's streams_started() at its last packet
	std::atomic<int64_t> statedump_due_{0}; // steady_clock ns of its next live turn
	uint64_t statedump_events_ = 0;
	mutable std::mutex counts_mutex_;
	std::string reason_; // the last refusal (counts_mutex_)
};

} // namespace tracery::kernel
