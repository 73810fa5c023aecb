// kernel/bpf/user_strings.cpp — see user_strings.hpp.
#include "kernel/bpf/user_strings.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "base/byte_order.hpp"

extern "C" {
#include "kernel/bpf/syscall_record.h"
}

// The compiled syscall_strings.bpf.c (embed_bpf_object.cmake).
extern const unsigned char tracery_syscall_strings_object[];
extern const size_t tracery_syscall_strings_object_size;

namespace tracery::kernel {

static_assert(kMaxUserStrings == TRACERY_MAX_USER_STRINGS);

namespace {

uint64_t steady_ns()
{
	return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
					     std::chrono::steady_clock::now().time_since_epoch())
	                                     .count());
}

constexpr int kLateRecordMs = 2;

std::string errno_text(int e) { return std::string(std::strerror(e)); }

} // namespace

uint64_t address_cookie(size_t address_arg, size_t length_arg)
{
	return (uint64_t{address_arg + 1} << TRACERY_COOKIE_ADDRESS_SHIFT) |
	       (uint64_t{length_arg} << TRACERY_COOKIE_ADDRESS_LENGTH_SHIFT);
}

uint64_t cookie_pointer_args(uint64_t cookie)
{
	uint64_t args = cookie & TRACERY_COOKIE_STRINGS;
	if (const uint64_t address = (cookie >> TRACERY_COOKIE_ADDRESS_SHIFT) & 7; address >= 1 && address <= 6)
		args |= uint64_t{1} << (address - 1);
	return args;
}

int cookie_slots(uint64_t cookie) { return std::popcount(cookie_pointer_args(cookie)); }

std::string_view UserStringsRecord::string(int i) const
{
	if (i < 0 || i >= count || len[i] <= 0)
		return {};
	size_t at = 0;
	for (int k = 0; k < i; ++k)
		at += len[k] > 0 ? static_cast<size_t>(len[k]) : 0;
	const size_t n = static_cast<size_t>(len[i]) - (i + 1 == address ? 0 : 1); // a string without its NUL
	if (at > data.size() || n > data.size() - at)
		return {};
	return std::string_view(data).substr(at, n);
}

uint8_t UserStringsRecord::unfetched(int expected) const
{
	uint8_t mask = 0;
	for (int i = 0; i < expected && i < kMaxUserStrings; ++i)
		if (i >= count || len[i] <= 0)
			mask |= static_cast<uint8_t>(1u << i);
	return mask;
}

std::optional<UserStringsRecord> parse_user_strings_record(std::span<const uint8_t> bytes)
{
	tracery_syscall_record h;
	if (bytes.size() < sizeof h)
		return std::nullopt;
	std::memcpy(&h, bytes.data(), sizeof h);
	if (h.strings > TRACERY_MAX_USER_STRINGS)
		return std::nullopt;
	UserStringsRecord r;
	r.tid = static_cast<uint32_t>(h.tid);
	r.nr = h.nr;
	std::memcpy(r.args, h.args, sizeof r.args);
	r.count = static_cast<uint8_t>(h.strings);
	if (h.address > h.strings)
		return std::nullopt;
	r.address = static_cast<uint8_t>(h.address);
	size_t total = 0;
	for (int i = 0; i < kMaxUserStrings; ++i) {
		r.len[i] = i < r.count ? h.len[i] : 0;
		if (r.len[i] > (i + 1 == r.address ? TRACERY_MAX_ADDRESS : TRACERY_MAX_USER_STRING))
			return std::nullopt;
		total += r.len[i] > 0 ? static_cast<size_t>(r.len[i]) : 0;
	}
	if (bytes.size() - sizeof h < total)
		return std::nullopt;
	r.data.assign(reinterpret_cast<const char *>(bytes.data() + sizeof h), total);
	// Each string ends at its NUL, as the program read it.
	size_t at = 0;
	for (int i = 0; i < r.count; ++i) {
		if (r.len[i] <= 0)
			continue;
		at += static_cast<size_t>(r.len[i]);
		if (i + 1 != r.address && r.data[at - 1] != '\0')
			return std::nullopt;
	}
	return r;
}

void UserStringsStore::add(UserStringsRecord record, uint64_t now_ns, UserStringsCounts &counts)
{
	expire(now_ns, counts);
	while (pending_ >= kMaxPending && !order_.empty()) {
		// The oldest waiting record goes.
		const auto [seq, tid] = order_.front();
		order_.pop_front();
		auto it = by_tid_.find(tid);
		if (it != by_tid_.end() && !it->second.empty() && it->second.front().record.seq == seq) {
			it->second.pop_front();
			--pending_;
			++counts.unjoined;
		}
	}
	if (by_tid_.size() > kMaxThreads)
		std::erase_if(by_tid_, [](const auto &entry) { return entry.second.empty(); });
	record.seq = next_seq_++;
	order_.emplace_back(record.seq, record.tid);
	by_tid_[record.tid].push_back({std::move(record), now_ns});
	++pending_;
}

