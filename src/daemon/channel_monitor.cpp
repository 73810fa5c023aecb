// A channel's timers and its on/off state, as LTTng has them:
// `--switch-timer` (every period, each stream's open sub-buffer that holds
// events is closed, so that its events reach the trace, the relay and the
// live view within the period however slowly it fills), `--monitor-timer`
// (every period, each stream's usage sampled for the triggers on a
// channel's buffer usage and on its session's consumed size), both run by
// one thread of the daemon's (Daemon::monitor); and `disable-channel`, its
// events no longer given ids in the programs until `enable-channel` of its
// name enables it again.
#include "daemon/daemon.hpp"

#include "base/monotonic.hpp"
#include "clock/trace_clock.hpp"
#include "daemon/log.hpp"
#include "kernel/buffer_usage.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace tracery::daemon {

namespace {

// The longest the monitor thread sleeps: how soon a session's timers start
// once it does.
constexpr uint64_t kMonitorLookNs = 100'000'000;

// A stream's sample of every buffer of a channel (ChannelSample's fields).
ChannelSample sample_of(const TraceSession &s, const Channel &ch)
{
	ChannelSample out{s.owner(), s.id(), s.name(), ch.spec().name, "user", 0, std::numeric_limits<uint64_t>::max(),
	                  0};
	for (const auto &[key, b] : ch.buffers()) {
		const ringbuf::Config &config = b->ring->config();
		out.stream_bytes = uint64_t{config.subbuf_size} * config.num_subbuf;
		for (uint32_t cpu = 0; cpu < config.num_cpus; cpu++) {
			const uint64_t n = b->ring->unconsumed_bytes(cpu);
			out.highest_bytes = std::max(out.highest_bytes, n);
			out.lowest_bytes = std::min(out.lowest_bytes, n);
		}
	}
	return out;
}

} // namespace

std::vector<ActionRun> Daemon::sample_kernel(TraceSession &s, uint64_t now, uint64_t *next, bool *sampled)
{
	KernelSpec &k = s.edit_kernel_spec();
	const kernel::KernelSession *trace = s.kernel_session();
	if (!k.monitor_timer_us || k.disabled || !trace || !trace->started() || trace->instance_path().empty())
		return {};
	if (now < k.next_monitor_ns) {
		*next = std::min(*next, k.next_monitor_ns);
		return {};
	}
	k.next_monitor_ns = now + k.monitor_timer_us * 1000;
	*next = std::min(*next, k.next_monitor_ns);
	kernel::BufferUsage usage;
	try {
		usage = kernel::read_buffer_usage(trace->instance_path());
	} catch (const std::exception &e) {
		log(Level::warn, "session %s: the kernel buffer's usage could not be sampled: %s", s.name().c_str(),
		    e.what());
		return {};
	}
	if (usage.bytes.empty())
		return {};
	*sampled = true;
	const auto [lowest, highest] = std::minmax_element(usage.bytes.begin(), usage.bytes.end());
	return triggers_.channel_sampled(
		{s.owner(), s.id(), s.name(), k.channel_name(), "kernel", *highest, *lowest, usage.buffer_bytes});
}

uint64_t timer_argument(const std::optional<uint64_t> &us, const char *option, uint64_t fallback)
{
	if (!us)
		return fallback;
	if (*us != 0 && (*us < kMinChannelTimerUs || *us > kMaxChannelTimerUs))
		throw CommandError(std::string("bad ") + option + " '" + std::to_string(*us) +
		                   "us': give 0 (none) or a period from 10ms to 24h");
	return *us;
}

