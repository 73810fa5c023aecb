// kernel/bpf/syscall_events.cpp — see syscall_events.hpp.
#include "kernel/bpf/syscall_events.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "kernel/bpf/tracepoint_link.hpp"

extern "C" {
#include "kernel/bpf/syscall_record.h"
}

// The compiled syscall_events.bpf.c (embed_bpf_object.cmake).
extern const unsigned char tracery_syscall_events_object[];
extern const size_t tracery_syscall_events_object_size;

namespace tracery::kernel {

namespace {

std::string errno_text(int e) { return std::string(std::strerror(e)); }

// The kernel's ring buffer record header (include/uapi/linux/bpf.h): its
// length, with these bits, then the page offset; 8 bytes.
constexpr uint32_t kBusyBit = 1u << 31;
constexpr uint32_t kDiscardBit = 1u << 30;
constexpr uint64_t kHeaderBytes = 8;

// The kernel's side writes these: read with acquire (as libbpf does).
template <typename T>
T load_acquire(const T *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

// A count its reader alone adds to, which counts() reads from any thread.
void add(uint64_t &count, uint64_t n) { __atomic_store_n(&count, count + n, __ATOMIC_RELAXED); }

} // namespace

bool parse_syscall_event(std::span<const uint8_t> bytes, SyscallEventView &out)
{
	constexpr size_t kCall = offsetof(tracery_syscall_event, call);
	if (bytes.size() < sizeof(tracery_syscall_event))
		return false;
	tracery_syscall_event h;
	std::memcpy(&h, bytes.data(), kCall);
	const auto *comm = reinterpret_cast<const char *>(bytes.data() + offsetof(tracery_syscall_event, comm));
	const size_t comm_length = ::strnlen(comm, sizeof h.comm);
	if (comm_length == sizeof h.comm)
		return false;
	if (!parse_syscall_slots(bytes.subspan(kCall), out.call))
		return false;
	out.timestamp = h.timestamp;
	out.pid = h.pid;
	out.event_id = h.event_id;
	out.ret = h.ret;
	out.comm = std::string_view(comm, comm_length);
	return true;
}

uint64_t ring_bytes_for_channel(uint64_t channel_bytes, uint64_t page)
{
	const uint64_t wanted = std::clamp(channel_bytes, kMinRingBytes / kRecordsPerEventBytes,
	                                   kMaxRingBytes / kRecordsPerEventBytes) *
	                        kRecordsPerEventBytes;
	return std::max(std::bit_ceil(wanted), page);
}

std::chrono::milliseconds reader_pause_for_ring(uint64_t ring_bytes)
{
	constexpr uint64_t kShortest = 2, kLongest = 10;
	return std::chrono::milliseconds(std::clamp(ring_bytes / kRingBytesPerMs, kShortest, kLongest));
}

SyscallEvents::SyscallEvents(uint32_t num_cpus, uint64_t ring_bytes, uint32_t buffer_bytes)
	: page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))), buffer_bytes_(std::min(buffer_bytes, kMaxBufferCapture))
{
	libbpf_set_print(nullptr); // errors are reported by their return values
	const int possible = libbpf_num_possible_cpus();
	const uint32_t cpus = std::max(num_cpus, possible > 0 ? static_cast<uint32_t>(possible) : 0u);
	object_ = bpf_object__open_mem(tracery_syscall_events_object, tracery_syscall_events_object_size, nullptr);
	if (!object_)
		throw std::runtime_error("BPF: cannot open the system-call events program: " + errno_text(errno));
	const auto fail = [this](const std::string &what, int err) {
		close();
		throw std::runtime_error("BPF: " + what + ": " + errno_text(err < 0 ? -err : err));
	};
	bpf_map *rings = bpf_object__find_map_by_name(object_, "rings");
	if (!rings)
		fail("no ring buffer maps in the program", EINVAL);
	if (const int e = bpf_map__set_max_entries(rings, cpus); e != 0)
		fail("ring buffers for " + std::to_string(cpus) + " CPUs", e);
	// The ring buffers are made first: the first is the map of maps'
	// template (its size, the inner maps' size).
	rings_.resize(cpus);
	for (Ring &r : rings_) {
		r.fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, nullptr, 0, 0, static_cast<uint32_t>(ring_bytes), nullptr);
		if (r.fd < 0)
			fail("a ring buffer of " + std::to_string(ring_bytes) + " bytes", errno);
	}
	if (const int e = bpf_map__set_inner_map_fd(rings, rings_.at(0).fd); e != 0)
		fail("the ring buffers' map", e);
	if (const int e = bpf_object__load(object_); e != 0)
		fail("the kernel refused the system-call events program (root and CONFIG_BPF_SYSCALL are needed)", e);
	lost_map_ = bpf_object__find_map_fd_by_name(object_, "lost");
	threads_map_ = bpf_object__find_map_fd_by_name(object_, "threads");
	settings_map_ = bpf_object__find_map_fd_by_name(object_, "settings");
	for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
		Ring &r = rings_[cpu];
		if (bpf_map_update_elem(bpf_map__fd(rings), &cpu, &r.fd, BPF_ANY) != 0)
			fail("the ring buffer of CPU " + std::to_string(cpu), errno);
		void *consumer = ::mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
		if (consumer == MAP_FAILED)
			fail("cannot map a ring buffer", errno);
		r.consumer = static_cast<uint64_t *>(consumer);
		// The data is mapped twice, one after the other: a record that wraps
		// around is read in one piece.
		void *producer =
			::mmap(nullptr, page_ + 2 * ring_bytes, PROT_READ, MAP_SHARED, r.fd, static_cast<off_t>(page_));
		if (producer == MAP_FAILED)
			fail("cannot map a ring buffer", errno);
		r.producer = static_cast<const uint64_t *>(producer);
		r.data = static_cast<const uint8_t *>(producer) + page_;
		r.mask = ring_bytes - 1;
		r.read_to = load_acquire(r.consumer);
	}
	if (lost_map_ < 0 || threads_map_ < 0 || settings_map_ < 0)
		fail("the program's maps are missing", EINVAL);
	update_settings(); // not recording until set_recording(true)
}

