// A tracing session in the daemon: its owner, output directory, channels and
// state; the trace's metadata (written at the first start, event classes
// appended as programs bring events); the buffers' lifecycle (made when a
// program joins, drained and written at stop or when a per-PID program
// ends); and snapshot records.
#pragma once

#include "daemon/channel.hpp"

#include "base/fd.hpp"
#include "consumer/relay_link.hpp"
#include "consumer/trace_output.hpp"
#include "kernel/kernel_session.hpp"

#include "ctf/metadata.hpp"
#include "ctf/uuid.hpp"

#include "control/messages.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tracery::daemon {

enum class SessionState { created, started, stopping, stopped };
const char *state_name(SessionState s);

// What `enable-event -k`, `enable-channel -k` and `track -k` asked of a
// session's kernel domain (kernel/kernel_session.hpp does it at start).
struct KernelSpec {
	std::set<std::string> tracepoints; // patterns of kernel::match_tracepoints()
	std::set<std::string> syscalls;
	bool all_syscalls = false;
	// Filter expressions by rule (kernel::KernelSessionConfig::filters).
	std::map<std::string, std::string> filters;
	std::string channel;                      // enable-channel -k NAME ("": the default, channel0)
	uint64_t subbuf_size = 0, num_subbuf = 0; // 0: the kernel's default buffer size
	bool overwrite = false;
	std::set<pid_t> pids; // empty: every process
	bool follow_children = true;
	// enable-event -k --userspace-probe=SPEC NAME, by NAME: resolved when
	// enabled, from the file opened then with the requester's credentials
	// (held open: the kernel is given that very file, /proc/self/fd/N).
	struct Probe {
		std::string spec; // as given, the path made absolute
		std::string args; // --args, "" if none
		bool is_return = false;
		std::vector<kernel::ProbeSite> sites;
		std::shared_ptr<base::Fd> file;
	};
	std::map<std::string, Probe> probes;

	bool any_events() const { return all_syscalls || !tracepoints.empty() || !syscalls.empty() || !probes.empty(); }
	std::string channel_name() const { return channel.empty() ? "channel0" : channel; }
};

// A session streamed to a relay (`tracery create --set-url`): its link,
// connected, and its live period (0: not live).
struct SessionRelay {
	std::shared_ptr<consumer::RelayLink> link;
	std::string url; // HOST:PORT, for status
	uint64_t live_period_ns = 0;
};

class TraceSession {
public:
	// Creates (or checks) the output directory: it must be new or empty.
	// Throws std::runtime_error with a one-line message naming the fix.
	// Its buffers are charged to `quota` (which outlives the session).
	// With a relay, `output` is the local copy's directory, "" for none.
	TraceSession(uint64_t id, std::string name, uid_t owner, gid_t owner_gid, std::string output, bool snapshot,
	             BufferQuota &quota, SessionRelay relay = {});

	uint64_t id() const { return id_; }
	const std::string &name() const { return name_; }
	uid_t owner() const { return owner_; }
	gid_t owner_gid() const { return owner_gid_; }
	const std::string &output() const { return output_; }
	bool snapshot() const { return snapshot_; }
	// Whether its traces are written to disk here (not only sent to a relay).
	bool local() const { return !output_.empty(); }
	const std::shared_ptr<consumer::RelayLink> &relay_link() const { return relay_.link; }
	// The relay's counts, for status and stop (null without a relay).
	std::optional<control::RelayStatus> relay_status() const;
	SessionState state = SessionState::created;
	int busy = 0;      // a command waits for programs (lock released): others keep off
	int finishing = 0; // buffers taken out of it being finished without the daemon's lock: stop waits for them
	bool ever_started() const { return metadata_written_ || state != SessionState::created; }
	// A start is starting the kernel trace (lock released): its files are
	// being written before the session is `started`.
	bool starting_kernel = false;
	// Whether the output may hold stream files: the journal of open traces
	// (trace_journal.hpp) lists the session.
	bool may_have_trace() const
	{
		return local() && (ever_started() || starting_kernel || kernel_session_ != nullptr);
	}

	// The kernel domain. Set before the first start: a session with kernel
	// events then writes its user trace to OUTPUT/ust and its kernel trace
	// to OUTPUT/kernel (one trace per directory, so that babeltrace2 OUTPUT
	// merges both); a session without keeps its user trace in OUTPUT.
	KernelSpec kernel;
	bool kernel_domain() const { return kernel_domain_; }
	// Where the user trace is (OUTPUT or OUTPUT/ust).
	std::string user_dir() const { return kernel_domain_ ? output_ + "/ust" : output_; }
	// At each start, before anything is written: with kernel events, checks
	// them against this kernel and starts tracing them (the first time, a
	// new instance and OUTPUT/kernel; then the same ones, continued),
	// without the daemon's lock (reads /proc for the state dump). Throws
	// std::runtime_error (one line) with nothing left running.
	void start_kernel(const std::string &tracefs_root);
	// Stop (and a start whose user part failed): drains every page, the
	// kernel trace stays open for the next start (without the daemon's
	// lock). Returns "" or the one-line error of a failed reader.
	std::string stop_kernel();
	// Destroy: closes the kernel trace and removes the tracefs instance.
	// Returns "" or why it could not.
	std::string destroy_kernel();
	// Decides the layout (first start only): see kernel_domain().
	void fix_layout();
	// The kernel trace of the last start, if any (counts).
	const kernel::KernelSession *kernel_session() const { return kernel_session_.get(); }

