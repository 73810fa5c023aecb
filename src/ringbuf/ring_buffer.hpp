// ring_buffer.hpp — the lock-free per-CPU shared-memory ring buffer of Tracery (namespace tracery::ringbuf).
//
// Design, in short (details next to the code):
//  * A Channel is ONE memfd mapping (its layout, with a diagram: layout.hpp): a ChannelHeader, then num_cpus
//    BufferHeaders (per-buffer control and per-sub-buffer metadata), then num_cpus data areas of num_subbuf (M) x
//    subbuf_size (S) bytes. Nothing in the mapping is a pointer: every process follows offsets, so any process
//    may map it at any address. The data area holds only records; all per-sub-buffer metadata lives in the
//    BufferHeader.
//  * Each buffer has a free-running 64-bit write offset W. Sub-buffer number k = offset / S (this is the
//    SubbufView::seq), slot index = k % M, generation = k / M. W is stored together with the timestamp of the
//    last reservation L in one 16-byte word that reserve() advances with a single 16-byte compare-and-swap.
//    The clock is read once, first, and the timestamp clamped to L in the CAS loop, so timestamps never
//    decrease in buffer order, and the compact/extended header choice is made against the exact timestamp of
//    the previous record. Reading it first lets its latency overlap with the rest of the reservation: in the
//    common case (no clamp, compact header, strictly inside the open sub-buffer) the timestamp reaches the
//    record's position only through predicted branches, never as data, so the write position, the slot and
//    the payload stores need not wait for the clock (the time stamp itself is only stored).
//  * Commit: each slot keeps a committed prefix P, the absolute offset up to which every byte of its current
//    sub-buffer is committed. The record that starts at P (the oldest one in flight, in the common case the only
//    one) commits by storing P = its end: a plain compare and store, no locked instruction and no restartable
//    sequence, race-free because only the owner of the record at P can move P. A record committed while an older
//    one is still in flight (a signal handler's, another thread's on the same CPU, a preempted writer's) adds its
//    size to the slot's out-of-order counter instead, atomically; when the older one commits, P takes in the
//    records committed ahead of it if nothing before the write position is still in flight (settle_prefix), so
//    that the records after them commit in order again. The two together count every committed byte
//    once, cumulatively over the slot's generations (committed()): the sub-buffer of generation g is complete
//    when they reach (g + 1) * S. P is also what crash recovery keeps. The writer that opens a sub-buffer moves
//    P to its start (and takes from the out-of-order counter what it had counted of the previous generation
//    beyond P, so the sum stays put; P is marked meanwhile, so that the sum is never read too high). A record
//    that does not fit closes the sub-buffer: its content end and timestamp_end are recorded and the remainder
//    is committed as padding.
//  * Two ways to advance W, chosen per channel (Config::sync):
//     - atomic: a 16-byte compare-and-swap (lock cmpxchg16b). Any thread may write any buffer.
//     - rseq: a compare-and-store inside a restartable sequence, on the buffer's own CPU only (rseq.hpp), so no
//       locked instruction: buffer c is only ever written by threads running on CPU c, and W only ever changes
//       through such a sequence, even when flushing (the flushing thread moves itself onto the CPU first). A
//       thread that finds itself on another CPU than the one it chose retargets to the buffer of the CPU it is
//       on. A thread without rseq (see rseq.hpp) cannot write an rseq channel: its records are dropped and
//       counted. Reserve + commit take about 40 % less time (docs/performance.md).
//  * Common path: reserve = one CAS or compare-and-store on W (and, in discard mode with buffers of at most
//    4 MiB, a prefetch for write 1 KiB ahead: kPrefetchAhead), commit = a plain compare and store of P (and a
//    load to see whether the sub-buffer is complete). No syscall, lock, allocation or TLS; reserve/commit are
//    async-signal-safe and reentrant. That common case is inlined into the caller; the general loop (clamping,
//    extended headers, retries, a thread that moved), switching sub-buffers, out-of-order commits and waking a
//    waiting consumer are out of line. A switch of a process that attached the channel fills the opened
//    sub-buffer's page table (one madvise, at most num_subbuf - 1 times per CPU and process: unpopulated_), so
//    that its writers take no page fault inside a record.
//  * Discard mode: a writer never enters a sub-buffer the consumer has not released (the record is dropped and
//    counted); a writer that opens the last free one yields the CPU (sched_yield), often to the consumer.
//    Overwrite mode: a writer entering an unconsumed sub-buffer pushes the consumer position forward, but drops
//    (and counts) its record if that slot's previous generation is still being written.
//  * Consumer wakeup: a commit that completes a sub-buffer does FUTEX_WAKE on a shared futex in the mapping,
//    and only when a consumer announced that it is waiting.
//  * Crash recovery: see recover_after_producer_death() for exactly what is and is not recoverable.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/sizes.hpp"
#include "ringbuf/layout.hpp"
#include "rseq/rseq.hpp"

