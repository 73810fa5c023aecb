// ringbuf/layout.hpp — the shared-memory ABI of a channel: what lies where in its one memfd mapping.
//
// Every process that maps a channel (the traced programs writing it, the consumer in the daemon or in the
// program itself, a crash-recovery reader) agrees on this layout and on nothing else: there are no pointers in
// the mapping, only offsets from its start, and only explicitly sized types. A program may scribble over its
// own mapping, so nothing read from it is trusted as it is: Channel::attach validates the ChannelHeader before
// anything else is read.
//
//   offset 0                      buffers_offset              data_offset (page aligned)           total_size
//   |                             |                           |                                    |
//   v                             v                           v                                    v
//   +-----------------------------+---------------------------+---------------+-----+---------------+
//   | ChannelHeader               | BufferHeader  cpu 0       | data  cpu 0   | ... | data  cpu N-1 |
//   |  magic, version, sizes,     |  BufferHot   (1 line)     |  M x S bytes  |     |  M x S bytes  |
//   |  config, offsets            |  BufferCold  (1 line)     |               |     |               |
//   |  futex_word, waiters        |  SubbufState[M] (1 line   |               |     |               |
//   |  (own cache line)           |    each)                  |               |     |               |
//   |                             | BufferHeader  cpu 1 ...   |               |     |               |
//   +-----------------------------+---------------------------+---------------+-----+---------------+
//
//   One CPU's data area, seen through the free-running write offset W of its BufferHot:
//
//   sub-buffer number k = W / S, slot = k % M, generation = k / M
//   +------------+------------+------------+------------+
//   | slot 0     | slot 1     | slot 2     | slot 3     |   M = 4 slots of S bytes
//   +------------+------------+------------+------------+
//        ^ records only: [header][context][payload] ... then padding to the sub-buffer's end
//
//   SubbufState of a slot (one cache line, free-running absolute values so that an older generation's stale
//   values are recognised):  commit_prefix P | commit_ooo | seq | timestamp_begin | lost_before | content_end |
//   timestamp_end.  A sub-buffer of generation g is complete when P's share plus commit_ooo reach (g + 1) * S
//   (ring_buffer.hpp says how P and the counter move).
//
// Changing anything here changes the ABI between libtracery and the daemon: bump kVersion (attach refuses a
// mapping of another version).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tracery::ringbuf::detail {

inline constexpr std::size_t kCacheLine = 64;
inline constexpr uint64_t kMagic = 0x3146554252595254ull; // "TRYRBUF1" read as little-endian bytes
inline constexpr uint32_t kVersion = 4;

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);

// The write position of a buffer: advanced only by 16-byte compare-and-swap, so offset and last_ts always change
// together. Halves may be read separately with 8-byte atomic loads (a torn read only makes the next CAS fail).
struct alignas(16) WritePos {
	uint64_t offset;  // free-running byte offset of the next reservation
	uint64_t last_ts; // timestamp of the last reservation (or flush) in buffer order
};

// Producer-written line: everything a writer touches on every record lives here.
struct alignas(kCacheLine) BufferHot {
	WritePos write;
	uint64_t lost; // records dropped by reserve(), cumulative
	// Channel::write_waiting, written only by writers that waited for a free sub-buffer: the records that waited
	// and the nanoseconds they slept in all, cumulative.
	uint64_t waits;
	uint64_t wait_ns;
};

// Consumer-written line, read by writers only when they switch sub-buffers.
struct alignas(kCacheLine) BufferCold {
	uint64_t consumed; // free-running offset (multiple of S) of the oldest sub-buffer not yet released
};

// Per sub-buffer slot; one cache line each. Free-running absolute values identify the generation they belong
// to, so stale values of an older generation are recognised instead of misread.
struct alignas(kCacheLine) SubbufState {
	uint64_t commit_prefix;   // absolute offset P: every byte of [start of the slot's sub-buffer, P) is committed
	uint64_t commit_ooo;      // bytes committed out of order (see the header comment); with P, gen g of the slot
				  // is complete when they add up to (g + 1) * S (Channel::committed)
	uint64_t seq;             // sub-buffer number k, written last (release) by the writer that opened it
	uint64_t timestamp_begin; // timestamp of the first record
	uint64_t lost_before;     // lost counter when the sub-buffer was opened
	uint64_t content_end;     // absolute offset where the records end, written last (release) by the closer
	uint64_t timestamp_end;   // >= every record timestamp of the sub-buffer, <= the next sub-buffer's begin
};

// Set in commit_prefix while the writer opening a slot's next sub-buffer moves the old generation's share out of
// the out-of-order counter (offsets never reach 2^63); a commit never finds its own offset in a marked P, so it
// counts out of order meanwhile.
inline constexpr uint64_t kReopening = uint64_t{1} << 63;

struct BufferHeader {
	BufferHot hot;
	BufferCold cold;
	// followed by SubbufState[num_subbuf]
};

struct alignas(kCacheLine) ChannelHeader {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;        // sizeof(ChannelHeader)
	uint32_t subbuf_state_size;  // sizeof(SubbufState): layout check between builds
	uint32_t buffer_header_size; // sizeof(BufferHeader) + num_subbuf * sizeof(SubbufState)
	uint32_t num_cpus;
	uint32_t num_subbuf;
	uint32_t subbuf_size;
	uint32_t mode;
	uint32_t compact_header_size;
	uint32_t extended_header_size;
	uint32_t compact_ts_bits;
	uint32_t sync;
	uint64_t buffers_offset; // from the start of the mapping
	uint64_t data_offset;    // page aligned
	uint64_t total_size;
	alignas(kCacheLine) uint32_t futex_word; // bumped on every wakeup
	uint32_t waiters;                        // consumers blocked in wait_for_data()
};

static_assert(sizeof(WritePos) == 16);
static_assert(sizeof(BufferHot) == kCacheLine && sizeof(BufferCold) == kCacheLine);
static_assert(sizeof(SubbufState) == kCacheLine);
static_assert(sizeof(BufferHeader) == 2 * kCacheLine);
static_assert(sizeof(ChannelHeader) == 3 * kCacheLine);

} // namespace tracery::ringbuf::detail
