// A tracing session in the daemon: see trace_session.hpp.
#include "daemon/trace_session.hpp"

#include <ctime>
#include <stdexcept>

namespace tracery::daemon {

TraceSession::TraceSession(uint64_t id, std::string name, uid_t owner, gid_t owner_gid, std::string output,
                           bool snapshot, BufferQuota &quota, SessionRelay relay)
	: identity_{id, std::move(name), owner, owner_gid, std::move(output), snapshot, std::move(relay)},
	  kernel_(identity_), user_trace_(identity_), channels_(identity_, quota, user_trace_), filters_(identity_),
	  snapshots_(identity_), chunks_(identity_.output, time(nullptr))
{
	if (local()) // else only sent to the relay
		prepare_output_directory(identity_);
}

Channel &TraceSession::add_channel(ChannelSpec spec)
{
	if (find_channel(spec.name))
		throw std::runtime_error("channel '" + spec.name + "' already exists in session '" + name() + "'");
	if (ever_started())
		throw std::runtime_error("session '" + name() +
		                         "' has been started: channels are added before the first `tracery start`");
	return channels_.add(std::move(spec));
}

Channel &TraceSession::channel_or_default(const std::string &name)
{
	if (Channel *c = find_channel(name.empty() ? "channel0" : name))
		return *c;
	if (!name.empty() && name != "channel0")
		throw std::runtime_error("no channel '" + name + "' in session '" + this->name() +
		                         "': create it with `tracery enable-channel -u " + name + "`");
	return add_channel(ChannelSpec{});
}

void TraceSession::fix_layout()
{
	if (ever_started())
		return;
	kernel_.decide_layout();
	user_trace_.set_local_dir(local() ? user_dir() : "");
}

void TraceSession::move_user_trace() { user_trace_.continue_in(user_dir()); }

void TraceSession::move_user_trace_back() { user_trace_.go_back(user_dir()); }

size_t TraceSession::rotate_user_buffers(const std::function<void()> &done) { return channels_.rotate_buffers(done); }

std::vector<TraceSession::Retired> TraceSession::program_ended(pid_t pid, uid_t uid)
{
	std::vector<Retired> retired = channels_.program_ended(pid, uid);
	lifecycle_.begin_finishing(retired.size());
	return retired;
}

std::vector<TraceSession::Retired> TraceSession::retire_buffers(bool recover)
{
	std::vector<Retired> retired = channels_.retire_buffers(recover);
	lifecycle_.begin_finishing(retired.size());
	return retired;
}

void TraceSession::account(Retired &r)
{
	SessionChannels::account(r);
	lifecycle_.end_finishing();
}

} // namespace tracery::daemon