#if defined(__x86_64__) && !defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
#error "tracery ringbuf needs cmpxchg16b: compile with -mcx16 (the tracery_ringbuf CMake target adds it)"
#endif

namespace tracery::ringbuf {

enum class Mode : uint32_t { discard = 0, overwrite = 1 };
enum class Sync : uint32_t { atomic = 0, rseq = 1 }; // how writers advance a buffer's write position (see above)

struct Config {
	uint32_t num_cpus = 1;                           // per-CPU buffers in the channel, 1..8192
	uint32_t num_subbuf = base::kDefaultNumSubbuf;   // M >= 2, power of two, <= 65536
	uint32_t subbuf_size = base::kDefaultSubbufSize; // S bytes, power of two, 4096..2^30
	Mode mode = Mode::discard;
	Sync sync = Sync::atomic; // rseq needs rseq_available()
	// Records start with a header chosen by the buffer: the compact form is allowed only when
	// timestamp - (timestamp of the previous record in buffer order, or the sub-buffer's timestamp_begin for its
	// first record) < 2^compact_ts_bits. The first record of a sub-buffer always qualifies (its delta is 0).
	uint32_t compact_header_size = 4;   // 1..extended_header_size
	uint32_t extended_header_size = 13; // compact_header_size..4096
	uint32_t compact_ts_bits = 27;      // 0..63
};

namespace detail {

template <class T>
inline T load(const T &v, std::memory_order mo = std::memory_order_relaxed) noexcept
{
	return std::atomic_ref<T>(const_cast<T &>(v)).load(mo);
}
template <class T>
inline void store(T &v, T x, std::memory_order mo = std::memory_order_relaxed) noexcept
{
	std::atomic_ref<T>(v).store(x, mo);
}
template <class T>
inline T fetch_add(T &v, T x, std::memory_order mo) noexcept
{
	return std::atomic_ref<T>(v).fetch_add(x, mo);
}
template <class T>
inline bool compare_exchange(T &v, T expected, T desired, std::memory_order mo) noexcept
{
	return std::atomic_ref<T>(v).compare_exchange_strong(expected, desired, mo);
}

// Discard mode: how far ahead of each reservation the writer asks for the line it will write later. The consumer
// reads every sub-buffer, which leaves its lines shared in the consumer CPU's caches; the writer's next pass over
// them would otherwise wait for ownership store after store (a recorded event to disk took 25-40 ns instead of the
// 20 of overwrite mode, whose sub-buffers nothing reads but a rare snapshot; docs/performance.md). 1 KiB is 16
// lines: far enough for the request to complete, near enough that the line is still there when the writer
// arrives. Overwrite mode does without: there the prefetch only cost time (about 1 ns per record). The address is
// not wrapped: past the end of the buffer it names the next buffer or no mapping at all, which a prefetch
// tolerates (it never faults), and the wrong line asked for once per buffer pass costs less than wrapping always.
inline constexpr uint64_t kPrefetchAhead = 1024;
// ...and only while a CPU's buffer is at most this big. The consumer read a line one lap of the buffer before the
// writer comes back to it; after more than a core's share of the last-level cache (4 MiB on the AMD EPYC of the
// measurements) its copy is gone and the line comes from memory, where the prefetch no longer saves the wait for
// ownership and costs time of its own: with 8 sub-buffers of 2 MiB per CPU, the function helpers' bench
// (three threads on two CPUs) took about 20 ns more per call with it than without, in overwrite mode too
// (docs/performance.md, "Function entry and exit helpers").
inline constexpr uint64_t kPrefetchMaxBuffer = uint64_t{4} << 20;

// A hint, never a fault: asks for the line holding p in the exclusive state (prefetchw; x86-64 CPUs without the
// PRFCHW feature execute it as a no-op).
[[gnu::always_inline]] inline void prefetch_for_write(const void *p) noexcept
{
#if defined(__x86_64__)
	asm volatile("prefetchw %0" : : "m"(*static_cast<const char *>(p)));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

inline WritePos load_write_pos(const WritePos &p) noexcept { return WritePos{load(p.offset), load(p.last_ts)}; }

// One lock-free 16-byte CAS (lock cmpxchg16b on x86-64), a full barrier. On failure `expected` receives the
// current value, read atomically.
inline bool cas_write_pos(WritePos &p, WritePos &expected, const WritePos &desired) noexcept
{
	using u128 = unsigned __int128;
	const u128 e = (static_cast<u128>(expected.last_ts) << 64) | expected.offset;
	const u128 d = (static_cast<u128>(desired.last_ts) << 64) | desired.offset;
	const u128 prev = __sync_val_compare_and_swap(reinterpret_cast<u128 *>(&p), e, d);
	if (prev == e)
		return true;
	expected.offset = static_cast<uint64_t>(prev);
	expected.last_ts = static_cast<uint64_t>(prev >> 64);
	return false;
}

} // namespace detail

// One memfd mapping: header + num_cpus buffers x num_subbuf sub-buffers. Producer operations may be used by any
// number of threads of any processes mapping the channel; consumer operations (get/put) by one consumer per buffer.
class Channel {
public:
	struct Reservation {
		uint8_t *slot;        // where the record goes: header_size header bytes, then the payload
		uint64_t timestamp;   // the record's timestamp (non-decreasing in buffer order)
		uint64_t offset;      // free-running offset of the record in its buffer
		uint32_t header_size; // compact_header_size or extended_header_size
		uint32_t size;        // header_size + payload_size
		uint32_t cpu;         // the buffer
	};

