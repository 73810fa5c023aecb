// A session's channels and their buffers: see session_channels.hpp.
#include "daemon/session_channels.hpp"

#include "base/fs_creds.hpp"
#include "daemon/log.hpp"

#include "clock/trace_clock.hpp"

#include <stdexcept>

namespace tracery::daemon {

consumer::ChannelConsumer::ProblemReport buffer_problem_log(const SessionIdentity &session, const Channel &ch,
                                                            const std::string &owner)
{
	return [where = "session " + session.name + " channel " + ch.spec().name + " buffer " +
	                owner](const std::string &what) { log(Level::warn, "%s: %s", where.c_str(), what.c_str()); };
}

Channel *SessionChannels::find(const std::string &name)
{
	for (auto &c : channels_)
		if (c->spec().name == name)
			return c.get();
	return nullptr;
}

Channel &SessionChannels::add(ChannelSpec spec)
{
	if (session_.snapshot)
		spec.mode = ringbuf::Mode::overwrite;
	uint64_t others = 0;
	for (const auto &c : channels_)
		others += c->buffer_bytes();
	if (const std::string refusal = channel_refusal(spec.name, ring_config(spec), others, quota_.limit());
	    !refusal.empty())
		throw std::runtime_error(refusal);
	channels_.push_back(std::make_unique<Channel>(static_cast<uint32_t>(channels_.size()), std::move(spec)));
	return *channels_.back();
}

std::string SessionChannels::buffer_prefix(const Channel &ch, const std::string &owner) const
{
	std::string base = ch.spec().name + "_" + owner, p = base;
	for (int n = 2; used_prefixes_.count(p); n++)
		p = base + "-" + std::to_string(n);
	return p;
}

Buffer *SessionChannels::buffer_for(Channel &ch, uid_t uid, pid_t pid, std::string *refused,
                                    std::vector<NewBuffer> *made)
{
	const std::string owner = ch.spec().per_pid ? "pid" + std::to_string(pid) : "uid" + std::to_string(uid);
	if (Buffer *old = ch.buffer(owner)) {
		const bool quarantined = old->ring->quarantined();
		if (!quarantined && old->charge.uid() == uid)
			return old;
		// Its programs wrote over it (ringbuf::Channel::fault), or (per PID)
		// the pid is another user's program's now, while the connection of
		// the one it was made for lingers: later programs get a new one;
		// this one is finished at stop.
		ch.set_aside(owner, (quarantined ? "quarantined-" : "ended-") + owner + "-" +
		                            std::to_string(next_instance_++));
	}
	auto charge = quota_.try_charge(uid, ch.buffer_bytes(), refused);
	if (!charge)
		return nullptr;
	auto b = std::make_unique<Buffer>();
	b->charge = std::move(*charge);
	b->owner = owner;
	try {
		b->ring = ch.make_ring();
	} catch (const std::exception &e) {
		const ringbuf::Config c = ch.ring_config();
		throw std::runtime_error("cannot make the " + base::format_size(ch.buffer_bytes()) +
		                         " buffer of channel '" + ch.spec().name + "' (" + std::to_string(c.num_cpus) +
		                         " CPUs x " + std::to_string(c.num_subbuf) + " x " +
		                         base::format_size(c.subbuf_size) + ") for " + owner + ": " + e.what() +
		                         "; free some memory or define the channel with smaller sizes");
	}
	const std::string prefix = buffer_prefix(ch, owner);
	if (!session_.snapshot) {
		base::FsCreds as_owner(session_.owner, session_.owner_gid); // the consumer thread inherits it
		const consumer::StreamNames names{prefix, ch.index(), next_instance_++ << 16, session_.uuid};
		b->names = names;
		auto sink = user_trace_.output().sink(names, b->ring->config().num_cpus, ch.spec().tracefile);
		b->consumer = std::make_unique<consumer::ChannelConsumer>(*b->ring, std::move(sink),
		                                                          clock::tick_source(session_.tick_unit),
		                                                          buffer_problem_log(session_, ch, owner));
		b->consumer->set_live_period(session_.relay.live_period_ns);
		b->consumer->set_event_counter(user_trace_.output().event_counter(names));
		if (ch.spec().mode == ringbuf::Mode::discard)
			b->consumer->start_thread();
	}
	used_prefixes_.insert(prefix);
	if (made)
		made->push_back({&ch, owner, prefix});
	Buffer *out = b.get();
	ch.add_buffer(owner, std::move(b));
	return out;
}

void SessionChannels::drop_new_buffers(const std::vector<NewBuffer> &made)
{
	for (const NewBuffer &n : made) {
		// Its consumer ends its streams (a live session announced them to the
		// relay with an empty packet each; otherwise nothing was written, and
		// no file is made).
		if (const std::unique_ptr<Buffer> b = n.channel->take_buffer(n.owner); b && b->consumer)
			b->consumer->finish();
		used_prefixes_.erase(n.prefix);
	}
}

void SessionChannels::finish(Retired &r) const
{
	Buffer &b = *r.buffer;
	if (r.recover) {
		auto st = b.ring->recover_after_producer_death();
		if (st.subbufs_repaired)
			log(Level::debug, "session %s channel %s: recovered %u sub-buffers (%llu bytes lost in flight)",
			    session_.name.c_str(), r.channel->spec().name.c_str(), st.subbufs_repaired,
			    static_cast<unsigned long long>(st.uncommitted_bytes));
	}
	if (b.consumer) {
		base::FsCreds as_owner(session_.owner, session_.owner_gid);
		b.consumer->finish();
	}
}

size_t SessionChannels::rotate_buffers(const std::function<void()> &done) const
{
	size_t asked = 0;
	for (const auto &ch : channels_)
		for (const auto &[key, b] : ch->buffers()) {
			if (!b->consumer)
				continue;
			b->consumer->rotate(
				user_trace_.output().sink(b->names, b->ring->config().num_cpus, ch->spec().tracefile),
				done);
			asked++;
		}
	return asked;
}

void SessionChannels::account(Retired &r)
{
	r.channel->note_finished(*r.buffer);
	r.buffer.reset(); // gives its quota charge back
}

std::vector<SessionChannels::Retired> SessionChannels::program_ended(pid_t pid, uid_t uid)
{
	std::vector<Retired> retired;
	for (auto &ch : channels_) {
		if (ch->spec().per_pid) {
			const std::string key = "pid" + std::to_string(pid);
			Buffer *b = ch->buffer(key);
			if (!b || b->charge.uid() != uid)
				continue; // none, or another user's program's since the pid was reused
			if (session_.snapshot) {
				// Kept for `snapshot record`, under a name a new program of this pid cannot take.
				b->ring->recover_after_producer_death();
				ch->set_aside(key, "ended-" + key + "-" + std::to_string(next_instance_++));
				continue;
			}
			retired.push_back({ch.get(), ch->take_buffer(key), true});
		} else if (Buffer *b = ch->buffer("uid" + std::to_string(uid))) {
			b->producer_died = true;
		}
	}
	return retired;
}

std::vector<SessionChannels::Retired> SessionChannels::retire_buffers(bool recover)
{
	std::vector<Retired> retired;
	for (auto &ch : channels_) {
		if (session_.snapshot) { // kept for `snapshot record`
			for (const auto &[key, b] : ch->buffers()) {
				if (recover && b->producer_died)
					b->ring->recover_after_producer_death();
				b->producer_died = false;
			}
			continue;
		}
		for (auto &b : ch->take_buffers()) {
			const bool rec = recover && b->producer_died;
			retired.push_back({ch.get(), std::move(b), rec});
		}
	}
	return retired;
}

} // namespace tracery::daemon
