// A session's channels and the lifecycle of their buffers: made when a
// program joins (charged to its user's buffer quota), drained and written
// while the session runs, and finished at stop or when a per-PID program
// ends. Snapshot sessions keep their buffers (only `snapshot record` copies
// them out) until the session is destroyed.
#pragma once

#include "daemon/channel.hpp"
#include "daemon/quota.hpp"
#include "daemon/session_identity.hpp"
#include "daemon/user_trace.hpp"

#include "consumer/channel_consumer.hpp"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tracery::daemon {

// Logs what the consumer of `owner`'s buffer in `ch` reports, naming both
// and the session.
consumer::ChannelConsumer::ProblemReport buffer_problem_log(const SessionIdentity &session, const Channel &ch,
                                                            const std::string &owner);

class SessionChannels {
public:
	// Buffers are charged to `quota` (which outlives the session); their
	// streams go to `user_trace`'s output.
	SessionChannels(const SessionIdentity &session, BufferQuota &quota, UserTrace &user_trace)
		: session_(session), quota_(quota), user_trace_(user_trace)
	{
	}

	Channel *find(const std::string &name);
	// Throws std::runtime_error if the channel's buffers could never be
	// made: sizes the ring buffer refuses on this machine, or more than the
	// buffer quota for one program with the session's other channels
	// (channel_refusal). The caller checks that the name is free.
	Channel &add(ChannelSpec spec);
	const std::vector<std::unique_ptr<Channel>> &all() const { return channels_; }

	// The buffer a program of (uid, pid) writes into, made on first use (or
	// when the one there is quarantined) and charged to uid's buffer quota.
	// nullptr if it does not fit in that quota (*refused says why, in one
	// line). Throws std::runtime_error, naming the channel and the fix, if it
	// cannot be made; nothing changes then. The buffers it makes are added to
	// *made, if given.
	struct NewBuffer {
		Channel *channel;
		std::string owner;  // its key in channel->buffers()
		std::string prefix; // of its stream files
	};
	Buffer *buffer_for(Channel &ch, uid_t uid, pid_t pid, std::string *refused, std::vector<NewBuffer> *made);
	// Undoes buffer_for: drops the buffers it made (nothing was written to
	// them: no program has them) and frees their file names.
	void drop_new_buffers(const std::vector<NewBuffer> &made);

	// Finishing a buffer (recovery, the consumer's last drain, closing its
	// files) waits for the consumer thread and writes up to a whole buffer
	// to disk: the daemon does it without its lock. So buffers are first
	// taken out of their channel (retired, lock held), then finished (lock
	// released), then accounted (lock held: their lost events and faults go
	// to the channel). Their channel must outlive them: the session counts
	// them as finishing until they are accounted (TraceSession).
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
	static void account(Retired &r);
	// Rotation: every buffer's consumer asked to go on in the user trace's
	// directory as it is now (ChannelConsumer::rotate), each calling `done`
	// once it did; returns how many were asked. Lock held.
	size_t rotate_buffers(const std::function<void()> &done) const;

private:
	// A prefix of stream files no buffer of this session used yet (not reserved).
	std::string buffer_prefix(const Channel &ch, const std::string &owner) const;

	const SessionIdentity &session_;
	BufferQuota &quota_;
	UserTrace &user_trace_;
	std::vector<std::unique_ptr<Channel>> channels_;
	std::set<std::string> used_prefixes_;
	uint64_t next_instance_ = 0;
};

} // namespace tracery::daemon