	struct SubbufView {
		const uint8_t *data;      // records only; points into the mapping (valid until put_subbuf)
		uint32_t content_size;    // bytes of records; the rest of the sub-buffer is padding
		uint64_t timestamp_begin; // timestamp of the first record (base of its compact header)
		uint64_t timestamp_end;   // >= every record's timestamp
		uint64_t lost_before;     // cumulative drops of this buffer before this sub-buffer was opened (a drop
					  // racing with the opening may be counted in the next sub-buffer's instead);
					  // never decreases from one sub-buffer to the next
		uint64_t seq;             // 0, 1, 2... per buffer (free-running offset / subbuf_size)
		uint32_t cpu;
	};

	struct OwnedSubbuf {                // a copied-out sub-buffer (snapshot)
		std::vector<uint8_t> bytes; // content_size bytes of records
		uint32_t content_size;
		uint64_t timestamp_begin;
		uint64_t timestamp_end;
		uint64_t lost_before;
		uint64_t seq;
		uint32_t cpu;
		SubbufView view() const noexcept
		{
			return SubbufView{bytes.data(), content_size, timestamp_begin, timestamp_end, lost_before,
			                  seq,          cpu};
		}
	};

	struct RecoveryStats {
		uint32_t subbufs_repaired = 0; // incomplete sub-buffers closed by recovery
		uint64_t uncommitted_bytes =
			0; // reserved but never committed (records in flight at death, unpadded ends)
		uint64_t unreadable_bytes = 0; // committed bytes dropped because they follow an uncommitted record
	};

	// Throws std::invalid_argument naming the bad field, std::system_error if memfd_create/ftruncate/mmap fail.
	static std::unique_ptr<Channel> create(const Config &config, const char *name);
	// Maps an existing channel (takes ownership of fd, also when it throws). Throws std::runtime_error naming
	// what is wrong (magic, version, layout, config, size), std::system_error if fstat/mmap fail.
	static std::unique_ptr<Channel> attach(int fd);
	// Throws std::invalid_argument with a clear message if `config` is unusable.
	static void validate(const Config &config);
	// What validate() finds wrong with `config`: one phrase that starts with the field's name (for the total size:
	// "num_cpus x num_subbuf x subbuf_size") and gives its value and the limit it breaks; "" if `config` is usable.
	static std::string config_error(const Config &config);
	// The bytes create() maps for a usable `config` (headers and data): what a channel costs in shared memory.
	static uint64_t mapping_size_for(const Config &config);
	// Whether Sync::rseq channels can be written by this build and thread (x86-64, the kernel's rseq registered by
	// glibc, not under ThreadSanitizer).
	static bool rseq_available() noexcept { return rseq::registered(); }

	~Channel();
	Channel(const Channel &) = delete;
	Channel &operator=(const Channel &) = delete;

	int fd() const noexcept { return fd_; }
	const Config &config() const noexcept { return config_; }
	std::size_t mapping_size() const noexcept { return map_size_; }

