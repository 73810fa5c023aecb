// The buffer quota: see quota.hpp.
#include "daemon/quota.hpp"

#include <sys/sysinfo.h>

namespace tracery::daemon {

using base::format_size;

namespace {
constexpr uint64_t kMiB = uint64_t{1} << 20;
} // namespace

// A quarter of the machine's memory per user. Trace buffers are pages the
// daemon populates at once and that stay resident while tracing (shared
// memory: reclaim cannot drop them, and most machines have no swap to move
// them to); when they exhaust memory, the OOM killer takes other processes
// with the daemon (a channel of 512 x 1 GiB grew the daemon to 24 GB). A quarter
// leaves three quarters to the traced programs themselves and to the page
// cache the consumers write the trace through, and still gives a user room
// for many programs with default channels (4 x 512 KiB per CPU): a 2-CPU
// machine with 23 GiB gets 5.8 GiB, 1400 per-PID buffers of 4 MiB; a 64-CPU
// one with 128 GiB gets 32 GiB, 256 per-PID buffers of 128 MiB. Several users
// tracing at once may take more than a quarter together: the quota bounds
// each user, not their sum.
uint64_t default_buffer_quota(uint64_t mem_total) { return mem_total / 4 / kMiB * kMiB; }

uint64_t machine_memory()
{
	struct sysinfo si;
	if (sysinfo(&si) != 0)
		return 0;
	return static_cast<uint64_t>(si.totalram) * si.mem_unit;
}

BufferQuota::Charge &BufferQuota::Charge::operator=(Charge &&o) noexcept
{
	if (this != &o) {
		release();
		quota_ = o.quota_;
		uid_ = o.uid_;
		bytes_ = o.bytes_;
		o.quota_ = nullptr;
		o.bytes_ = 0;
	}
	return *this;
}

void BufferQuota::Charge::release() noexcept
{
	if (quota_)
		quota_->give_back(uid_, bytes_);
	quota_ = nullptr;
	bytes_ = 0;
}

uint64_t BufferQuota::used(uid_t uid) const
{
	std::lock_guard lock(mutex_);
	auto it = used_.find(uid);
	return it == used_.end() ? 0 : it->second;
}

std::optional<BufferQuota::Charge> BufferQuota::try_charge(uid_t uid, uint64_t bytes, std::string *why)
{
	std::lock_guard lock(mutex_);
	uint64_t &used = used_[uid];
	if (bytes > limit_ || used > limit_ - bytes) {
		if (why)
			*why = "the buffer quota of uid " + std::to_string(uid) + " is " + format_size(limit_) + ", " +
			       format_size(used) + " of it in use: a buffer of " + format_size(bytes) + " does not fit";
		if (used == 0)
			used_.erase(uid);
		return std::nullopt;
	}
	used += bytes;
	Charge c;
	c.quota_ = this;
	c.uid_ = uid;
	c.bytes_ = bytes;
	return c;
}

void BufferQuota::give_back(uid_t uid, uint64_t bytes) noexcept
{
	std::lock_guard lock(mutex_);
	auto it = used_.find(uid);
	if (it == used_.end())
		return;
	it->second -= bytes < it->second ? bytes : it->second;
	if (it->second == 0)
		used_.erase(it);
}

std::string channel_refusal(const std::string &channel, const ringbuf::Config &config, uint64_t other_channels,
                            uint64_t quota)
{
	const std::string what = "cannot enable channel '" + channel + "': ";
	const std::string cpus = std::to_string(config.num_cpus) + (config.num_cpus == 1 ? " CPU" : " CPUs");
	const std::string shape =
		cpus + " x " + std::to_string(config.num_subbuf) + " x " + format_size(config.subbuf_size);
	if (const std::string e = ringbuf::Channel::config_error(config); !e.empty()) {
		// config_error names the field first.
		if (e.starts_with("num_cpus x"))
			return what + e + " (" + shape +
			       ", one buffer per possible CPU); use a smaller --subbuf-size or --num-subbuf";
		if (e.starts_with("num_subbuf"))
			return what + e + "; change --num-subbuf";
		if (e.starts_with("subbuf_size"))
			return what + e + "; change --subbuf-size";
		if (e.starts_with("num_cpus"))
			return what + e + ": this machine has more possible CPUs than the ring buffer supports";
		return what + e;
	}
	const uint64_t one = ringbuf::Channel::mapping_size_for(config);
	if (one + other_channels <= quota)
		return {};
	const std::string need =
		other_channels == 0
			? "its buffers take " + format_size(one) + " (" + shape + " and headers)"
			: "a program traced by the session needs " + format_size(one + other_channels) +
				  " of buffers (this channel: " + format_size(one) + ", " + shape + " and headers)";
	return what + need + ", more than the buffer quota of " + format_size(quota) +
	       " per user; use a smaller --subbuf-size or --num-subbuf, or give traceryd a larger --buffer-quota";
}

} // namespace tracery::daemon
