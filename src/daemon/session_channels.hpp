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

	// See TraceSession::buffer_for.
	struct NewBuffer {
		Channel *channel;
		std::string owner;  // its key in channel->buffers()
		std::string prefix; // of its stream files
	};
	Buffer *buffer_for(Channel &ch, uid_t uid, pid_t pid, std::string *refused, std::vector<NewBuffer> *made);
	void drop_new_buffers(const std::vector<NewBuffer> &made);

	// See TraceSession::Retired.
	struct Retired {
		Channel *channel;
		std::unique_ptr<Buffer> buffer;
		bool recover; // no program writes into it any more
	};
	std::vector<Retired> program_ended(pid_t pid, uid_t uid);
	std::vector<Retired> retire_buffers(bool recover);
	void finish(Retired &r) const;
	static void account(Retired &r);

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