	// ---- producer: any thread of any process; reentrant and async-signal-safe (a signal handler may
	// reserve/commit while the interrupted code is between its own reserve and commit on the same buffer).
	//
	// Reserves header + payload bytes in buffer `cpu` (the caller chooses it; a thread migrated between reserve and
	// commit is fine). clock() is called once, before the write position is read; the timestamp is clamped to the
	// buffer's last timestamp in the CAS loop.
	// Sync::rseq: `cpu` must be the CPU the caller runs on; if the thread is moved meanwhile, the record goes to the
	// buffer of the CPU it is on then (r.cpu says which); if that CPU has no buffer or the thread has no rseq, the
	// record is dropped and counted in lost(cpu).
	// allow_compact=false forces the extended header. Returns false when the record is dropped: discard mode and no
	// free sub-buffer; overwrite mode and the sub-buffer to overwrite is still being written; record larger than a
	// sub-buffer. Every drop is counted exactly once in lost(cpu). Also returns false, without counting, for
	// cpu >= num_cpus (a caller bug: there is no buffer to count it in).
	template <class ClockFn>
	bool reserve(uint32_t cpu, uint32_t payload_size, bool allow_compact, ClockFn &&clock, Reservation &r);
	// Publishes the record. Every successful reserve must be committed exactly once.
	[[gnu::always_inline]] void commit(const Reservation &r) noexcept;
	// reserve(), fill(r) to write the record's header and payload at r.slot, commit(): false, without calling
	// fill, when the record is dropped. The common case keeps the reservation in registers from the reserve to
	// the commit; every other case runs in write_general, out of line.
	template <class ClockFn, class FillFn>
	bool write(uint32_t cpu, uint32_t payload_size, bool allow_compact, ClockFn &&clock, FillFn &&fill);
	// write() for a writer that may wait for space (a blocking channel). When a discard channel has no free
	// sub-buffer for the record, may_wait(waited_ns) is asked, with the nanoseconds this record has slept so far:
	// true, the writer sleeps a moment (wait_for_space) and tries again with a new clock reading; false, the record
	// is dropped and counted in lost(cpu), as write() does. A record that slept is counted once in waits(cpu), its
	// sleep in wait_ns(cpu). Overwrite mode never waits. Nothing is held while the writer sleeps (no reservation,
	// no lock): not async-signal-safe in the sense that matters, since a signal handler that waits while the code
	// it interrupted holds a reservation in the same buffer waits for itself; the caller's may_wait must refuse it.
	template <class ClockFn, class FillFn, class WaitFn>
	bool write_waiting(uint32_t cpu, uint32_t payload_size, bool allow_compact, ClockFn &&clock, FillFn &&fill,
	                   WaitFn &&may_wait);