void UserStringsStore::expire(uint64_t now_ns, UserStringsCounts &counts)
{
	while (!order_.empty()) {
		const auto [seq, tid] = order_.front();
		auto it = by_tid_.find(tid);
		const bool live = it != by_tid_.end() && !it->second.empty() && it->second.front().record.seq == seq;
		if (live && now_ns - it->second.front().arrived_ns < kMaxAgeNs)
			return;
		order_.pop_front();
		if (!live)
			continue; // taken already, or not the oldest of its thread (taken out of order)
		it->second.pop_front();
		--pending_;
		++counts.unjoined;
	}
}

std::optional<UserStringsRecord> UserStringsStore::take(uint32_t tid, int32_t nr, uint64_t args_mask,
                                                        std::span<const uint64_t> args)
{
	const auto it = by_tid_.find(tid);
	if (it == by_tid_.end())
		return std::nullopt;
	std::deque<Waiting> &waiting = it->second;
	for (auto w = waiting.begin(); w != waiting.end(); ++w) {
		bool same = w->record.nr == nr;
		for (size_t i = 0; same && i < args.size() && i < 6; ++i)
			same = !(args_mask & (uint64_t{1} << i)) || w->record.args[i] == args[i];
		if (!same)
			continue;
		UserStringsRecord r = std::move(w->record);
		waiting.erase(w);
		--pending_;
		// Its entry in order_ is skipped when it reaches the front; the
		// thread's queue stays (its memory reused for its next calls).
		return r;
	}
	return std::nullopt;
}

UserStrings::UserStrings(uint64_t ring_bytes)
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
	if (links_.count(syscall))
		return;
	bpf_program *prog = bpf_object__find_program_by_name(object_, "sys_enter_strings");
	bpf_tracepoint_opts opts{};
	opts.sz = sizeof opts;
	opts.bpf_cookie = cookie;
	const std::string tp = "sys_enter_" + syscall;
	bpf_link *link = prog ? bpf_program__attach_tracepoint_opts(prog, "syscalls", tp.c_str(), &opts) : nullptr;
	if (!link)
		throw std::runtime_error("BPF: cannot attach to syscalls:" + tp + ": " + errno_text(errno));
	links_.emplace(syscall, link);
}

bool UserStrings::attached(const std::string &syscall) const { return links_.count(syscall) != 0; }

int UserStrings::on_record(void *self, void *data, size_t size)
{
	auto *u = static_cast<UserStrings *>(self);
	++u->counts_.records;
	std::optional<UserStringsRecord> r = parse_user_strings_record({static_cast<const uint8_t *>(data), size});
	if (!r) {
		++u->counts_.malformed;
		return 0;
	}
	for (int i = 0; i < r->count; ++i)
		u->counts_.faults += r->len[i] <= 0;
	u->store_.add(std::move(*r), steady_ns(), u->counts_);
	return 0;
}

void UserStrings::poll() { ring_buffer__consume(ring_); }

std::optional<UserStringsRecord> UserStrings::take(std::span<const uint8_t> payload, uint64_t cookie)
{
	constexpr size_t kArgs = 16;
	if (payload.size() < kArgs)
		return std::nullopt;
	const uint32_t tid = base::load_le<uint32_t>(payload.data() + 4);
	const int32_t nr = static_cast<int32_t>(base::load_le<uint32_t>(payload.data() + 8));
	uint64_t args[6] = {};
	const size_t n = std::min<size_t>(6, (payload.size() - kArgs) / 8);
	for (size_t i = 0; i < n; ++i)
		args[i] = base::load_le<uint64_t>(payload.data() + kArgs + 8 * i);
	const uint64_t pointers = cookie_pointer_args(cookie);
	const std::lock_guard lock(mutex_);
	poll();
	std::optional<UserStringsRecord> r = store_.take(tid, nr, pointers, {args, n});
	// The program's record may be submitted a moment after the tracefs
	// event (which probe the kernel calls first is not certain): waited for
	// once, at most kLateRecordMs.
	if (!r && ring_buffer__poll(ring_, kLateRecordMs) > 0) {
		r = store_.take(tid, nr, pointers, {args, n});
		counts_.late += r.has_value();
	}
	if (r)
		++counts_.joined;
	else
		++counts_.missing;
	return r;
}

UserStringsCounts UserStrings::counts() const
{
	const std::lock_guard lock(mutex_);
	UserStringsCounts c = counts_;
	const int cpus = libbpf_num_possible_cpus();
	if (cpus > 0) {
		std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
		const uint32_t key = 0;
		if (bpf_map_lookup_elem(lost_map_, &key, per_cpu.data()) == 0)
			for (const uint64_t v : per_cpu)
				c.lost += v;
	}
	return c;
}

} // namespace tracery::kernel
