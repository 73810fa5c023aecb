// A tracing session in the daemon: the owner of its parts, each with one job,
// and the rules that join them (a channel is added before the first start;
// the layout of its traces is decided then; retired buffers count as being
// finished until they are accounted).
//
//   session_identity.hpp   what it is: name, owner, output, relay, trace uuid
//   session_lifecycle.hpp  its state and the guards that keep commands off it
//   kernel_domain.hpp      its kernel events and kernel trace
//   session_channels.hpp   its channels and their buffers' lifecycle
//   user_trace.hpp         where its user trace goes, its metadata, event ids
//   filter_cache.hpp       the event filters compiled for its programs
//   session_snapshot.hpp   `snapshot record`
//   session_status.hpp     what `tracery status` and `list` show of it
//   process_tracking.hpp   the programs its user space events come from
#pragma once

#include "daemon/channel.hpp"
#include "daemon/filter_cache.hpp"
#include "daemon/kernel_domain.hpp"
#include "daemon/process_tracking.hpp"
#include "daemon/quota.hpp"
#include "daemon/session_channels.hpp"
#include "daemon/session_chunks.hpp"
#include "daemon/session_identity.hpp"
#include "daemon/session_lifecycle.hpp"
#include "daemon/session_snapshot.hpp"
#include "daemon/user_trace.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tracery::daemon {

class TraceSession {
public:
	// Creates (or checks) the output directory: it must be new or empty.
	// Throws std::runtime_error with a one-line message naming the fix.
	// Its buffers are charged to `quota` (which outlives the session).
	// With a relay, `output` is the local copy's directory, "" for none.
	TraceSession(uint64_t id, std::string name, uid_t owner, gid_t owner_gid, std::string output, bool snapshot,
	             BufferQuota &quota, SessionRelay relay = {});
	// Its parts refer to its identity.
	TraceSession(const TraceSession &) = delete;
	TraceSession &operator=(const TraceSession &) = delete;

	// What it is (session_identity.hpp).
	const SessionIdentity &identity() const { return identity_; }
	uint64_t id() const { return identity_.id; }
	const std::string &name() const { return identity_.name; }
	uid_t owner() const { return identity_.owner; }
	gid_t owner_gid() const { return identity_.owner_gid; }
	const std::string &output() const { return identity_.output; }
	bool snapshot() const { return identity_.snapshot; }
	bool local() const { return identity_.local(); }
	const std::shared_ptr<consumer::RelayLink> &relay_link() const { return identity_.relay.link; }
	clock::TickUnit tick_unit() const { return identity_.tick_unit; }

	// Where it is in its life, and who keeps off it (session_lifecycle.hpp).
	SessionState state() const { return lifecycle_.state(); }
	bool started() const { return lifecycle_.started(); }
	bool stopping() const { return lifecycle_.stopping(); }
	void mark_started() { lifecycle_.mark_started(); }
	void mark_stopping() { lifecycle_.mark_stopping(); }
	void mark_stopped() { lifecycle_.mark_stopped(); }
	bool in_use() const { return lifecycle_.in_use(); }
	void begin_busy() { lifecycle_.begin_busy(); }
	void end_busy() { lifecycle_.end_busy(); }
	// Whether buffers retired from it are not accounted yet (see Buffers below).
	bool finishing_buffers() const { return lifecycle_.finishing(); }
	void begin_kernel_start() { lifecycle_.begin_kernel_start(); }
	void end_kernel_start() { lifecycle_.end_kernel_start(); }
	bool ever_started() const { return user_trace_.metadata_written() || !lifecycle_.created(); }
	// Whether the output may hold stream files: the journal of open traces
	// (trace_journal.hpp) lists the session.
	bool may_have_trace() const
	{
		return local() && (ever_started() || lifecycle_.starting_kernel() || kernel_.trace() != nullptr);
	}

	// The kernel domain (kernel_domain.hpp).
	const KernelSpec &kernel_spec() const { return kernel_.spec(); }
	KernelSpec &edit_kernel_spec() { return kernel_.edit_spec(); }
	// Whether its traces are laid out with a kernel trace: OUTPUT/ust and OUTPUT/kernel.
	bool kernel_domain() const { return kernel_.in_layout(); }
	// Where the user trace is (OUTPUT or OUTPUT/ust, or in the chunk being
	// written after a rotation: session_chunks.hpp).
	std::string user_dir() const { return chunks_.user_dir(kernel_domain()); }
	// Decides the layout (first start only): see kernel_domain().
	void fix_layout();
	void start_kernel(const std::string &tracefs_root) { kernel_.start(tracefs_root); }
	void apply_kernel() { kernel_.apply(); } // a change of the kernel spec, while tracing
	void disable_kernel(bool disabled) { kernel_.set_disabled(disabled); }
	std::string stop_kernel() { return kernel_.stop(); }
	std::string destroy_kernel() { return kernel_.destroy(); }
	std::string rotate_kernel(const std::string &chunk) { return kernel_.rotate(chunk); }
	// The kernel trace of the last start, if any (counts).
	const kernel::KernelSession *kernel_session() const { return kernel_.trace(); }