	// ---- consumer (may be another process; one consumer per buffer; snapshot may run alongside)
	// The producers may be hostile or broken programs that write anything into the mapping, so nothing the consumer
	// side reads there is trusted: every loop over it is bounded, and a buffer found in a state that no writer
	// following this protocol leaves (a consumed position off a sub-buffer boundary or past the write position, in
	// discard mode a write position more than a buffer ahead of it, or a complete sub-buffer that was not opened as
	// its number or whose content ends outside it) quarantines the whole channel: from then on get_subbuf, data_ready
	// and snapshot find nothing, flush and recovery leave the mapping alone, and fault() says what was found.
	// The oldest complete, unconsumed sub-buffer. In overwrite mode writers may overwrite it while it is held:
	// then put_subbuf returns false and whatever was read from it must be thrown away.
	bool get_subbuf(uint32_t cpu, SubbufView &out);
	// Releases the sub-buffer returned by get_subbuf. False if it was overwritten while held (overwrite mode), or
	// if `v` is not the sub-buffer get_subbuf returned.
	bool put_subbuf(uint32_t cpu, const SubbufView &v);
	// Closes the current partial sub-buffer (no-op if it is empty), with timestamp_end = max(now, last timestamp);
	// it becomes complete as soon as the records in flight in it are committed. Lock-free, any process.
	// Sync::rseq: the calling thread runs on `cpu` meanwhile (it is moved there and back, ~tens of microseconds);
	// if it may not run there (cpuset), an online CPU's buffer is left open and flush returns false.
	bool flush(uint32_t cpu, uint64_t now) noexcept;
	uint64_t lost(uint32_t cpu) const noexcept;    // cumulative dropped records
	uint64_t waits(uint32_t cpu) const noexcept;   // records that waited for space (write_waiting), cumulative
	uint64_t wait_ns(uint32_t cpu) const noexcept; // the nanoseconds they slept, cumulative
	// A monitor's sample of buffer `cpu` (any thread, any process; racing writers make it a moment's view):
	// the bytes written into it that its consumer has not released yet, the open sub-buffer's included, at most
	// the buffer's size (num_subbuf x subbuf_size); and the bytes its consumer released so far (whole
	// sub-buffers, cumulative). 0 for a quarantined channel, whose positions are not believed.
	uint64_t unconsumed_bytes(uint32_t cpu) const noexcept;
	uint64_t consumed_bytes(uint32_t cpu) const noexcept;
	// Copies out the complete sub-buffers still present, oldest first, skipping any that got overwritten during the
	// copy. Does not consume. Call flush() first to include the newest partial sub-buffer (it is included once the
	// records in flight in it are committed).
	std::vector<OwnedSubbuf> snapshot(uint32_t cpu);
	// Blocks until some buffer has a sub-buffer ready for get_subbuf (true), timeout_ms elapses or wake_consumer()
	// is called (false unless data is ready then); timeout_ms < 0 waits forever. Returns at once if data is
	// already there.
	bool wait_for_data(int timeout_ms);
	// Makes a consumer blocked in wait_for_data() return now: to stop it without waiting for its timeout.
	void wake_consumer() noexcept;
	// True if get_subbuf(cpu) would return a sub-buffer now (or, in overwrite mode, skip an overwritten one).
	bool data_ready(uint32_t cpu) const noexcept;
	// Quarantines the channel (see above) for what a reader found wrong across sub-buffers (timestamps running
	// backwards, say). The first fault stays: later calls change nothing. Any thread.
	void quarantine(const std::string &what);
	bool quarantined() const noexcept { return quarantined_.load(std::memory_order_acquire); }
	// What quarantined the channel: "cpu N: ..." in one line; "" while it is not.
	std::string fault() const;

