// ring_buffer.cpp — cold parts of the ring buffer: channel creation/attach and validation, sub-buffer switch,
// flush, consumer get/put/snapshot, futex wakeup and crash recovery. The hot path is inline in ring_buffer.hpp.
#include "ringbuf/ring_buffer.hpp"

#include "base/cpu.hpp"
#include "base/fd.hpp"
#include "base/futex.hpp"
#include "base/monotonic.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#define TRACERY_RINGBUF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRACERY_RINGBUF_TSAN 1
#endif
#endif

#ifdef TRACERY_RINGBUF_TSAN
// Copies that race with writers by design (validated afterwards, seqlock style) are hidden from TSan.
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
#endif

namespace tracery::ringbuf {

using detail::BufferCold;
using detail::BufferHeader;
using detail::BufferHot;
using detail::ChannelHeader;
using detail::load;
using detail::store;
using detail::SubbufState;
using detail::WritePos;

namespace {

// Orders the (racy by design, validated afterwards) reads of a sub-buffer before the re-check of the write
// position. GCC's TSan does not model fences (-Wtsan); those reads are hidden from it anyway.
inline void read_validate_fence()
{
#if defined(__GNUC__) && !defined(__clang__) && defined(TRACERY_RINGBUF_TSAN)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
	__atomic_thread_fence(__ATOMIC_ACQUIRE); // the builtin, so that the pragma above applies to it
#if defined(__GNUC__) && !defined(__clang__) && defined(TRACERY_RINGBUF_TSAN)
#pragma GCC diagnostic pop
#endif
}

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMaxTotalSize = uint64_t{1} << 40;

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint32_t log2u(uint64_t v) { return static_cast<uint32_t>(63 - __builtin_clzll(v)); }
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Layout {
	uint64_t buffer_header_size;
	uint64_t buffers_offset;
	uint64_t data_offset;
	uint64_t total_size;
};

Layout compute_layout(const Config &c)
{
	Layout l;
	l.buffer_header_size = sizeof(BufferHeader) + uint64_t{c.num_subbuf} * sizeof(SubbufState);
	l.buffers_offset = round_up(sizeof(ChannelHeader), detail::kCacheLine);
	l.data_offset = round_up(l.buffers_offset + l.buffer_header_size * c.num_cpus, kPage);
	l.total_size = l.data_offset + uint64_t{c.num_cpus} * c.num_subbuf * c.subbuf_size;
	return l;
}

Config config_of(const ChannelHeader &h)
{
	Config c;
	c.num_cpus = h.num_cpus;
	c.num_subbuf = h.num_subbuf;
	c.subbuf_size = h.subbuf_size;
	c.mode = static_cast<Mode>(h.mode);
	c.sync = static_cast<Sync>(h.sync);
	c.compact_header_size = h.compact_header_size;
	c.extended_header_size = h.extended_header_size;
	c.compact_ts_bits = h.compact_ts_bits;
	return c;
}

[[noreturn]] void attach_fail(const std::string &what)
{
	throw std::runtime_error("tracery::ringbuf::Channel::attach: " + what);
}

// Keeps the calling thread on one CPU for its lifetime, then restores its affinity (Channel::flush, Sync::rseq).
class RunOnCpu {
public:
	explicit RunOnCpu(uint32_t cpu) noexcept
	{
		if (::sched_getaffinity(0, sizeof saved_, &saved_) != 0 || cpu >= CPU_SETSIZE)
			return;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (::sched_setaffinity(0, sizeof one, &one) != 0)
			return;
		pinned_ = true;
		// sched_setaffinity moves the caller before it returns; the rseq area confirms it.
		for (int i = 0; i < 1000 && rseq::current_cpu() != static_cast<int32_t>(cpu); ++i)
			::sched_yield();
		ok_ = rseq::current_cpu() == static_cast<int32_t>(cpu);
	}
	~RunOnCpu()
	{
		if (pinned_)
			::sched_setaffinity(0, sizeof saved_, &saved_);
	}
	RunOnCpu(const RunOnCpu &) = delete;
	RunOnCpu &operator=(const RunOnCpu &) = delete;
	bool ok() const noexcept { return ok_; }

private:
	cpu_set_t saved_;
	bool pinned_ = false;
	bool ok_ = false;
};

// Raises `v` to at least `target` (free-running positions only move forward).
void advance_to(uint64_t &v, uint64_t target)
{
	std::atomic_ref<uint64_t> a(v);
	uint64_t cur = a.load(std::memory_order_relaxed);
	while (cur < target && !a.compare_exchange_weak(cur, target, std::memory_order_acq_rel)) {
	}
}

} // namespace

std::string Channel::config_error(const Config &c)
{
	auto s = [](uint64_t v) { return std::to_string(v); };
	if (c.num_cpus < 1 || c.num_cpus > 8192)
		return "num_cpus = " + s(c.num_cpus) + " must be in 1..8192";
	if (c.num_subbuf < 2 || c.num_subbuf > 65536 || !is_pow2(c.num_subbuf))
		return "num_subbuf = " + s(c.num_subbuf) + " must be a power of two in 2..65536";
	if (c.subbuf_size < 4096 || c.subbuf_size > (1u << 30) || !is_pow2(c.subbuf_size))
		return "subbuf_size = " + s(c.subbuf_size) + " must be a power of two in 4096..2^30";
	if (c.mode != Mode::discard && c.mode != Mode::overwrite)
		return "mode = " + s(static_cast<uint32_t>(c.mode)) + " is neither discard (0) nor overwrite (1)";
	if (c.sync != Sync::atomic && c.sync != Sync::rseq)
		return "sync = " + s(static_cast<uint32_t>(c.sync)) + " is neither atomic (0) nor rseq (1)";
	if (c.compact_header_size < 1 || c.compact_header_size > c.extended_header_size)
		return "compact_header_size = " + s(c.compact_header_size) + " must be in 1..extended_header_size (" +
		       s(c.extended_header_size) + ")";
	if (c.extended_header_size > 4096 || c.extended_header_size >= c.subbuf_size)
		return "extended_header_size = " + s(c.extended_header_size) + " must be <= 4096 and < subbuf_size";
	if (c.compact_ts_bits > 63)
		return "compact_ts_bits = " + s(c.compact_ts_bits) + " must be <= 63";
	const uint64_t buffer = uint64_t{c.num_subbuf} * c.subbuf_size;
	if (buffer * c.num_cpus > kMaxTotalSize)
		return "num_cpus x num_subbuf x subbuf_size = " + s(buffer * c.num_cpus) + " bytes exceeds 2^40";
	return {};
}

uint64_t Channel::mapping_size_for(const Config &config) { return compute_layout(config).total_size; }

void Channel::validate(const Config &config)
{
	const std::string e = config_error(config);
	if (!e.empty())
		throw std::invalid_argument("tracery::ringbuf: invalid Config: " + e);
}

std::unique_ptr<Channel> Channel::create(const Config &config, const char *name)
{
	validate(config);
	const Layout l = compute_layout(config);
	base::Fd fd{::memfd_create(name && *name ? name : "tracery-ringbuf", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
	if (!fd)
		throw std::system_error(errno, std::generic_category(), "tracery::ringbuf: memfd_create");
	if (::ftruncate(fd.get(), static_cast<off_t>(l.total_size)) != 0)
		throw std::system_error(errno, std::generic_category(), "tracery::ringbuf: ftruncate");
	// The size is final: a process the file is handed to (a traced program,
	// when the daemon made it) cannot shrink it under another's mapping, whose
	// next access would be a SIGBUS, nor unseal it.
	if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		throw std::system_error(errno, std::generic_category(), "tracery::ringbuf: sealing the memfd's size");
	// MAP_POPULATE: the producer hot path must not take page faults.
	void *map = ::mmap(nullptr, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
	if (map == MAP_FAILED)
		throw std::system_error(errno, std::generic_category(), "tracery::ringbuf: mmap");

	auto *h = static_cast<ChannelHeader *>(map); // the file is zero-filled: every counter starts at 0
	h->version = detail::kVersion;
	h->header_size = sizeof(ChannelHeader);
	h->subbuf_state_size = sizeof(SubbufState);
	h->buffer_header_size = static_cast<uint32_t>(l.buffer_header_size);
	h->num_cpus = config.num_cpus;
	h->num_subbuf = config.num_subbuf;
	h->subbuf_size = config.subbuf_size;
	h->mode = static_cast<uint32_t>(config.mode);
	h->sync = static_cast<uint32_t>(config.sync);
	h->compact_header_size = config.compact_header_size;
	h->extended_header_size = config.extended_header_size;
	h->compact_ts_bits = config.compact_ts_bits;
	h->buffers_offset = l.buffers_offset;
	h->data_offset = l.data_offset;
	h->total_size = l.total_size;
	auto *base = static_cast<uint8_t *>(map);
	for (uint32_t cpu = 0; cpu < config.num_cpus; ++cpu) {
		auto *subbufs = reinterpret_cast<SubbufState *>(base + l.buffers_offset + cpu * l.buffer_header_size +
		                                                sizeof(BufferHeader));
		for (uint32_t i = 0; i < config.num_subbuf; ++i) {
			subbufs[i].seq = ~uint64_t{0}; // "never opened"
			subbufs[i].commit_prefix =
				uint64_t{i} * config.subbuf_size; // the start of the slot's first sub-buffer
		}
	}
	store(h->magic, detail::kMagic, std::memory_order_release); // last: the header is complete
	return std::unique_ptr<Channel>(new Channel(fd.release(), map, l.total_size, config, true));
}

std::unique_ptr<Channel> Channel::attach(int fd_in)
{
	base::Fd fd{fd_in};
	if (!fd)
		attach_fail("invalid file descriptor " + std::to_string(fd_in));
	struct stat st;
	if (::fstat(fd.get(), &st) != 0)
		throw std::system_error(errno, std::generic_category(), "tracery::ringbuf: fstat");
	const auto file_size = static_cast<uint64_t>(st.st_size);
	ChannelHeader h;
	if (file_size < sizeof h)
		attach_fail("file is " + std::to_string(file_size) + " bytes, too small for a channel header");
	if (::pread(fd.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
		throw std::system_error(errno, std::generic_category(),
		                        "tracery::ringbuf: pread of the channel header");
	if (h.magic != detail::kMagic)
		attach_fail("bad magic: not a tracery ring buffer (or not initialised yet)");
	if (h.version != detail::kVersion)
		attach_fail("unsupported version " + std::to_string(h.version) + " (expected " +
		            std::to_string(detail::kVersion) + ")");
	if (h.header_size != sizeof(ChannelHeader) || h.subbuf_state_size != sizeof(SubbufState))
		attach_fail("layout mismatch: header_size " + std::to_string(h.header_size) + "/subbuf_state_size " +
		            std::to_string(h.subbuf_state_size) + " (expected " +
		            std::to_string(sizeof(ChannelHeader)) + "/" + std::to_string(sizeof(SubbufState)) + ")");
	const Config c = config_of(h);
	if (const std::string e = config_error(c); !e.empty())
		attach_fail("bad config in header: " + e);
	const Layout l = compute_layout(c);
	if (h.buffer_header_size != l.buffer_header_size || h.buffers_offset != l.buffers_offset ||
	    h.data_offset != l.data_offset || h.total_size != l.total_size)
		attach_fail("layout mismatch: buffer_header_size/buffers_offset/data_offset/total_size = " +
		            std::to_string(h.buffer_header_size) + "/" + std::to_string(h.buffers_offset) + "/" +
		            std::to_string(h.data_offset) + "/" + std::to_string(h.total_size) + ", expected " +
		            std::to_string(l.buffer_header_size) + "/" + std::to_string(l.buffers_offset) + "/" +
		            std::to_string(l.data_offset) + "/" + std::to_string(l.total_size));
	if (file_size < l.total_size)
		attach_fail("file size " + std::to_string(file_size) + " is smaller than the channel size " +
		            std::to_string(l.total_size));
	// Not populated here: a traced program attaches at its start (its switches fill the page table, Channel()).
	void *map = ::mmap(nullptr, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
	if (map == MAP_FAILED)
		throw std::system_error(errno, std::generic_category(), "tracery::ringbuf: mmap");
	return std::unique_ptr<Channel>(new Channel(fd.release(), map, l.total_size, c, false));
}

Channel::Channel(int fd, void *map, std::size_t map_size, const Config &config, bool populated)
	: fd_(fd), map_(map), map_size_(map_size), config_(config)
{
	const Layout l = compute_layout(config_);
	hdr_ = static_cast<ChannelHeader *>(map);
	auto *base = static_cast<uint8_t *>(map);
	buffers_ = base + l.buffers_offset;
	data_base_ = base + l.data_offset;
	buffer_stride_ = l.buffer_header_size;
	subbuf_size_ = config_.subbuf_size;
	subbuf_mask_ = subbuf_size_ - 1;
	subbuf_index_mask_ = config_.num_subbuf - 1;
	log2_subbuf_ = log2u(config_.subbuf_size);
	log2_num_subbuf_ = log2u(config_.num_subbuf);
	log2_buffer_ = log2_subbuf_ + log2_num_subbuf_;
	buffer_mask_ = (uint64_t{1} << log2_buffer_) - 1;
	compact_limit_ = uint64_t{1} << config_.compact_ts_bits;
	num_cpus_ = config_.num_cpus;
	compact_hs_ = config_.compact_header_size;
	extended_hs_ = config_.extended_header_size;
	mode_ = config_.mode;
	prefetch_ = mode_ == Mode::discard && (subbuf_size_ << log2_num_subbuf_) <= detail::kPrefetchMaxBuffer;
	rseq_ = config_.sync == Sync::rseq;
	unpopulated_ = std::make_unique<std::atomic<uint32_t>[]>(num_cpus_);
	for (uint32_t cpu = 0; cpu < num_cpus_; ++cpu)
		unpopulated_[cpu].store(populated ? 0 : config_.num_subbuf, std::memory_order_relaxed);
}

void Channel::populate_opened_subbuf(uint32_t cpu, uint8_t *slot) noexcept
{
	// Relaxed: two switches racing here (threads of this process on one CPU's buffer without rseq) at worst fill
	// one slot twice or leave one to page faults.
	const uint32_t left = unpopulated_[cpu].load(std::memory_order_relaxed);
	if (left == 0)
		return;
	unpopulated_[cpu].store(left - 1, std::memory_order_relaxed);
	if (left != config_.num_subbuf)                                   // not the process's first switch there
		(void)::madvise(slot, subbuf_size_, MADV_POPULATE_WRITE); // Linux < 5.14: EINVAL, page faults as before
}

Channel::~Channel()
{
	::munmap(map_, map_size_);
	::close(fd_);
}

// ---------------------------------------------------------------------------------------------------------------
// Producer slow paths. All async-signal-safe: atomics only, plus FUTEX_WAKE when a consumer waits, sched_yield
// when a writer takes the last free sub-buffer and madvise when an attaching process opens a sub-buffer first.

Channel::Reserved Channel::reserve_general(uint32_t cpu, uint32_t payload_size, bool allow_compact, uint64_t now,
                                           Reservation &r, bool report_full) noexcept
{
	if (cpu >= num_cpus_)
		return kDropped;
	BufferHot *hot = hot_(cpu);
	WritePos cur = detail::load_write_pos(hot->write);
	for (;;) {
		// Another process' clock may lag by a few ns, and a record reserved meanwhile (another thread, a signal
		// handler) may carry a later time.
		const uint64_t t = now < cur.last_ts ? cur.last_ts : now;
		const uint64_t sb_off = cur.offset & subbuf_mask_;
		const uint32_t hs = (allow_compact && t - cur.last_ts < compact_limit_) ? compact_hs_ : extended_hs_;
		const uint64_t size = uint64_t{hs} + payload_size;
		if (sb_off != 0 && sb_off + size < subbuf_size_) {
			const int rc = update_write_pos(cpu, *hot, cur, WritePos{cur.offset + size, t});
			if (rc > 0) {
				r = Reservation{data_(cpu) + (cur.offset & buffer_mask_),
				                t,
				                cur.offset,
				                hs,
				                static_cast<uint32_t>(size),
				                cpu};
				return kReserved;
			}
			if (rc < 0 && !follow_thread(cpu, hot, cur))
				return kDropped;
			continue; // cur now holds the current position
		}
		const int rc = reserve_slow(cpu, payload_size, allow_compact, t, cur, r, report_full);
		if (rc >= 0)
			return rc != 0 ? kReserved : kDropped;
		if (rc == -3) {
			r.cpu = cpu;
			return kFull;
		}
		if (rc == -2 && !follow_thread(cpu, hot, cur))
			return kDropped;
	}
}

int Channel::reserve_slow(uint32_t cpu, uint32_t payload_size, bool allow_compact, uint64_t t, WritePos &cur,
                          Reservation &r, bool report_full) noexcept
{
	// Sync::rseq: the drop decisions below are about this CPU's buffer; a thread already elsewhere retargets first.
	if (rseq_ && rseq::current_cpu() != static_cast<int32_t>(cpu))
		return -2;
	BufferHot &hot = *hot_(cpu);
	const uint64_t S = subbuf_size_;
	const uint64_t sb_off = cur.offset & subbuf_mask_;
	if (sb_off != 0) {
		// The record may still fit in the open sub-buffer: exactly filling it (the fast path takes only records that
		// end strictly inside).
		const uint32_t hs = (allow_compact && t - cur.last_ts < compact_limit_) ? compact_hs_ : extended_hs_;
		const uint64_t size = uint64_t{hs} + payload_size;
		if (sb_off + size <= S) {
			if (const int rc = update_write_pos(cpu, hot, cur, WritePos{cur.offset + size, t}); rc <= 0)
				return rc - 1;
			if (((cur.offset + size) & subbuf_mask_) == 0)
				close_subbuf(cpu, cur.offset + size, t); // no padding
			r = Reservation{data_(cpu) + (cur.offset & buffer_mask_),
			                t,
			                cur.offset,
			                hs,
			                static_cast<uint32_t>(size),
			                cpu};
			return 1;
		}
	}
	// The record opens the next sub-buffer (closing the open one, if any). Its delta to timestamp_begin is 0.
	const uint32_t hs = allow_compact ? compact_hs_ : extended_hs_;
	const uint64_t size = uint64_t{hs} + payload_size;
	if (size > S) {
		detail::fetch_add(hot.lost, uint64_t{1}, std::memory_order_relaxed);
		return 0;
	}
	const uint64_t ns = cur.offset - sb_off + (sb_off != 0 ? S : 0);
	const uint64_t k = ns >> log2_subbuf_;
	const uint64_t gen = k >> log2_num_subbuf_;
	SubbufState &s = *subbuf_(cpu, k);
	bool full;
	bool last_free = false;
	if (mode_ == Mode::discard) {
		// Never enter a sub-buffer the consumer has not released.
		const uint64_t end = load(cold_(cpu)->consumed, std::memory_order_acquire) + (S << log2_num_subbuf_);
		full = ns >= end;
		last_free = ns + S == end;
	} else {
		// Overwrite, but not a sub-buffer whose previous generation is still being written.
		full = committed(s, k) < (gen << log2_subbuf_);
	}
	if (full) {
		// Only drop if `cur` was the current position when `full` was observed (else retry: the buffer moved on).
		if (load(hot.write.offset, std::memory_order_acquire) != cur.offset) {
			cur = detail::load_write_pos(hot.write);
			return -1;
		}
		if (report_full && mode_ == Mode::discard)
			return -3;
		detail::fetch_add(hot.lost, uint64_t{1}, std::memory_order_relaxed);
		return 0;
	}
	// lost_before is read before our CAS, but after an acquire load of W that saw the previous opener's CAS: the
	// previous opener's read happens-before ours, so lost_before never decreases from one sub-buffer to the next.
	if (load(hot.write.offset, std::memory_order_acquire) != cur.offset) {
		cur = detail::load_write_pos(hot.write);
		return -1;
	}
	const uint64_t lost_before = load(hot.lost, std::memory_order_acquire);
	if (const int rc = update_write_pos(cpu, hot, cur, WritePos{ns + size, t}); rc <= 0)
		return rc - 1;
	// We own the switch: close the old sub-buffer, then open the new one.
	if (sb_off != 0)
		close_subbuf(cpu, cur.offset, t);
	open_commit_prefix(s, k);
	store(s.timestamp_begin, t);
	store(s.lost_before, lost_before);
	store(s.seq, k, std::memory_order_release);
	if (size == S)
		close_subbuf(cpu, ns + S, t);
	if (mode_ == Mode::overwrite && gen > 0)
		advance_to(cold_(cpu)->consumed, ns - S * (config_.num_subbuf - 1));
	if (sb_off != 0)
		commit_padding(cpu, cur.offset, S - sb_off); // may complete the old sub-buffer
	r = Reservation{data_(cpu) + (ns & buffer_mask_), t, ns, hs, static_cast<uint32_t>(size), cpu};
	populate_opened_subbuf(cpu, r.slot);
	// The record took the last free sub-buffer: the next switch would drop. Give the CPU to whatever else may run
	// here, which is often the consumer: woken, it may otherwise wait for this thread's whole time slice (3-5 ms
	// measured), longer than an emitter at full speed takes to fill a default buffer (docs/performance.md). Once
	// per sub-buffer at most, and only while the consumer is behind.
	if (last_free)
		sched_yield();
	return 1;
}

uint64_t Channel::wait_for_space(uint32_t attempt) noexcept
{
	const long ns = 16'000L << (attempt < 6 ? attempt : 6);
	const uint64_t start = base::monotonic_ns();
	const timespec step{0, ns};
	::clock_nanosleep(CLOCK_MONOTONIC, 0, &step, nullptr); // EINTR: a shorter wait, measured as such
	return base::monotonic_ns() - start;
}

void Channel::count_drop(uint32_t cpu) noexcept
{
	detail::fetch_add(hot_(cpu)->lost, uint64_t{1}, std::memory_order_relaxed);
}

void Channel::count_wait(uint32_t cpu, uint64_t ns) noexcept
{
	BufferHot &hot = *hot_(cpu);
	detail::fetch_add(hot.waits, uint64_t{1}, std::memory_order_relaxed);
	detail::fetch_add(hot.wait_ns, ns, std::memory_order_relaxed);
}

void Channel::close_subbuf(uint32_t cpu, uint64_t content_end, uint64_t ts) noexcept
{
	SubbufState &s = *subbuf_(cpu, (content_end - 1) >> log2_subbuf_);
	store(s.timestamp_end, ts);
	store(s.content_end, content_end, std::memory_order_release);
}

void Channel::commit_padding(uint32_t cpu, uint64_t offset, uint64_t bytes) noexcept
{
	commit(Reservation{nullptr, 0, offset, 0, static_cast<uint32_t>(bytes), cpu});
}

void Channel::commit_out_of_order(SubbufState &s, uint32_t cpu, uint64_t offset, uint64_t bytes) noexcept
{
	const uint64_t sb_number = offset >> log2_subbuf_;
	detail::fetch_add(s.commit_ooo, bytes, std::memory_order_seq_cst);
	// The record in flight before ours may have committed since we read P, moving P onto our record, after reading
	// the counter without our add: then only we see that P can move on from here.
	if (load(s.commit_prefix, std::memory_order_seq_cst) == offset) {
		settle_prefix(s, cpu, sb_number, offset);
		return;
	}
	uint64_t c = committed(s, sb_number);
	// A commit that moved P at the same time may not be visible yet: its plain store can still sit in its CPU's
	// store buffer while its own load of commit_ooo missed our add. Neither side would then see the sub-buffer
	// complete, and nobody would wake the consumer. So when every byte of the sub-buffer is reserved but the count
	// falls short, give such a store the short time it takes to drain (this path is rare: a record committed while
	// an older one is in flight). A writer that is really still in flight commits later and then sees our add.
	const uint64_t sb_start = sb_number << log2_subbuf_;
	const uint64_t complete_at = ((sb_number >> log2_num_subbuf_) + 1) << log2_subbuf_;
	if (c < complete_at && load(hot_(cpu)->write.offset, std::memory_order_acquire) >= sb_start + subbuf_size_) {
		for (int i = 0; i < 1000 && c < complete_at; ++i) {
			base::cpu_relax();
			c = committed(s, sb_number);
		}
	}
	if (c == complete_at)
		on_subbuf_complete();
}

void Channel::settle_prefix(SubbufState &s, uint32_t cpu, uint64_t sb_number, uint64_t p) noexcept
{
	// P may take in the bytes counted out of order only when they are exactly [p, W): every record before W
	// committed, W inside the sub-buffer. The counter was read before W, so each record it counts was reserved
	// before W was read, and lies in [p, W) (the bytes before P are P's); counting W - p bytes there, it counts all
	// of them. Then the record at p is counted too, so its owner will not move P (only the owner of the record at P
	// moves P with a plain store, and only when it commits in order).
	//
	// The counter gives them up first, by a compare-and-swap from exactly that count to 0, and P moves second:
	// committed() reads P first, so meanwhile it counts less, never more. Nor can the sub-buffer be complete
	// meanwhile, or before: it was not when the counter held W - p (W was inside it), and until P moves the count
	// falls W - p short of what is committed. So no consumer can take it and no writer reopen its slot while P
	// moves, and P's compare-and-swap fails only if the slot was reopened before the first step (the counter held
	// the new generation's W - p bytes by chance): then the bytes go back to the counter.
	const uint64_t sb_start = sb_number << log2_subbuf_;
	const uint64_t sb_end = sb_start + subbuf_size_;
	// Each turn follows at least one more record of the sub-buffer: more turns than it holds records only happen
	// when something else writes the counters (a program scribbling on its mapping, with the daemon flushing).
	const uint64_t max_turns = subbuf_size_ / compact_hs_ + 2;
	for (uint64_t turn = 0; turn < max_turns; ++turn) {
		const uint64_t ooo = load(s.commit_ooo, std::memory_order_seq_cst);
		if (p - sb_start + ooo == subbuf_size_) {
			on_subbuf_complete();
			return;
		}
		if (ooo == 0)
			return;
		const uint64_t w = load(hot_(cpu)->write.offset, std::memory_order_acquire);
		if (w >= sb_end || w - p != ooo)
			return; // a record before W is in flight, or the sub-buffer is closed
		if (!detail::compare_exchange(s.commit_ooo, ooo, uint64_t{0}, std::memory_order_seq_cst))
			continue; // more committed since: look again (at most once per record of the sub-buffer)
		if (!detail::compare_exchange(s.commit_prefix, p, w, std::memory_order_seq_cst)) {
			detail::fetch_add(s.commit_ooo, ooo, std::memory_order_seq_cst);
			on_subbuf_complete(); // a completion counted short meanwhile went unseen (at worst a spurious wakeup)
			return;
		}
		p = w; // the record at W, if any, commits in order now (or out of order if it read P before: look again)
	}
}

uint64_t Channel::prefix_share(uint64_t p, uint64_t sb_number) const noexcept
{
	// The sub-buffer P belongs to: the one it is inside of, or, on a multiple of S, the one of this slot that
	// starts or ends there (M >= 2, so only one of the two is in this slot).
	uint64_t k = p >> log2_subbuf_;
	if ((p & subbuf_mask_) == 0 && ((k ^ sb_number) & subbuf_index_mask_) != 0)
		k -= 1;
	return ((k >> log2_num_subbuf_) << log2_subbuf_) + (p - (k << log2_subbuf_));
}

uint64_t Channel::committed(const SubbufState &s, uint64_t sb_number) const noexcept
{
	// P first, then the counter: P's final store after a reopening comes after the counter gave up the old
	// generation's share, so a moved P always comes with the reduced counter. An old P read with a counter reduced
	// since counts less than was committed, which only delays.
	// seq_cst (plain loads on x86, as acquire): an out-of-order commit adds to the counter, then reads P here, while
	// settle_prefix moves P, then reads the counter; one of them must see the other to notice a completion.
	const uint64_t p = load(s.commit_prefix, std::memory_order_seq_cst);
	if (p & detail::kReopening) [[unlikely]]
		return prefix_share(p & ~detail::kReopening,
		                    sb_number); // none of the generation being opened counted yet
	return prefix_share(p, sb_number) + load(s.commit_ooo, std::memory_order_seq_cst);
}

void Channel::open_commit_prefix(SubbufState &s, uint64_t sb_number) noexcept
{
	// Every earlier sub-buffer of the slot is complete (its consumer released it, or overwrite mode checked), so
	// P's share plus the out-of-order counter is the generation's base: the counter gives P the part of it that P
	// did not count, gen_base - share. Until it has, P is marked (kReopening), and committed() counts nothing of
	// the new generation: P moved with the counter not yet reduced would count the old generation's out-of-order
	// bytes again, and a consumer could take the sub-buffer being opened for a complete one.
	const uint64_t share = prefix_share(load(s.commit_prefix, std::memory_order_acquire), sb_number);
	const uint64_t gen_base = (sb_number >> log2_num_subbuf_) << log2_subbuf_;
	const uint64_t start = sb_number << log2_subbuf_;
	if (share != gen_base) {
		store(s.commit_prefix, start | detail::kReopening, std::memory_order_release);
		detail::fetch_add(s.commit_ooo, share - gen_base, std::memory_order_acq_rel); // wraps: -
	}
	store(s.commit_prefix, start, std::memory_order_release);
}

void Channel::on_subbuf_complete() noexcept
{
	// Dekker handshake with wait_for_data(), made of read-modify-writes on `waiters` (no fence): if this RMW comes
	// first in the order of `waiters`, the consumer's increment synchronizes with it and the consumer then sees the
	// completed sub-buffer; otherwise we see the consumer waiting. Only on sub-buffer completion.
	if (detail::fetch_add(hdr_->waiters, uint32_t{0}, std::memory_order_acq_rel) == 0)
		return;
	const int saved_errno = errno; // we may run in a signal handler
	wake_consumer();
	errno = saved_errno;
}

bool Channel::follow_thread(uint32_t &cpu, BufferHot *&hot, WritePos &cur) noexcept
{
	const int32_t now = rseq::current_cpu();
	if (now < 0 || static_cast<uint32_t>(now) >= num_cpus_) {
		detail::fetch_add(hot->lost, uint64_t{1}, std::memory_order_relaxed);
		return false;
	}
	cpu = static_cast<uint32_t>(now);
	hot = hot_(cpu);
	cur = detail::load_write_pos(hot->write);
	return true;
}

bool Channel::flush(uint32_t cpu, uint64_t now) noexcept
{
	if (cpu >= num_cpus_ || quarantined())
		return true;
	BufferHot &hot = *hot_(cpu);
	if ((load(hot.write.offset) & subbuf_mask_) == 0)
		return true; // nothing open (racy hint; checked again below)
	// Sync::rseq: W may only change on its CPU. If the CPU is offline nobody can be writing there (a thread in the
	// middle of a sequence when it went down was moved off, which aborted the sequence): the atomic path is safe.
	std::optional<RunOnCpu> on_cpu;
	bool use_rseq = rseq_;
	if (use_rseq) {
		on_cpu.emplace(cpu);
		if (!on_cpu->ok()) {
			if (base::cpu_online(cpu))
				return false;
			use_rseq = false;
		}
	}
	WritePos cur = detail::load_write_pos(hot.write);
	uint64_t sb_off, t;
	// Each failed turn means a writer reserved meanwhile; so many in a row mean that something keeps rewriting W
	// (the buffer then stays open: the consumer gets what was complete).
	constexpr int kMaxTurns = 1 << 16;
	for (int turn = 0;; ++turn) {
		if (turn == kMaxTurns)
			return false;
		sb_off = cur.offset & subbuf_mask_;
		if (sb_off == 0)
			return true; // nothing open
		t = std::max(now, cur.last_ts);
		const WritePos next{cur.offset - sb_off + subbuf_size_, t};
		if (!use_rseq) {
			if (detail::cas_write_pos(hot.write, cur, next))
				break;
			continue;
		}
		const int rc = update_write_pos(cpu, hot, cur, next);
		if (rc > 0)
			break;
		if (rc < 0) {
			if (rseq::current_cpu() != static_cast<int32_t>(cpu))
				return false;                    // moved off cpu by someone else
			cur = detail::load_write_pos(hot.write); // preempted or signalled: try again
		}
	}
	close_subbuf(cpu, cur.offset, t);
	commit_padding(cpu, cur.offset, subbuf_size_ - sb_off);
	return true;
}

uint64_t Channel::lost(uint32_t cpu) const noexcept { return cpu < num_cpus_ ? load(hot_(cpu)->lost) : 0; }
uint64_t Channel::waits(uint32_t cpu) const noexcept { return cpu < num_cpus_ ? load(hot_(cpu)->waits) : 0; }
uint64_t Channel::wait_ns(uint32_t cpu) const noexcept { return cpu < num_cpus_ ? load(hot_(cpu)->wait_ns) : 0; }

uint64_t Channel::unconsumed_bytes(uint32_t cpu) const noexcept
{
	if (cpu >= num_cpus_ || quarantined())
		return 0;
	const uint64_t consumed = load(cold_(cpu)->consumed, std::memory_order_acquire);
	const uint64_t written = load(hot_(cpu)->write.offset, std::memory_order_acquire);
	return written > consumed ? std::min(written - consumed, subbuf_size_ << log2_num_subbuf_) : 0;
}

uint64_t Channel::consumed_bytes(uint32_t cpu) const noexcept
{
	return cpu < num_cpus_ && !quarantined() ? load(cold_(cpu)->consumed, std::memory_order_acquire) : 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Consumer.

bool Channel::data_ready(uint32_t cpu) const noexcept
{
	if (cpu >= num_cpus_ || quarantined())
		return false;
	const uint64_t c = load(cold_(cpu)->consumed, std::memory_order_acquire);
	const uint64_t k = c >> log2_subbuf_;
	const uint64_t cnt = committed(*subbuf_(cpu, k), k);
	if (mode_ == Mode::overwrite && load(hot_(cpu)->write.offset) > c + (subbuf_size_ << log2_num_subbuf_))
		return true; // get_subbuf will skip forward
	return cnt >= ((k >> log2_num_subbuf_) + 1) << log2_subbuf_;
}

void Channel::quarantine(const std::string &what)
{
	std::lock_guard lock(fault_mutex_);
	if (quarantined_.load(std::memory_order_relaxed))
		return;
	fault_ = what;
	quarantined_.store(true, std::memory_order_release);
}

std::string Channel::fault() const
{
	if (!quarantined())
		return {};
	std::lock_guard lock(fault_mutex_);
	return fault_;
}

bool Channel::fault_in(uint32_t cpu, const std::string &what)
{
	quarantine("cpu " + std::to_string(cpu) + ": " + what);
	return false;
}

bool Channel::get_subbuf(uint32_t cpu, SubbufView &out)
{
	if (cpu >= num_cpus_ || quarantined())
		return false;
	BufferCold &cold = *cold_(cpu);
	const uint64_t buffer_size = subbuf_size_ << log2_num_subbuf_;
	// Each turn skips a sub-buffer recovered empty, or (overwrite mode) moves to the oldest one left: a buffer
	// holds M sub-buffers, so more turns than that only happen to a mapping something else writes.
	for (uint32_t turn = 0; turn <= config_.num_subbuf + 1; ++turn) {
		// The consumer position first: W only grows, so the W read after it is at least the one it was taken under.
		const uint64_t c = load(cold.consumed, std::memory_order_acquire);
		const uint64_t w = load(hot_(cpu)->write.offset, std::memory_order_acquire);
		if ((c & subbuf_mask_) != 0)
			return fault_in(cpu,
			                "consumed position " + std::to_string(c) + " is not on a sub-buffer boundary");
		if (c > w)
			return fault_in(cpu, "consumed position " + std::to_string(c) + " is past the write position " +
			                             std::to_string(w));
		const uint64_t k = c >> log2_subbuf_;
		SubbufState &s = *subbuf_(cpu, k);
		const uint64_t complete_at = ((k >> log2_num_subbuf_) + 1) << log2_subbuf_;
		const uint64_t cnt = committed(s, k);
		if (mode_ == Mode::overwrite) {
			if (w >
			    c + buffer_size) { // writers entered this slot again: skip to the oldest sub-buffer left
				advance_to(cold.consumed, (((w - 1) >> log2_subbuf_) + 1 - config_.num_subbuf)
				                                  << log2_subbuf_);
				continue;
			}
		} else if (w - c > buffer_size) {
			// A writer never enters a sub-buffer the consumer has not released.
			return fault_in(cpu, "write position " + std::to_string(w) +
			                             " is more than a buffer past the " + "consumed position " +
			                             std::to_string(c));
		}
		if (cnt < complete_at)
			return false;
		const uint64_t end = load(s.content_end);
		const bool opened = load(s.seq, std::memory_order_acquire) == k; // else corrupted, or being overwritten
		if (mode_ == Mode::discard) {
			// Nothing can reopen the slot before we release it, so these are final: its opener stored seq before
			// committing its first record, its closer the content end before the last commit, recovery both.
			if (cnt != complete_at || !opened || end < c || end > c + subbuf_size_)
				return fault_in(cpu, "complete sub-buffer " + std::to_string(k) +
				                             " has sequence number " + std::to_string(load(s.seq)) +
				                             ", content end " + std::to_string(end) + " and " +
				                             std::to_string(cnt) +
				                             " bytes committed in its slot (expected " +
				                             std::to_string(complete_at) + ")");
		}
		out.data = data_(cpu) + (c & buffer_mask_);
		out.content_size = opened && end > c && end <= c + subbuf_size_ ? static_cast<uint32_t>(end - c) : 0;
		out.timestamp_begin = load(s.timestamp_begin);
		out.timestamp_end = load(s.timestamp_end);
		out.lost_before = load(s.lost_before);
		out.seq = k;
		out.cpu = cpu;
		if (out.content_size ==
		    0) { // recovered empty (its only records were never committed) or being overwritten: skip it
			uint64_t expected = c;
			std::atomic_ref<uint64_t>(cold.consumed)
				.compare_exchange_strong(expected, c + subbuf_size_, std::memory_order_acq_rel);
			continue;
		}
		return true;
	}
	if (mode_ == Mode::discard)
		return fault_in(cpu, "more sub-buffers skipped in a row than the buffer holds");
	return false; // overwrite mode: writers keep overtaking; the consumer tries again later
}

bool Channel::put_subbuf(uint32_t cpu, const SubbufView &v)
{
	if (cpu >= num_cpus_)
		return false;
	BufferCold &cold = *cold_(cpu);
	const uint64_t c = v.seq << log2_subbuf_;
	bool intact = true;
	if (mode_ == Mode::overwrite) {
		read_validate_fence(); // order the caller's reads of the data before this check
		intact = load(hot_(cpu)->write.offset, std::memory_order_acquire) <=
		         c + (subbuf_size_ << log2_num_subbuf_);
	}
	uint64_t expected = c;
	// release: our reads of the data happen before a writer (which loads `consumed` with acquire) reuses it.
	if (!std::atomic_ref<uint64_t>(cold.consumed)
	             .compare_exchange_strong(expected, c + subbuf_size_, std::memory_order_acq_rel))
		return false; // overwrite mode: writers pushed the position past it; else not the sub-buffer we handed out
	return intact;
}

std::vector<Channel::OwnedSubbuf> Channel::snapshot(uint32_t cpu)
{
	std::vector<OwnedSubbuf> out;
	if (cpu >= num_cpus_ || quarantined())
		return out;
	const uint64_t M = config_.num_subbuf;
	const uint64_t buffer_size = subbuf_size_ * M;
	const uint64_t w = load(hot_(cpu)->write.offset, std::memory_order_acquire);
	if (w == 0)
		return out;
	const uint64_t last_k = (w - 1) >> log2_subbuf_;
	uint64_t first_k = load(cold_(cpu)->consumed, std::memory_order_acquire) >> log2_subbuf_;
	if (last_k + 1 > M)
		first_k = std::max(first_k, last_k + 1 - M);
	for (uint64_t k = first_k; k <= last_k; ++k) {
		SubbufState &s = *subbuf_(cpu, k);
		const uint64_t sb_start = k << log2_subbuf_;
		// Exactly complete for its generation: not in progress, and its slot not yet rewritten.
		if (committed(s, k) != ((k >> log2_num_subbuf_) + 1) << log2_subbuf_)
			continue;
		if (load(s.seq, std::memory_order_acquire) != k)
			continue;
		const uint64_t end = load(s.content_end);
		if (end <= sb_start || end > sb_start + subbuf_size_)
			continue;
		OwnedSubbuf o;
		o.timestamp_begin = load(s.timestamp_begin);
		o.timestamp_end = load(s.timestamp_end);
		o.lost_before = load(s.lost_before);
		o.seq = k;
		o.cpu = cpu;
		o.content_size = static_cast<uint32_t>(end - sb_start);
		o.bytes.resize(o.content_size);
#ifdef TRACERY_RINGBUF_TSAN
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
		std::memcpy(o.bytes.data(), data_(cpu) + (sb_start & buffer_mask_), o.bytes.size());
#ifdef TRACERY_RINGBUF_TSAN
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
		// A writer rewriting this slot first moves W past sb_start + M*S (CAS, a full barrier) and only then writes:
		// if W is still below, neither the copy nor the metadata read above saw any of its writes.
		read_validate_fence();
		if (load(hot_(cpu)->write.offset) > sb_start + buffer_size)
			continue;
		out.push_back(std::move(o));
	}
	return out;
}

bool Channel::wait_for_data(int timeout_ms)
{
	auto any_ready = [this] {
		for (uint32_t cpu = 0; cpu < num_cpus_; ++cpu)
			if (data_ready(cpu))
				return true;
		return false;
	};
	timespec deadline{};
	if (timeout_ms > 0) {
		::clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += static_cast<long>(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec += 1;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	detail::fetch_add(hdr_->waiters, uint32_t{1}, std::memory_order_acq_rel); // pairs with on_subbuf_complete()
	bool ready = false;
	// Every wake changes the word first: once it differs from `seen`, a completion was published (any_ready sees
	// it) or wake_consumer() asked to return; a wait that ends with the word unchanged (a signal) waits again.
	const uint32_t seen = load(hdr_->futex_word, std::memory_order_acquire);
	for (;;) {
		ready = any_ready();
		if (ready || timeout_ms == 0 || load(hdr_->futex_word, std::memory_order_acquire) != seen)
			break;
		timespec rel{}, *prel = nullptr;
		if (timeout_ms > 0) {
			timespec now;
			::clock_gettime(CLOCK_MONOTONIC, &now);
			int64_t ns = (deadline.tv_sec - now.tv_sec) * 1000000000LL + (deadline.tv_nsec - now.tv_nsec);
			if (ns <= 0)
				break;
			rel.tv_sec = ns / 1000000000LL;
			rel.tv_nsec = ns % 1000000000LL;
			prel = &rel;
		}
		base::futex_wait(&hdr_->futex_word, seen, prel); // shared futex: the producer may be another process
	}
	std::atomic_ref<uint32_t>(hdr_->waiters).fetch_sub(1, std::memory_order_relaxed);
	return ready;
}

// ---------------------------------------------------------------------------------------------------------------
// Crash recovery (see the header for what is recoverable). No producer is alive: plain atomic stores suffice.

Channel::RecoveryStats Channel::recover_after_producer_death()
{
	RecoveryStats st;
	if (quarantined())
		return st;
	const uint64_t S = subbuf_size_;
	const uint64_t M = config_.num_subbuf;
	for (uint32_t cpu = 0; cpu < num_cpus_; ++cpu) {
		BufferHot &hot = *hot_(cpu);
		BufferCold &cold = *cold_(cpu);
		WritePos cur = detail::load_write_pos(hot.write);
		const uint64_t W = cur.offset;
		const uint64_t L = cur.last_ts;
		if (W == 0)
			continue;
		const uint64_t last_k = (W - 1) >> log2_subbuf_;
		// At most the last M sub-buffers can hold unread data (also bounds the work if the mapping was scribbled on).
		uint64_t first_k = load(cold.consumed, std::memory_order_acquire) >> log2_subbuf_;
		if (last_k + 1 > M)
			first_k = std::max(first_k, last_k + 1 - M);
		for (uint64_t k = first_k; k <= last_k; ++k) {
			SubbufState &s = *subbuf_(cpu, k);
			const uint64_t sb_start = k << log2_subbuf_;
			const uint64_t gen_base = (k >> log2_num_subbuf_) << log2_subbuf_;
			const uint64_t c = committed(s, k) - gen_base;
			if (c >= S)
				continue; // complete
			const uint64_t extent = std::min(W - sb_start, S);
			// Known-committed prefix: everything if nothing is missing, else the last quiescent point seen by commit.
			uint64_t safe = 0;
			if (c == extent) {
				safe = extent;
			} else {
				const uint64_t p = load(s.commit_prefix);
				if (p > sb_start && p <= sb_start + extent)
					safe = p - sb_start;
			}
			const uint64_t ce = load(s.content_end, std::memory_order_acquire);
			const bool closed = ce > sb_start && ce <= sb_start + S;
			if (closed)
				safe = std::min(safe, ce - sb_start); // never hand out padding
			const bool opened = load(s.seq, std::memory_order_acquire) == k;
			if (!opened)
				safe = 0; // its opener died before committing its first record
			// The next sub-buffer's opening values bound this one's, keeping timestamps and lost_before monotone.
			const SubbufState *next =
				k < last_k && load(subbuf_(cpu, k + 1)->seq) == k + 1 ? subbuf_(cpu, k + 1) : nullptr;
			uint64_t ts_end = L; // >= every timestamp in the buffer
			if (closed) {
				ts_end = load(s.timestamp_end);
			} else if (next) {
				ts_end = load(next->timestamp_begin);
			}
			if (!opened) {
				store(s.timestamp_begin, ts_end);
				store(s.lost_before, next ? load(next->lost_before) : load(hot.lost));
				store(s.seq, k, std::memory_order_release);
			}
			st.uncommitted_bytes += extent - c;
			st.unreadable_bytes += c > safe ? c - safe : 0;
			st.subbufs_repaired += 1;
			store(s.timestamp_end, ts_end);
			store(s.content_end, sb_start + safe, std::memory_order_release);
			store(s.commit_ooo, uint64_t{0});
			store(s.commit_prefix, sb_start + S,
			      std::memory_order_release); // committed(s, k) = (gen + 1) * S
		}
		// Close the partial sub-buffer so the buffer is consistent for the consumer.
		if ((W & subbuf_mask_) != 0)
			detail::cas_write_pos(hot.write, cur, WritePos{(last_k + 1) << log2_subbuf_, L});
		if (mode_ == Mode::overwrite)
			advance_to(cold.consumed, first_k << log2_subbuf_);
	}
	wake_consumer();
	return st;
}

void Channel::wake_consumer() noexcept
{
	detail::fetch_add(hdr_->futex_word, uint32_t{1}, std::memory_order_release);
	base::futex_wake_all(&hdr_->futex_word);
}

} // namespace tracery::ringbuf