void Daemon::monitor()
{
	pthread_setname_np(pthread_self(), "monitor-chans");
	Lock lock(mutex_);
	while (!closing_) {
		const uint64_t now = base::monotonic_ns();
		uint64_t next = now + kMonitorLookNs;
		std::vector<ActionRun> runs;
		for (auto &[key, s] : sessions_) {
			// A session busy elsewhere (stopping, rotating) is left alone:
			// its buffers may be being finished.
			if (!s->started() || s->in_use())
				continue;
			const uint64_t ticks = clock::ticks(clock::tick_source(s->tick_unit()));
			bool sampled = false;
			for (const auto &ch : s->channels()) {
				const ChannelSpec &spec = ch->spec();
				if (spec.switch_timer_us && !ch->disabled()) {
					if (now >= ch->next_switch_ns) {
						for (const auto &[owner, b] : ch->buffers())
							for (uint32_t cpu = 0; cpu < b->ring->config().num_cpus; cpu++)
								b->ring->flush(cpu, ticks);
						ch->next_switch_ns = now + spec.switch_timer_us * 1000;
					}
					next = std::min(next, ch->next_switch_ns);
				}
				if (spec.monitor_timer_us) {
					if (now >= ch->next_monitor_ns) {
						if (!ch->buffers().empty()) { // no stream, no sample (as LTTng)
							const auto more = triggers_.channel_sampled(sample_of(*s, *ch));
							runs.insert(runs.end(), more.begin(), more.end());
							sampled = true;
						}
						ch->next_monitor_ns = now + spec.monitor_timer_us * 1000;
					}
					next = std::min(next, ch->next_monitor_ns);
				}
			}
			if (const auto more = sample_kernel(*s, now, &next, &sampled); !more.empty())
				runs.insert(runs.end(), more.begin(), more.end());
			// A snapshot session's buffers have no consumer (their writers
			// move the consumed position when they overwrite): no consumed size.
			if (sampled && !s->snapshot()) {
				uint64_t consumed = 0;
				for (const auto &ch : s->channels())
					consumed += ch->consumed_bytes();
				// The kernel's: what its readers wrote of its buffer.
				if (const kernel::KernelSession *k = s->kernel_session())
					consumed += k->counts().bytes;
				const auto more = triggers_.session_sampled({s->owner(), s->id(), s->name(), consumed});
				runs.insert(runs.end(), more.begin(), more.end());
			}
		}
		run_actions(runs);
		const uint64_t after = base::monotonic_ns();
		if (next > after)
			monitor_wake_.wait_for(lock, std::chrono::nanoseconds(next - after));
	}
}

control::DisableChannelReply Daemon::cmd_disable_channel(const control::DisableChannel &req,
                                                         const control::PeerCred &peer, Lock &lock)
{
	if (req.kernel)
		return disable_kernel_channel(req, peer);
	TraceSession &s = session_for(req.session, peer);
	Channel *ch = s.find_channel(req.channel);
	if (!ch)
		throw CommandError("no channel '" + req.channel + "' in session '" + s.name() + "'");
	if (ch->disabled())
		throw CommandError("channel '" + req.channel + "' of session '" + s.name() + "' is disabled already");
	ch->set_disabled(true);
	if (s.started())
		update_members(s, lock); // returns once the programs apply it (bounded)
	log(Level::info, "session %s: channel %s disabled", s.name().c_str(), req.channel.c_str());
	return {s.name(), req.channel};
}

control::EnableChannelReply Daemon::enable_channel_again(TraceSession &s, Channel &ch,
                                                         const control::EnableChannel &req, Lock &lock)
{
	control::EnableChannel bare;
	bare.session = req.session;
	bare.channel = req.channel;
	if (!(req == bare))
		throw CommandError("channel '" + req.channel + "' of session '" + s.name() +
		                   "' exists, disabled: enable it again with `tracery enable-channel " + req.channel +
		                   "` alone (its options are those it was made with)");
	ch.set_disabled(false);
	ch.next_switch_ns = 0;
	if (s.started())
		update_members(s, lock);
	log(Level::info, "session %s: channel %s enabled again", s.name().c_str(), req.channel.c_str());
	return {s.name(), ch.spec().name, ch.buffer_bytes()};
}

control::DisableChannelReply Daemon::disable_kernel_channel(const control::DisableChannel &req,
                                                            const control::PeerCred &peer)
{
	check_kernel_access(peer);
	TraceSession &s = session_for(req.session, peer);
	const KernelSpec &k = s.kernel_spec();
	if (req.channel != k.channel_name())
		throw CommandError("session '" + s.name() + "' has no kernel channel '" + req.channel + "' (its is '" +
		                   k.channel_name() + "')");
	if (k.disabled)
		throw CommandError("kernel channel '" + req.channel + "' of session '" + s.name() +
		                   "' is disabled already");
	try {
		s.disable_kernel(true);
	} catch (const std::runtime_error &e) {
		throw CommandError(e.what());
	}
	log(Level::info, "session %s: kernel channel %s disabled", s.name().c_str(), req.channel.c_str());
	return {s.name(), req.channel};
}

control::KernelEnableChannelReply Daemon::enable_kernel_channel_again(TraceSession &s,
                                                                      const control::KernelEnableChannel &req)
{
	control::KernelEnableChannel bare;
	bare.session = req.session;
	bare.channel = req.channel;
	if (!(req == bare))
		throw CommandError("kernel channel '" + req.channel + "' of session '" + s.name() +
		                   "' exists, disabled: enable it again with `tracery enable-channel -k " +
		                   req.channel + "` alone");
	try {
		s.disable_kernel(false);
	} catch (const std::runtime_error &e) {
		throw CommandError(e.what());
	}
	log(Level::info, "session %s: kernel channel %s enabled again", s.name().c_str(), req.channel.c_str());
	const KernelSpec &k = s.kernel_spec();
	return {s.name(), req.channel, k.subbuf_size * k.num_subbuf, k.overwrite};
}

} // namespace tracery::daemon