	// ---- crash recovery. Precondition: no producer of this channel is alive any more (e.g. the only producing
	// process was SIGKILLed); the consumer side (get/put, snapshot) may be used before and after. Does nothing to
	// a quarantined channel.
	// Every incomplete sub-buffer still readable is closed and marked complete with content truncated to its
	// known-committed prefix; the current partial sub-buffer is closed. Afterwards get_subbuf/snapshot return them.
	//
	// What is recoverable. A record that was reserved but never committed is garbage, and the consumer cannot parse
	// past it, so a sub-buffer is kept up to its first uncommitted byte when that position is known:
	//  * Nothing in flight: everything.
	//  * A single thread writing the buffer (the normal per-CPU case), killed anywhere, including in the middle of
	//    a sub-buffer switch: every committed record is kept. With a signal handler's record nested in the
	//    interrupted one: also, except a nested record committed while the outer one was still in flight (it lies
	//    behind the outer record's garbage; reported in unreadable_bytes).
	//  * Several threads mid-record on the same buffer: kept are the records before the committed prefix P, which
	//    stops at the first record still in flight that a later one was committed ahead of (see commit()).
	//    Committed records after P are not recoverable; their bytes are reported in unreadable_bytes. (A producer
	//    killed inside settle_prefix, between its two compare-and-swaps, loses the records P was taking in: they
	//    are reported in uncommitted_bytes.)
	//    A sub-buffer opened by a writer that died before committing its first record is recovered empty (skipped).
	//    The same applies to an older sub-buffer left incomplete by a thread that died while another thread had
	//    already moved on to the next one.
	// The timestamps of the lost bytes are unknown, so they are not added to lost(); the stats report them.
	RecoveryStats recover_after_producer_death();

private:
	// `config` was validated; the layout is recomputed from it, never read back from the (shared, writable) mapping.
	// populated: the mapping's page table is full (create()'s MAP_POPULATE); otherwise switches fill it.
	Channel(int fd, void *map, std::size_t map_size, const Config &config, bool populated);
	// At a switch of this process into sub-buffer slot `slot` of `cpu`'s buffer: fills its page table for the
	// slot, from the second switch on, until every slot of the buffer was opened once (see unpopulated_).
	void populate_opened_subbuf(uint32_t cpu, uint8_t *slot) noexcept;
	// The common case of reserve() (no clamp, compact header, strictly inside the open sub-buffer), with the clock
	// already read: false if it is not that case or the thread moved meanwhile.
	[[gnu::always_inline]] bool reserve_common(uint32_t cpu, uint32_t payload_size, bool allow_compact,
	                                           uint64_t now, Reservation &r) noexcept;
	// write_waiting() past its common case. clock, fill and may_wait are copies, so that the caller's own never
	// leave the registers.
	template <class ClockFn, class FillFn, class WaitFn>
	[[gnu::noinline]] bool write_general(uint32_t cpu, uint32_t payload_size, bool allow_compact, uint64_t now,
	                                     ClockFn clock, FillFn fill, WaitFn may_wait);
	// What reserve_general found.
	enum Reserved : int {
		// Discard mode, no free sub-buffer, and the caller asked to be told: nothing counted, r.cpu names the buffer.
		kFull = -1,
		kDropped = 0,  // dropped and counted
		kReserved = 1, // r holds the reservation
	};
	// reserve() past its common case: the full loop, with the clock already read. report_full: a record that finds
	// no free sub-buffer in discard mode is reported as kFull instead of being dropped.
	[[gnu::noinline]] Reserved reserve_general(uint32_t cpu, uint32_t payload_size, bool allow_compact,
	                                           uint64_t now, Reservation &r, bool report_full = false) noexcept;
	// reserve_slow: 1 reserved, 0 dropped (counted), -1 try again (cur reloaded), -2 the thread is not on `cpu`,
	// -3 full (report_full; nothing counted).
	[[gnu::cold]] int reserve_slow(uint32_t cpu, uint32_t payload_size, bool allow_compact, uint64_t t,
	                               detail::WritePos &cur, Reservation &r, bool report_full) noexcept;
	// Sleeps a moment while a writer waits for a free sub-buffer: 16 us the first time (`attempt` 0), doubling up
	// to about 1 ms; returns the nanoseconds slept. Async-signal-safe (clock_nanosleep).
	static uint64_t wait_for_space(uint32_t attempt) noexcept;
	// Counts a record that found buffer `cpu` full and was dropped, or that waited `ns` for it.
	void count_drop(uint32_t cpu) noexcept;
	void count_wait(uint32_t cpu, uint64_t ns) noexcept;
	// Advances W of buffer `cpu` from cur to next: 1 done, 0 W had changed (cur reloaded), -1 (Sync::rseq) the
	// thread is not on `cpu` or was interrupted.
	int update_write_pos(uint32_t cpu, detail::BufferHot &hot, detail::WritePos &cur,
	                     const detail::WritePos &next) noexcept;
	// Sync::rseq, after update_write_pos returned -1: retargets cpu/hot/cur to the CPU the thread is on now. False
	// (the record dropped and counted in lost(cpu)) if that CPU has no buffer or the thread has no rseq.
	[[gnu::cold]] bool follow_thread(uint32_t &cpu, detail::BufferHot *&hot, detail::WritePos &cur) noexcept;
	[[gnu::cold]] void on_subbuf_complete() noexcept;
	// Commits [offset, offset + bytes) of buffer `cpu`: commit() out of line, for padding.
	void commit_padding(uint32_t cpu, uint64_t offset, uint64_t bytes) noexcept;
	// commit() of a record that is not the oldest in flight: counted out of order; wakes the consumer if this
	// completes the sub-buffer.
	[[gnu::cold]] void commit_out_of_order(detail::SubbufState &s, uint32_t cpu, uint64_t offset,
	                                       uint64_t bytes) noexcept;
	// The caller's commit left P of sub-buffer `sb_number` at p (it moved P there, or found it there after counting
	// its own record out of order): wakes the consumer if the sub-buffer is complete; else, if the records
	// committed out of order fill [p, W) exactly, moves P to W (the write position), and so on from there.
	[[gnu::cold]] void settle_prefix(detail::SubbufState &s, uint32_t cpu, uint64_t sb_number, uint64_t p) noexcept;
	// Bytes committed in slot `s` over all its generations (P's share and the out-of-order counter), read as of
	// sub-buffer `sb_number` of that slot: gen g is complete when this reaches (g + 1) * S. Less than the true count
	// while a commit races, or a reopening or settle_prefix moves P; never more.
	uint64_t committed(const detail::SubbufState &s, uint64_t sb_number) const noexcept;
	// P's share of committed(): the bytes of the slot's generations up to P.
	uint64_t prefix_share(uint64_t p, uint64_t sb_number) const noexcept;
	// The opener of sub-buffer `sb_number`: moves P to its start; committed() never counts more meanwhile.
	void open_commit_prefix(detail::SubbufState &s, uint64_t sb_number) noexcept;
	void close_subbuf(uint32_t cpu, uint64_t content_end, uint64_t ts) noexcept;
	// quarantine("cpu N: " + what); returns false, for get_subbuf to return.
	bool fault_in(uint32_t cpu, const std::string &what);

