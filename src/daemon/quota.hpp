// The daemon's limit on buffer memory per user. Ring buffers are shared
// memory that the daemon fills with pages when it makes them (MAP_POPULATE)
// and that nothing reclaims while tracing, so what they take is charged, per
// uid, at the moment a buffer is made and given back when it is dropped:
// a per-UID buffer (one per session, channel and user) to that user, a
// per-PID buffer (one per session, channel and program) to the program's
// user. Root is charged like everyone else. Defining a channel is checked
// against the limit as well (channel_refusal): sizes that could never be
// allocated are refused before any program needs them.
#pragma once

#include "base/sizes.hpp"
#include "ringbuf/ring_buffer.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace tracery::daemon {

// The default limit for a machine with `mem_total` bytes of memory: a
// quarter of it, rounded down to a MiB (see the reasons in quota.cpp).
uint64_t default_buffer_quota(uint64_t mem_total);
// MemTotal (sysinfo), or 0 if the kernel does not say.
uint64_t machine_memory();

class BufferQuota {
public:
	explicit BufferQuota(uint64_t per_user) : limit_(per_user) {}
	BufferQuota(const BufferQuota &) = delete;
	BufferQuota &operator=(const BufferQuota &) = delete;

	// What a buffer holds of its user's quota; given back when destroyed.
	class Charge {
	public:
		Charge() = default;
		Charge(Charge &&o) noexcept { *this = std::move(o); }
		Charge &operator=(Charge &&o) noexcept;
		~Charge() { release(); }
		uint64_t bytes() const { return bytes_; }
		uid_t uid() const { return uid_; }

	private:
		friend class BufferQuota;
		void release() noexcept;
		BufferQuota *quota_ = nullptr;
		uid_t uid_ = 0;
		uint64_t bytes_ = 0;
	};

	uint64_t limit() const { return limit_; }
	uint64_t used(uid_t uid) const;
	// A charge of `bytes` to `uid` if what uid holds stays within the limit;
	// else nullopt, *why saying so in one line (nothing is charged).
	std::optional<Charge> try_charge(uid_t uid, uint64_t bytes, std::string *why);

private:
	void give_back(uid_t uid, uint64_t bytes) noexcept;

	const uint64_t limit_;
	mutable std::mutex mutex_;
	std::map<uid_t, uint64_t> used_; // only users holding something
};

// Why a channel whose buffers have this config cannot be defined in a session
// whose other channels take `other_channels` bytes for one buffer each, under
// a limit of `quota` per user: one line naming the value, the limit and the
// option to change; "" if it can. Refused: a config the ring buffer does not
// accept (sizes, and the 2^40 bytes of a channel on all possible CPUs), and a
// session whose channels need more than the quota for a single program.
std::string channel_refusal(const std::string &channel, const ringbuf::Config &config, uint64_t other_channels,
                            uint64_t quota);

} // namespace tracery::daemon