SyscallEvents::~SyscallEvents() { close(); }

void SyscallEvents::close() noexcept
{
	for (auto &[name, link] : links_)
		bpf_link__destroy(link);
	links_.clear();
	for (Ring &r : rings_) {
		if (r.producer)
			::munmap(const_cast<uint64_t *>(r.producer), page_ + 2 * (r.mask + 1));
		if (r.consumer)
			::munmap(r.consumer, page_);
		if (r.fd >= 0)
			::close(r.fd);
	}
	rings_.clear();
	if (object_)
		bpf_object__close(object_);
	object_ = nullptr;
}

void SyscallEvents::attach_entry(const std::string &syscall, uint64_t cookie, uint16_t event_id)
{
	attach("sys_enter_event", "syscalls", "sys_enter_" + syscall,
	       cookie | (uint64_t{event_id} << TRACERY_COOKIE_EVENT_ID_SHIFT));
}

void SyscallEvents::attach_exit(const std::string &syscall, uint64_t cookie, uint16_t event_id)
{
	attach("sys_exit_event", "syscalls", "sys_exit_" + syscall,
	       cookie | (uint64_t{event_id} << TRACERY_COOKIE_EVENT_ID_SHIFT));
}

void SyscallEvents::follow_forks(uint32_t child_pid_offset)
{
	attach("on_fork", "sched", "sched_process_fork", child_pid_offset);
	follow_forks_ = true;
	update_settings();
}

void SyscallEvents::attach(const char *program, const char *system, const std::string &tracepoint, uint64_t cookie)
{
	if (links_.count(tracepoint))
		return;
	links_.emplace(tracepoint, attach_tracepoint(object_, program, system, tracepoint, cookie));
}

void SyscallEvents::detach(const std::string &tracepoint)
{
	if (const auto it = links_.find(tracepoint); it != links_.end()) {
		bpf_link__destroy(it->second);
		links_.erase(it);
	}
}

bool SyscallEvents::attached(const std::string &tracepoint) const { return links_.count(tracepoint) != 0; }

void SyscallEvents::record_listed_only(bool only)
{
	listed_only_ = only;
	update_settings();
}