	// `track -u`: which programs it traces (process_tracking.hpp).
	const ProcessTracking &user_tracking() const { return user_tracking_; }
	ProcessTracking &edit_user_tracking() { return user_tracking_; }

	// Channels (session_channels.hpp).
	Channel *find_channel(const std::string &name) { return channels_.find(name); }
	// Throws std::runtime_error if the name is taken, the session has
	// started, or the channel's buffers could never be made (SessionChannels::add).
	Channel &add_channel(ChannelSpec spec);
	// The channel named, or the default one (made on first use).
	Channel &channel_or_default(const std::string &name);
	const std::vector<std::unique_ptr<Channel>> &channels() const { return channels_.all(); }

	// At the first start: the metadata file (user_trace.hpp). Throws std::runtime_error.
	void write_metadata() { user_trace_.write_metadata(channels_.all(), user_tracking_.tracked_env()); }
	// The ids in `ch` of the given events (schema key -> schema) that are
	// enabled in it, giving ids (and writing metadata) to new ones.
	std::map<std::string, uint32_t> ids_for(Channel &ch, const std::map<std::string, nlohmann::json> &events)
	{
		return user_trace_.ids_for(ch, events);
	}
	// Their filters, compiled (filter_cache.hpp).
	std::map<std::string, std::vector<std::string>> filters_for(const Channel &ch,
	                                                            const std::map<std::string, nlohmann::json> &events)
	{
		return filters_.filters_for(ch, events);
	}

	// Buffers (session_channels.hpp). Retired buffers count as finishing
	// (finishing_buffers()) until they are accounted: stop and destroy wait
	// for that, so that their channels stay.
	using NewBuffer = SessionChannels::NewBuffer;
	Buffer *buffer_for(Channel &ch, uid_t uid, pid_t pid, std::string *refused,
	                   std::vector<NewBuffer> *made = nullptr)
	{
		return channels_.buffer_for(ch, uid, pid, refused, made);
	}
	void drop_new_buffers(const std::vector<NewBuffer> &made) { channels_.drop_new_buffers(made); }
	using Retired = SessionChannels::Retired;
	std::vector<Retired> program_ended(pid_t pid, uid_t uid);
	std::vector<Retired> retire_buffers(bool recover);
	void finish(Retired &r) const { channels_.finish(r); }
	void account(Retired &r);

	// `snapshot record` (session_snapshot.hpp): planned with the lock held,
	// written without it while the session is busy.
	SnapshotPlan plan_snapshot(const control::SnapshotRecord &req)
	{
		return snapshots_.plan(channels_.all(), user_trace_.snapshot_metadata(), req);
	}
	// Returns the directory; throws std::runtime_error.
	std::string write_snapshot(const SnapshotPlan &plan) { return snapshots_.write(plan, kernel_); }
	uint32_t snapshots_taken() const { return snapshots_.taken(); }
	SnapshotRecorder &snapshot_outputs() { return snapshots_; }
	const SnapshotRecorder &snapshot_outputs() const { return snapshots_; }

	// Trace chunks: rotation and clear (session_chunks.hpp).
	SessionChunks &chunks() { return chunks_; }
	const SessionChunks &chunks() const { return chunks_; }
	// Rotation, lock held: the user trace's buffers made from now on write
	// in the current chunk's user_dir() (made, given the whole metadata).
	// Throws std::system_error.
	void move_user_trace();
	// A rotation that failed after move_user_trace, its chunk abandoned:
	// the user trace goes on where it was (UserTrace::go_back).
	void move_user_trace_back();
	// Then every buffer's consumer asked to write there from a packet
	// boundary on, each calling `done` once it does; returns how many were
	// asked.
	size_t rotate_user_buffers(const std::function<void()> &done);
	// The whole user metadata written so far.
	std::string user_metadata() { return user_trace_.metadata(); }

private:
	SessionIdentity identity_; // first: every part refers to it
	SessionLifecycle lifecycle_;
	KernelDomain kernel_;
	UserTrace user_trace_;
	SessionChannels channels_;
	FilterCache filters_;
	SnapshotRecorder snapshots_;
	SessionChunks chunks_;
	ProcessTracking user_tracking_{"user", {ProcessAttr::vpid, ProcessAttr::vuid, ProcessAttr::vgid}};
};

} // namespace tracery::daemon
