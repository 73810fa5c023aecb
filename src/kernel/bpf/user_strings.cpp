// kernel/bpf/user_strings.cpp — see user_strings.hpp.
#include "kernel/bpf/user_strings.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "base/byte_order.hpp"
#include "kernel/bpf/tracepoint_link.hpp"

extern "C" {
#include "kernel/bpf/syscall_record.h"
}

// The compiled syscall_strings.bpf.c (embed_bpf_object.cmake).
extern const unsigned char tracery_syscall_strings_object[];
extern const size_t tracery_syscall_strings_object_size;

namespace tracery::kernel {

static_assert(kMaxUserStrings == TRACERY_MAX_USER_STRINGS);

namespace {

// For the age bound of 2 s: the coarse clock (a few ms; cheaper than
// the precise one, read once per record).
uint64_t steady_ns()
{
	timespec ts{};
	::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr int kLateRecordMs = 2;

std::string errno_text(int e) { return std::string(std::strerror(e)); }

} // namespace

uint64_t address_cookie(size_t address_arg, size_t length_arg)
{
	return (uint64_t{address_arg + 1} << TRACERY_COOKIE_ADDRESS_SHIFT) |
	       (uint64_t{length_arg} << TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT);
}

uint64_t buffer_cookie(size_t buffer_arg, size_t length_arg, uint32_t bound)
{
	return (uint64_t{buffer_arg + 1} << TRACERY_COOKIE_BUFFER_SHIFT) |
	       (uint64_t{length_arg} << TRACERY_COOKIE_BUFFER_LENGTH_SHIFT) |
	       (uint64_t{std::min(bound, kMaxBufferCapture)} << TRACERY_COOKIE_BUFFER_BYTES_SHIFT);
}

const uint64_t kCookieIovec = TRACERY_COOKIE_IOVEC, kCookieKeep = TRACERY_COOKIE_KEEP,
	       kCookieLengthReturn = TRACERY_COOKIE_LENGTH_RETURN, kCookieLengthPointer = TRACERY_COOKIE_LENGTH_POINTER,
	       kCookieExit = TRACERY_COOKIE_EXIT;

uint64_t cookie_pointer_args(uint64_t cookie)
{
	uint64_t args = cookie & TRACERY_COOKIE_STRINGS;
	if (const uint64_t address = (cookie >> TRACERY_COOKIE_ADDRESS_SHIFT) & 7; address >= 1 && address <= 6)
		args |= uint64_t{1} << (address - 1);
	if (const uint64_t buffer = (cookie >> TRACERY_COOKIE_BUFFER_SHIFT) & 7; buffer >= 1 && buffer <= 6)
		args |= uint64_t{1} << (buffer - 1);
	return args;
}

int cookie_slots(uint64_t cookie)
{
	const uint64_t address = (cookie >> TRACERY_COOKIE_ADDRESS_SHIFT) & 7;
	const uint64_t buffer = (cookie >> TRACERY_COOKIE_BUFFER_SHIFT) & 7;
	return std::popcount(cookie & TRACERY_COOKIE_STRINGS) + (address >= 1 && address <= 6) +
	       (buffer >= 1 && buffer <= 6);
}

std::string_view SyscallSlots::string(int i) const
{
	if (i < 0 || i >= count || len[i] <= 0)
		return {};
	size_t at = 0;
	for (int k = 0; k < i; ++k)
		at += len[k] > 0 ? static_cast<size_t>(len[k]) : 0;
	const bool raw = i + 1 == address || i + 1 == buffer;
	const size_t n = static_cast<size_t>(len[i]) - (raw ? 0 : 1); // a string without its NUL
	if (at > data.size() || n > data.size() - at)
		return {};
	return data.substr(at, n);
}

uint8_t SyscallSlots::unfetched(int expected) const
{
	uint8_t mask = 0;
	for (int i = 0; i < expected && i < kMaxUserStrings; ++i)
		if (i >= count || len[i] < 0 || (len[i] == 0 && i + 1 != buffer))
			mask |= static_cast<uint8_t>(1u << i);
	return mask;
}

bool parse_syscall_slots(std::span<const uint8_t> bytes, SyscallSlots &r)
{
	tracery_syscall_record h;
	if (bytes.size() < sizeof h)
		return false;
	std::memcpy(&h, bytes.data(), sizeof h);
	if (h.strings > TRACERY_MAX_USER_STRINGS || h.address > h.strings || h.buffer > h.strings ||
	    (h.buffer != 0 && h.buffer == h.address))
		return false;
	r.tid = static_cast<uint32_t>(h.tid);
	r.exit = (static_cast<unsigned>(h.nr) & TRACERY_RECORD_EXIT) != 0;
	r.unpaired = r.exit && (static_cast<unsigned>(h.nr) & TRACERY_RECORD_UNPAIRED) != 0;
	r.nr = static_cast<int32_t>(static_cast<unsigned>(h.nr) & ~unsigned{TRACERY_RECORD_UNPAIRED});
	if (r.unpaired && h.strings != 0)
		return false;
	std::memcpy(r.args, h.args, sizeof r.args);
	r.count = static_cast<uint8_t>(h.strings);
	r.address = static_cast<uint8_t>(h.address);
	r.buffer = static_cast<uint8_t>(h.buffer);
	size_t total = 0;
	for (int i = 0; i < kMaxUserStrings; ++i) {
		r.len[i] = i < r.count ? h.len[i] : 0;
		const int bound = i + 1 == r.address  ? TRACERY_MAX_ADDRESS
		                  : i + 1 == r.buffer ? TRACERY_MAX_BUFFER
		                                      : TRACERY_MAX_USER_STRING;
		if (r.len[i] > bound)
			return false;
		total += r.len[i] > 0 ? static_cast<size_t>(r.len[i]) : 0;
	}
	if (bytes.size() - sizeof h < total)
		return false;
	r.data = std::string_view(reinterpret_cast<const char *>(bytes.data() + sizeof h), total);
	// Each string ends at its NUL, as the program read it.
	size_t at = 0;
	for (int i = 0; i < r.count; ++i) {
		if (r.len[i] <= 0)
			continue;
		at += static_cast<size_t>(r.len[i]);
		if (i + 1 != r.address && i + 1 != r.buffer && r.data[at - 1] != '\0')
			return false;
	}
	return true;
}

bool parse_user_strings_record(std::span<const uint8_t> bytes, UserStringsRecord &r)
{
	if (!parse_syscall_slots(bytes, r.slots))
		return false;
	r.data.assign(r.slots.data);
	r.slots.data = r.data;
	return true;
}

std::optional<UserStringsRecord> parse_user_strings_record(std::span<const uint8_t> bytes)
{
	UserStringsRecord r;
	if (!parse_user_strings_record(bytes, r))
		return std::nullopt;
	return r;
}

void UserStringsStore::unlink(uint32_t i)
{
	Slot &s = slots_[i];
	(s.older == kNone ? oldest_ : slots_[s.older].newer) = s.newer;
	(s.newer == kNone ? newest_ : slots_[s.newer].older) = s.older;
	Thread &t = *s.thread;
	(s.thread_older == kNone ? t.oldest : slots_[s.thread_older].thread_newer) = s.thread_newer;
	(s.thread_newer == kNone ? t.newest : slots_[s.thread_newer].thread_older) = s.thread_older;
	free_.push_back(i);
	--pending_;
}

void UserStringsStore::add(std::span<const uint8_t> bytes, uint64_t now_ns, UserStringsCounts &counts)
{
	expire(now_ns, counts);
	if (pending_ >= kMaxPending) { // the oldest waiting record goes
		unlink(oldest_);
		++counts.unjoined;
	}
	uint32_t i;
	if (!free_.empty()) {
		i = free_.back();
		free_.pop_back();
	} else {
		i = static_cast<uint32_t>(slots_.size());
		slots_.emplace_back();
	}
	Slot &s = slots_[i];
	if (!parse_user_strings_record(bytes, s.record)) {
		free_.push_back(i);
		++counts.malformed;
		return;
	}
	for (int k = 0; k < s.record.slots.count; ++k)
		counts.faults += s.record.slots.len[k] <= 0;
	if (threads_.size() > kMaxThreads)
		std::erase_if(threads_, [](const auto &entry) { return entry.second.oldest == kNone; });
	Thread &t = threads_[s.record.slots.tid];
	s.thread = &t;
	s.arrived_ns = now_ns;
	s.older = newest_;
	s.newer = kNone;
	(newest_ == kNone ? oldest_ : slots_[newest_].newer) = i;
	newest_ = i;
	s.thread_older = t.newest;
	s.thread_newer = kNone;
	(t.newest == kNone ? t.oldest : slots_[t.newest].thread_newer) = i;
	t.newest = i;
	++pending_;
}

void UserStringsStore::expire(uint64_t now_ns, UserStringsCounts &counts)
{
	while (oldest_ != kNone && now_ns - slots_[oldest_].arrived_ns >= kMaxAgeNs) {
		unlink(oldest_);
		++counts.unjoined;
	}
}

bool UserStringsStore::take(uint32_t tid, int32_t nr, uint64_t args_mask, std::span<const uint64_t> args,
                            UserStringsRecord &out)
{
	const auto it = threads_.find(tid);
	if (it == threads_.end())
		return false;
	for (uint32_t i = it->second.oldest; i != kNone; i = slots_[i].thread_newer) {
		const SyscallSlots &r = slots_[i].record.slots;
		bool same = r.nr == nr;
		for (size_t k = 0; same && k < args.size() && k < 6; ++k)
			same = !(args_mask & (uint64_t{1} << k)) || r.args[k] == args[k];
		if (!same)
			continue;
		unlink(i); // the slot keeps out's old string, for a later record
		std::swap(out, slots_[i].record);
		return true;
	}
	return false;
}

UserStrings::UserStrings(uint64_t ring_bytes, uint32_t buffer_bytes)
	: buffer_bytes_(std::min(buffer_bytes, kMaxBufferCapture))
{
	libbpf_set_print(nullptr); // errors are reported by their return values
	object_ = bpf_object__open_mem(tracery_syscall_strings_object, tracery_syscall_strings_object_size, nullptr);
	if (!object_)
		throw std::runtime_error("BPF: cannot open the system-call strings program: " + errno_text(errno));
	const auto fail = [this](const std::string &what, int err) {
		bpf_object__close(object_);
		object_ = nullptr;
		throw std::runtime_error("BPF: " + what + ": " + errno_text(err < 0 ? -err : err));
	};
	bpf_map *records = bpf_object__find_map_by_name(object_, "records");
	if (!records)
		fail("no ring buffer map in the program", EINVAL);
	if (const int e = bpf_map__set_max_entries(records, static_cast<uint32_t>(ring_bytes)); e != 0)
		fail("ring buffer size " + std::to_string(ring_bytes), e);
	if (const int e = bpf_object__load(object_); e != 0)
		fail("the kernel refused the system-call strings program (root and CONFIG_BPF_SYSCALL are needed)", e);
	lost_map_ = bpf_object__find_map_fd_by_name(object_, "lost");
	ring_ = ring_buffer__new(bpf_map__fd(records), &UserStrings::on_record, this, nullptr);
	if (!ring_ || lost_map_ < 0)
		fail("cannot map the ring buffer", errno);
}

UserStrings::~UserStrings()
{
	for (auto &[name, link] : links_)
		bpf_link__destroy(link);
	if (ring_)
		ring_buffer__free(ring_);
	if (object_)
		bpf_object__close(object_);
}

void UserStrings::attach(const std::string &syscall, uint64_t cookie)
{
	attach_program("sys_enter_strings", "sys_enter_" + syscall, cookie);
}

void UserStrings::attach_exit(const std::string &syscall, uint64_t cookie)
{
	attach_program("sys_exit_outputs", "sys_exit_" + syscall, cookie | TRACERY_COOKIE_EXIT);
}

void UserStrings::attach_program(const char *program, const std::string &tp, uint64_t cookie)
{
	if (links_.count(tp))
		return;
	links_.emplace(tp, attach_tracepoint(object_, program, "syscalls", tp, cookie));
}

bool UserStrings::attached(const std::string &syscall) const { return links_.count("sys_enter_" + syscall) != 0; }

int UserStrings::on_record(void *self, void *data, size_t size)
{
	auto *u = static_cast<UserStrings *>(self);
	++u->counts_.records;
	u->store_.add({static_cast<const uint8_t *>(data), size}, steady_ns(), u->counts_);
	return 0;
}

void UserStrings::poll() { ring_buffer__consume(ring_); }

bool UserStrings::take(std::span<const uint8_t> payload, uint64_t cookie, UserStringsRecord &out)
{
	constexpr size_t kArgs = 16;
	if (payload.size() < kArgs)
		return false;
	const uint32_t tid = base::load_le<uint32_t>(payload.data() + 4);
	const int32_t nr = static_cast<int32_t>(base::load_le<uint32_t>(payload.data() + 8));
	uint64_t args[6] = {};
	const size_t n = std::min<size_t>(6, (payload.size() - kArgs) / 8);
	for (size_t i = 0; i < n; ++i)
		args[i] = base::load_le<uint64_t>(payload.data() + kArgs + 8 * i);
	return take_matching(tid, nr, cookie_pointer_args(cookie), {args, n}, out);
}

bool UserStrings::take_exit(std::span<const uint8_t> payload, UserStringsRecord &out)
{
	if (payload.size() < 12)
		return false;
	const uint32_t tid = base::load_le<uint32_t>(payload.data() + 4);
	const int32_t nr = static_cast<int32_t>(base::load_le<uint32_t>(payload.data() + 8));
	return take_matching(tid, nr | TRACERY_RECORD_EXIT, 0, {}, out);
}

bool UserStrings::take_matching(uint32_t tid, int32_t nr, uint64_t pointers, std::span<const uint64_t> args,
                                UserStringsRecord &out)
{
	const std::lock_guard lock(mutex_);
	poll();
	bool found = store_.take(tid, nr, pointers, args, out);
	// The program's record may be submitted a moment after the tracefs
	// event (which probe the kernel calls first is not certain): waited for
	// once, at most kLateRecordMs.
	if (!found && ring_buffer__poll(ring_, kLateRecordMs) > 0) {
		found = store_.take(tid, nr, pointers, args, out);
		counts_.late += found;
	}
	if (found)
		++counts_.joined;
	else
		++counts_.missing;
	return found;
}

UserStringsCounts UserStrings::counts() const
{
	const std::lock_guard lock(mutex_);
	UserStringsCounts c = counts_;
	const int cpus = libbpf_num_possible_cpus();
	if (cpus > 0) {
		std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
		for (uint32_t key = 0; key < 2; ++key)
			if (bpf_map_lookup_elem(lost_map_, &key, per_cpu.data()) == 0)
				for (const uint64_t v : per_cpu)
					(key == 0 ? c.lost : c.unpaired) += v;
	}
	return c;
}

} // namespace tracery::kernel