	Channel *find_channel(const std::string &name);
	// Throws std::runtime_error if the name is taken, the session has
	// started, or the channel's buffers could never be made: sizes the ring
	// buffer refuses on this machine, or more than the buffer quota for one
	// program with the session's other channels (channel_refusal).
	Channel &add_channel(ChannelSpec spec);
	// The channel named, or the default one (made on first use).
	Channel &channel_or_default(const std::string &name);
	const std::vector<std::unique_ptr<Channel>> &channels() const { return channels_; }

	// At the first start: the metadata file (preamble, one stream class per
	// channel, the event classes known so far). Throws std::runtime_error.
	void write_metadata();
	// The ids in `ch` of the given events (schema key -> schema) that are
	// enabled in it, giving ids (and writing metadata) to new ones.
	std::map<std::string, uint32_t> ids_for(Channel &ch, const std::map<std::string, nlohmann::json> &events);
	// The filters of those events that `ch` records only when a filter
	// accepts them, compiled for each event version: schema key -> [hex of
	// the bytecode]. A filter that does not apply to an event's field types
	// becomes one that rejects every event (and is logged).
	std::map<std::string, std::vector<std::string>> filters_for(const Channel &ch,
	                                                            const std::map<std::string, nlohmann::json> &events);

	// The buffer a program of (uid, pid) writes into, made on first use (or
	// when the one there is quarantined) and charged to uid's buffer quota. nullptr if it does not fit in that quota
	// (*refused says why, in one line). Throws std::runtime_error, naming the
	// channel and the fix, if it cannot be made; nothing changes then. The
	// buffers it makes are added to *made, if given.
	struct NewBuffer {
		Channel *channel;
		std::string owner;  // its key in channel->buffers
		std::string prefix; // of its stream files
	};
	Buffer *buffer_for(Channel &ch, uid_t uid, pid_t pid, std::string *refused,
	                   std::vector<NewBuffer> *made = nullptr);
	// Undoes buffer_for: drops the buffers it made (nothing was written to
	// them: no program has them) and frees their file names.
	void drop_new_buffers(const std::vector<NewBuffer> &made);
	// Finishing a buffer (recovery, the consumer's last drain, closing its
	// files) waits for the consumer thread and writes up to a whole buffer
	// to disk: the daemon does it without its lock. So buffers are first
	// taken out of their channel (retired, lock held), then finished (lock
	// released; the session's `finishing` counts them meanwhile, and stop
	// and destroy wait for it to fall to 0, so `channel` stays valid), then
	// accounted (lock held: their lost events and faults go to the channel).
	struct Retired {
		Channel *channel;
		std::unique_ptr<Buffer> buffer;
		bool recover; // no program writes into it any more
	};
	// A per-PID program ended: its buffers are retired (in a snapshot
	// session: recovered and kept, under another name). Per-UID buffers are
	// marked for recovery at the next stop.
	std::vector<Retired> program_ended(pid_t pid, uid_t uid);
	// Stop: every buffer is retired (snapshot sessions keep theirs).
	// recover: no program writes into them any more (all quiesced).
	std::vector<Retired> retire_buffers(bool recover);
	// Any thread, without the daemon's lock: flush, drain and close.
	void finish(Retired &r) const;
	// Lock held, after finish().
	void account(Retired &r);
	// `snapshot record` copies the newest data of every buffer into
	// OUTPUT/snapshot-N-DATE (with a kernel domain: its ust/ and kernel/,
	// the kernel part read out of the tracefs buffer, see
	// kernel/kernel_session.hpp): planned with the daemon's lock held,
	// written without it while the session is busy (so its buffers stay:
	// only destroy and a failed start drop a snapshot session's buffers).
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
	SnapshotPlan plan_snapshot();
	// Returns the directory; throws std::runtime_error.
	std::string write_snapshot(const SnapshotPlan &plan);

	// Its status, but for what the daemon knows (its programs, the quota).
	control::StatusReply status() const;
	std::vector<control::ProbeStatus> probes_status() const; // the kernel spec's probes, for status
	// What the trace's timestamps count; every program writing into it is
	// told (clock/trace_clock.hpp).
	clock::TickUnit tick_unit() const { return tick_unit_; }

private:
	// Logs what the consumer of `owner`'s buffer in `ch` reports, naming both.
	consumer::ChannelConsumer::ProblemReport problem_log(const Channel &ch, const std::string &owner) const;
	// A prefix of stream files no buffer of this session used yet (not reserved).
	std::string buffer_prefix(const Channel &ch, const std::string &owner) const;
	// Where the user trace goes (user_dir(), the relay's "ust", or both):
	// made on first use, once the layout is fixed.
	consumer::TraceOutput &user_output();

	BufferQuota &quota_;
	uint64_t id_;
	std::string name_;
	uid_t owner_;
	gid_t owner_gid_;
	std::string output_;
	bool snapshot_;
	ctf::Uuid uuid_;
	clock::TickUnit tick_unit_ = clock::preferred_tick_unit();
	base::TickScale clock_scale_; // the user trace's, written identically in the kernel trace's metadata
	bool kernel_domain_ = false;
	std::unique_ptr<kernel::KernelSession> kernel_session_;
	SessionRelay relay_;
	std::optional<consumer::TraceOutput> user_output_;
	std::unique_ptr<ctf::MetadataWriter> writer_;
	std::string metadata_;
	bool metadata_written_ = false;
	std::vector<std::unique_ptr<Channel>> channels_;
	std::set<std::string> used_prefixes_;
	uint64_t next_instance_ = 0;
	uint32_t snapshots_ = 0;
	std::map<std::pair<std::string, std::string>, std::string> bytecode_; // (key, filter) -> hex
};

} // namespace tracery::daemon