	detail::BufferHot *hot_(uint32_t cpu) const noexcept
	{
		return reinterpret_cast<detail::BufferHot *>(buffers_ + static_cast<uint64_t>(cpu) * buffer_stride_);
	}
	detail::BufferCold *cold_(uint32_t cpu) const noexcept
	{
		return reinterpret_cast<detail::BufferCold *>(buffers_ + static_cast<uint64_t>(cpu) * buffer_stride_ +
		                                              sizeof(detail::BufferHot));
	}
	detail::SubbufState *subbuf_(uint32_t cpu, uint64_t sb_number) const noexcept
	{
		return reinterpret_cast<detail::SubbufState *>(buffers_ + static_cast<uint64_t>(cpu) * buffer_stride_ +
		                                               sizeof(detail::BufferHeader)) +
		       (sb_number & subbuf_index_mask_);
	}
	uint8_t *data_(uint32_t cpu) const noexcept
	{
		return data_base_ + (static_cast<uint64_t>(cpu) << log2_buffer_);
	}

	int fd_;
	void *map_;
	std::size_t map_size_;
	Config config_;
	detail::ChannelHeader *hdr_;
	uint8_t *buffers_;
	uint8_t *data_base_;
	uint64_t buffer_stride_;
	uint64_t subbuf_size_;       // S
	uint64_t subbuf_mask_;       // S - 1
	uint64_t subbuf_index_mask_; // M - 1
	uint64_t buffer_mask_;       // M * S - 1
	uint64_t compact_limit_;     // 2^compact_ts_bits
	uint32_t log2_subbuf_;
	uint32_t log2_num_subbuf_;
	uint32_t log2_buffer_;
	uint32_t num_cpus_;
	uint32_t compact_hs_;
	uint32_t extended_hs_;
	Mode mode_;
	bool rseq_;     // config_.sync == Sync::rseq
	bool prefetch_; // discard mode and a buffer of at most kPrefetchMaxBuffer bytes: reserve prefetches ahead
	// Per CPU, how many more of this process's switches on that buffer fill the opened sub-buffer's page-table
	// entries (MADV_POPULATE_WRITE, one call per sub-buffer) before its writers store there. An attached mapping
	// (a traced program's) starts with an empty page table: without this, its writers take a minor fault on the
	// first store to each page, inside a record (25 to 45 ns per call of the function helpers' bench,
	// docs/performance.md), ten times what the call costs per page. The first switch is left out, so that a
	// program writing less than a sub-buffer pays nothing at start; process-local, as page tables are.
	std::unique_ptr<std::atomic<uint32_t>[]> unpopulated_;
	std::atomic<bool> quarantined_{false};
	mutable std::mutex fault_mutex_;
	std::string fault_; // set once, before quarantined_
};

// ---------------------------------------------------------------------------------------------------------------
// Hot path.

[[gnu::always_inline]] inline bool Channel::reserve_common(uint32_t cpu, uint32_t payload_size, bool allow_compact,
                                                           uint64_t now, Reservation &r) noexcept
{
	if (__builtin_expect(cpu >= num_cpus_, 0))
		return false;
	detail::BufferHot *hot = hot_(cpu);
	detail::WritePos cur = detail::load_write_pos(hot->write);
	// The common case as one predicted branch (the header comment says why no data may depend on `now` here).
	const uint64_t sb_off = cur.offset & subbuf_mask_;
	const uint64_t size = uint64_t{compact_hs_} + payload_size;
	if (__builtin_expect(!(allow_compact & (now >= cur.last_ts) & (now - cur.last_ts < compact_limit_) &
	                       (sb_off != 0) & (sb_off + size < subbuf_size_)),
	                     0))
		return false;
	if (__builtin_expect(update_write_pos(cpu, *hot, cur, detail::WritePos{cur.offset + size, now}) <= 0, 0))
		return false;
	r.slot = data_(cpu) + (cur.offset & buffer_mask_);
	if (prefetch_)
		detail::prefetch_for_write(r.slot + detail::kPrefetchAhead);
	r.timestamp = now;
	r.offset = cur.offset;
	r.header_size = compact_hs_;
	r.size = static_cast<uint32_t>(size);
	r.cpu = cpu;
	return true;
}

template <class ClockFn>
[[gnu::always_inline]] inline bool Channel::reserve(uint32_t cpu, uint32_t payload_size, bool allow_compact,
                                                    ClockFn &&clock, Reservation &r)
{
	const uint64_t now = static_cast<uint64_t>(clock());
	if (__builtin_expect(reserve_common(cpu, payload_size, allow_compact, now, r), 1))
		return true;
	return reserve_general(cpu, payload_size, allow_compact, now, r) == kReserved;
}

template <class ClockFn, class FillFn>
[[gnu::always_inline]] inline bool Channel::write(uint32_t cpu, uint32_t payload_size, bool allow_compact,
                                                  ClockFn &&clock, FillFn &&fill)
{
	return write_waiting(cpu, payload_size, allow_compact, clock, fill, [](uint64_t) { return false; });
}

template <class ClockFn, class FillFn, class WaitFn>
[[gnu::always_inline]] inline bool Channel::write_waiting(uint32_t cpu, uint32_t payload_size, bool allow_compact,
                                                          ClockFn &&clock, FillFn &&fill, WaitFn &&may_wait)
{
	const uint64_t now = static_cast<uint64_t>(clock());
	Reservation r;
	if (__builtin_expect(reserve_common(cpu, payload_size, allow_compact, now, r), 1)) {
		fill(static_cast<const Reservation &>(r));
		commit(r);
		return true;
	}
	return write_general(cpu, payload_size, allow_compact, now, clock, fill, may_wait);
}

template <class ClockFn, class FillFn, class WaitFn>
bool Channel::write_general(uint32_t cpu, uint32_t payload_size, bool allow_compact, uint64_t now, ClockFn clock,
                            FillFn fill, WaitFn may_wait)
{
	Reservation r;
	Reserved got = reserve_general(cpu, payload_size, allow_compact, now, r, true);
	if (got == kFull) {
		uint64_t waited = 0;
		for (uint32_t attempt = 0; got == kFull; ++attempt) {
			if (!may_wait(waited)) {
				count_drop(r.cpu);
				if (waited)
					count_wait(r.cpu, waited);
				return false;
			}
			waited += wait_for_space(attempt);
			got = reserve_general(cpu, payload_size, allow_compact, static_cast<uint64_t>(clock()), r,
			                      true);
		}
		count_wait(got == kReserved ? r.cpu : cpu, waited);
	}
	if (got != kReserved)
		return false;
	fill(static_cast<const Reservation &>(r));
	commit(r);
	return true;
}

[[gnu::always_inline]] inline int Channel::update_write_pos(uint32_t cpu, detail::BufferHot &hot, detail::WritePos &cur,
                                                            const detail::WritePos &next) noexcept
{
	if (rseq_) {
		const int rc = rseq::cas16_on_cpu(cpu, &hot.write, cur.offset, cur.last_ts, next.offset, next.last_ts);
		if (rc == 0)
			cur = detail::load_write_pos(hot.write);
		return rc;
	}
	return detail::cas_write_pos(hot.write, cur, next) ? 1 : 0;
}

[[gnu::always_inline]] inline void Channel::commit(const Reservation &r) noexcept
{
	const uint64_t k = r.offset >> log2_subbuf_;
	detail::SubbufState &s = *subbuf_(r.cpu, k);
	if (__builtin_expect(detail::load(s.commit_prefix, std::memory_order_acquire) == r.offset, 1)) {
		// The oldest record in flight: nobody else can move P from here. release: the record's bytes first.
		const uint64_t end = r.offset + r.size;
		detail::store(s.commit_prefix, end, std::memory_order_release);
		// P was opened for this sub-buffer (it equalled our offset), so the out-of-order counter holds only this
		// sub-buffer's bytes now: none in the common case. Records committed ahead of ours (settle_prefix takes them
		// into P) and the sub-buffer's last byte are rare. A race with an out-of-order commit is settled on its side
		// (commit_out_of_order).
		const uint64_t done = ((end - 1) & subbuf_mask_) + 1; // bytes from the sub-buffer's start to our end
		if (__builtin_expect(detail::load(s.commit_ooo, std::memory_order_acquire) != 0 || done == subbuf_size_,
		                     0))
			settle_prefix(s, r.cpu, k, end);
		return;
	}
	commit_out_of_order(s, r.cpu, r.offset, r.size);
}

} // namespace tracery::ringbuf
