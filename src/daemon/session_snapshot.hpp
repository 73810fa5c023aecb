// `snapshot record`: copies the newest data of every buffer of a snapshot
// session into OUTPUT/snapshot-N-DATE, or NAME-N-DATE in the directory of
// its snapshot output (`snapshot add-output`) or of the request, at most
// --max-size bytes of user space buffers (with a kernel domain: its ust/ and
// kernel/, the kernel part read out of the tracefs buffer, see
// kernel/kernel_session.hpp). Or, to net://HOST[:PORT], the same sent to
// tracery-relayd on a connection of its own (snapshot_relay.cpp), where it is
// SESSION-DATE/NAME-N-DATE in the relay's directory of this host. Planned with the daemon's lock held, written
// without it while the session is busy (so its buffers stay: only destroy
// and a failed start drop a snapshot session's buffers).
#pragma once

#include "daemon/channel.hpp"
#include "daemon/kernel_domain.hpp"
#include "daemon/session_identity.hpp"

#include "consumer/sink.hpp"
#include "control/messages.hpp"
#include "control/relay_protocol.hpp"
#include "control/relay_url.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tracery::daemon {

struct SnapshotPlan {
	std::string dir;                               // absolute; to a relay, NAME-N-DATE
	std::optional<control::relay::RelayUrl> relay; // where it is sent, if it is
	std::string metadata;
	uint64_t max_size = 0; // the user space buffers' newest bytes copied, at most (0: all)
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

	// The next snapshot: every buffer of `channels`, and the user trace's
	// metadata; where and how much as the request, else the output, says.
	SnapshotPlan plan(const std::vector<std::unique_ptr<Channel>> &channels, const std::string &metadata,
	                  const control::SnapshotRecord &req);
	// Returns the directory; throws std::runtime_error.
	std::string write(const SnapshotPlan &plan, KernelDomain &kernel) const;
	// How many were planned, for status.
	uint32_t taken() const { return taken_; }

	// Its output (`snapshot add-output`, del-output): one at most, as
	// LTTng's. Throw std::runtime_error (one line naming the fix).
	const std::vector<control::SavedSnapshotOutput> &outputs() const { return outputs_; }
	void add_output(control::SavedSnapshotOutput output);
	void delete_output(const std::string &id_or_name);

private:
	// Each buffer copied into the sink `make_sink` gives it; what the copies
	// could not write, one line per channel ("" for none).
	using SinkMaker = std::function<std::unique_ptr<consumer::PacketSink>(const consumer::StreamNames &, uint32_t)>;
	std::string copy_buffers(const SnapshotPlan &plan, const SinkMaker &make_sink) const;
	std::string write_to_relay(const SnapshotPlan &plan, KernelDomain &kernel) const; // snapshot_relay.cpp

	const SessionIdentity &session_;
	uint32_t taken_ = 0;
	uint32_t outputs_added_ = 0; // names snapshot-N
	std::vector<control::SavedSnapshotOutput> outputs_;
};

} // namespace tracery::daemon