void SyscallEvents::set_recording(bool on)
{
	recording_ = on;
	update_settings();
}

void SyscallEvents::update_settings()
{
	const uint32_t key = 0;
	const uint32_t mode = (listed_only_ ? 1u : 0u) | (recording_ ? 0u : 2u) | (follow_forks_ ? 4u : 0u);
	bpf_map_update_elem(settings_map_, &key, &mode, BPF_ANY);
}

void SyscallEvents::set_thread(uint32_t tid, bool traced)
{
	const uint8_t value = traced ? 1 : 0;
	bpf_map_update_elem(threads_map_, &tid, &value, BPF_ANY);
}

void SyscallEvents::forget_thread(uint32_t tid) { bpf_map_delete_elem(threads_map_, &tid); }

std::span<const SyscallEventView> SyscallEvents::read(uint32_t cpu)
{
	Ring &r = rings_.at(cpu);
	r.batch.clear();
	uint64_t at = load_acquire(r.consumer);
	const uint64_t end = load_acquire(r.producer);
	while (at < end) {
		const uint8_t *header = r.data + (at & r.mask);
		const uint32_t length = load_acquire(reinterpret_cast<const uint32_t *>(header));
		if (length & kBusyBit)
			break; // not committed yet: it and what follows wait for the next read
		const uint32_t bytes = length & ~(kBusyBit | kDiscardBit);
		const uint64_t next = at + ((kHeaderBytes + bytes + 7) & ~uint64_t{7});
		if (bytes > r.mask + 1 || next > end)
			break; // not a record the kernel wrote: nothing after it is read
		at = next;
		if (length & kDiscardBit)
			continue;
		add(r.records, 1);
		SyscallEventView v;
		if (!parse_syscall_event({header + kHeaderBytes, bytes}, v)) {
			add(r.malformed, 1);
			continue;
		}
		for (int i = 0; i < v.call.count; ++i)
			if (v.call.len[i] < 0)
				add(r.faults, 1);
		// In time order: nearly sorted already, so an insertion.
		size_t i = r.batch.size();
		r.batch.push_back(v);
		for (; i > 0 && r.batch[i - 1].timestamp > v.timestamp; --i)
			r.batch[i] = r.batch[i - 1];
		r.batch[i] = v;
	}
	r.read_to = at;
	return r.batch;
}

void SyscallEvents::release(uint32_t cpu)
{
	Ring &r = rings_.at(cpu);
	r.batch.clear();
	__atomic_store_n(r.consumer, r.read_to, __ATOMIC_RELEASE);
}

uint64_t SyscallEvents::lost(uint32_t cpu) const
{
	std::vector<uint64_t> per_cpu(rings_.size());
	const uint32_t key = 0;
	if (cpu >= per_cpu.size() || bpf_map_lookup_elem(lost_map_, &key, per_cpu.data()) != 0)
		return 0;
	return per_cpu[cpu];
}

uint64_t SyscallEvents::ring_bytes() const
{
	bpf_map_info info{};
	uint32_t length = sizeof info;
	if (rings_.empty() || bpf_obj_get_info_by_fd(rings_.front().fd, &info, &length) != 0)
		throw std::runtime_error("BPF: cannot read the ring buffer's size: " + errno_text(errno));
	return info.max_entries;
}

SyscallEventsCounts SyscallEvents::counts() const
{
	SyscallEventsCounts c;
	for (const Ring &r : rings_) {
		c.records += __atomic_load_n(&r.records, __ATOMIC_RELAXED);
		c.malformed += __atomic_load_n(&r.malformed, __ATOMIC_RELAXED);
		c.faults += __atomic_load_n(&r.faults, __ATOMIC_RELAXED);
	}
	std::vector<uint64_t> per_cpu(rings_.size());
	for (uint32_t key = 0; key < 3; ++key)
		if (bpf_map_lookup_elem(lost_map_, &key, per_cpu.data()) == 0)
			for (const uint64_t v : per_cpu)
				(key == 0 ? c.lost : key == 1 ? c.unpaired : c.unlisted) += v;
	return c;
}

} // namespace tracery::kernel
