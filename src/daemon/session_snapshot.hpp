// `snapshot record`: copies the newest data of every buffer of a snapshot
// session into OUTPUT/snapshot-N-DATE (with a kernel domain: its ust/ and
// kernel/, the kernel part read out of the tracefs buffer, see
// kernel/kernel_session.hpp). Planned with the daemon's lock held, written
// without it while the session is busy (so its buffers stay: only destroy
// and a failed start drop a snapshot session's buffers).
#pragma once

#include "daemon/channel.hpp"
#include "daemon/kernel_domain.hpp"
#include "daemon/session_identity.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tracery::daemon {

struct SnapshotPlan {
	std::string dir;
	std::string metadata;
	struct Part {
		const Channel *channel;
		std::string owner;
		Buffer *buffer;
	};
	std::vector<Part> parts;
};

class SnapshotRecorder {
public:
	explicit SnapshotRecorder(const SessionIdentity &session) : session_(session) {}

	// The next snapshot: every buffer of `channels`, and the user trace's metadata.
	SnapshotPlan plan(const std::vector<std::unique_ptr<Channel>> &channels, const std::string &metadata);
	// Returns the directory; throws std::runtime_error.
	std::string write(const SnapshotPlan &plan, KernelDomain &kernel) const;
	// How many were planned, for status.
	uint32_t taken() const { return taken_; }

private:
	const SessionIdentity &session_;
	uint32_t taken_ = 0;
};

} // namespace tracery::daemon
