// What the daemon shows of a session: see session_status.hpp.
#include "daemon/session_status.hpp"

#include <map>
#include <string>

namespace tracery::daemon {

namespace {

control::ChannelStatus channel_status(const Channel &c)
{
	const ChannelSpec &s = c.spec();
	control::ChannelStatus out;
	out.name = s.name;
	out.subbuf_size = s.subbuf_size;
	out.num_subbuf = s.num_subbuf;
	out.mode = s.mode == ringbuf::Mode::overwrite ? "overwrite" : "discard";
	out.buffers = s.per_pid ? "per-pid" : "per-uid";
	out.context = event::context_names(s.context);
	for (const auto &r : c.rules()) {
		std::string rule = r.pattern;
		if (!r.filter.empty())
			rule += " (filter: " + r.filter + ")";
		for (size_t i = 0; i < r.exclude.size(); i++)
			rule += (i ? ", " : " (excluding: ") + r.exclude[i] + (i + 1 == r.exclude.size() ? ")" : "");
		out.enabled.push_back(std::move(rule));
	}
	out.disabled = c.disabled_patterns();
	for (const auto &[key, id] : c.ids())
		out.events.push_back({key.substr(0, key.find('#')), id});
	out.lost = c.lost();
	out.write_loss = c.write_loss();
	out.buffer_bytes = c.buffer_bytes();
	for (const auto &n : c.not_traced())
		out.not_traced.push_back({n.pid, n.uid, std::nullopt, n.reason});
	out.not_traced_total = c.not_traced_total();
	out.quarantined = c.quarantined();
	if (s.tracefile.size) {
		out.tracefile_size = s.tracefile.size;
		out.tracefile_count = s.tracefile.count;
	}
	if (s.switch_timer_us)
		out.switch_timer_us = s.switch_timer_us;
	if (s.monitor_timer_us)
		out.monitor_timer_us = s.monitor_timer_us;
	if (c.disabled())
		out.channel_disabled = true;
	if (s.blocking_timeout_us != 0) {
		const Waits w = c.waits();
		out.blocking_timeout_us = s.blocking_timeout_us;
		out.waits = w.count;
		out.wait_us = w.ns / 1000;
	}
	return out;
}

// The kernel spec's probes, with their hit counts while there is a kernel trace.
std::vector<control::ProbeStatus> probes_status(const KernelSpec &spec, const kernel::KernelSession *trace)
{
	std::map<std::string, kernel::KernelSession::ProbeCounts> counts;
	if (trace) {
		try {
			counts = trace->probe_counts();
		} catch (const kernel::TracefsError &) {
			// Shown without counts.
		}
	}
	std::vector<control::ProbeStatus> out;
	for (const auto &[name, p] : spec.probes) {
		control::ProbeStatus probe{name, p.spec, p.sites.size(), {}, p.sites.at(0).args_source, {}, {}};
		for (const kernel::ProbeArg &a : p.sites.at(0).args)
			probe.args.push_back(a.name + (a.c_type.empty() ? "" : " (" + a.c_type + ")"));
		if (const auto c = counts.find(name); c != counts.end()) {
			probe.hits = c->second.hits;
			probe.recorded = c->second.recorded;
		}
		out.push_back(std::move(probe));
	}
	return out;
}

control::KernelStatus kernel_status(const TraceSession &s)
{
	const KernelSpec &kernel = s.kernel_spec();
	const kernel::KernelSession *trace = s.kernel_session();
	control::KernelStatus k;
	k.tracepoints.assign(kernel.tracepoints.begin(), kernel.tracepoints.end());
	if (kernel.all_syscalls)
		k.syscalls = {"*"};
	else
		k.syscalls.assign(kernel.syscalls.begin(), kernel.syscalls.end());
	k.filters = kernel.filters;
	k.probes = probes_status(kernel, trace);
	k.channel = kernel.channel_name();
	k.subbuf_size = kernel.subbuf_size;
	k.num_subbuf = kernel.num_subbuf;
	k.mode = kernel.overwrite || s.snapshot() ? "overwrite" : "discard";
	if (kernel.tracefile.size) {
		k.tracefile_size = kernel.tracefile.size;
		k.tracefile_count = kernel.tracefile.count;
	}
	if (kernel.disabled)
		k.disabled = true;
	if (kernel.monitor_timer_us)
		k.monitor_timer_us = kernel.monitor_timer_us;
	const kernel::ProcessRules processes = process_rules(kernel);
	if (processes.pid)
		k.pids.assign(processes.pid->begin(), processes.pid->end());
	k.follow_children = kernel.follow_children;
	if (trace) {
		k.events.emplace();
		for (const kernel::Tracepoint &tp : trace->events())
			k.events->push_back(tp.full_name());
		const kernel::KernelTraceCounts n = trace->counts();
		if (!s.snapshot()) { // a snapshot session's kernel trace is in each snapshot-N-DATE/kernel
			k.written = n.events;
			k.lost = n.discarded;
			k.write_loss = write_loss_of(trace->write_losses());
			k.trace = s.local() ? trace->trace_dir() : "kernel/ of the relay's copy";
		}
		if (const std::optional<kernel::TrackedProcessesCounts> n = trace->tracked_counts())
			k.tracked = control::KernelTrackedStatus{n->listed, n->joined, n->left,
			                                         n->scans,  n->lost,   n->window_max_ns};
	}
	return k;
}

} // namespace

control::StatusReply session_status(const TraceSession &s)
{
	control::StatusReply out;
	out.name = s.name();
	out.output = s.output();
	out.state = state_name(s.state());
	out.owner = s.owner();
	out.snapshot = s.snapshot();
	for (const auto &c : s.channels())
		out.channels.push_back(channel_status(*c));
	out.snapshots = s.snapshots_taken();
	const KernelSpec &kernel = s.kernel_spec();
	if (kernel.any_events() || !kernel.tracking.everyone() || !kernel.channel.empty() || s.kernel_session())
		out.kernel = kernel_status(s);
	if (s.kernel_domain() && !s.snapshot() && s.local())
		out.user_trace = s.user_dir();
	out.relay = relay_status(s);
	out.tracking.push_back(s.user_tracking().status());
	if ((s.local() || s.relay_link()) && !s.snapshot())
		out.rotation = s.chunks().status();
	if (out.kernel)
		out.tracking.push_back(kernel_tracking_status(kernel));
	return out;
}

std::optional<control::RelayStatus> relay_status(const TraceSession &s)
{
	const SessionRelay &relay = s.identity().relay;
	if (!relay.link)
		return std::nullopt;
	const consumer::RelayLink::Counts c = relay.link->counts();
	control::RelayStatus r;
	r.url = relay.url;
	r.live_period_ns = relay.live_period_ns;
	r.connected = c.connected;
	r.path = c.relay_path;
	r.connections = c.connections;
	r.packets_sent = c.packets_sent;
	r.packets_confirmed = c.packets_confirmed;
	r.packets_dropped = c.packets_dropped;
	r.bytes_dropped = c.bytes_dropped;
	r.packets_dropped_counted = c.packets_dropped_counted;
	r.events_dropped = c.events_dropped;
	r.packets_unconfirmed = c.packets_unconfirmed;
	r.packets_queued = c.packets_queued;
	r.error = c.error;
	r.relay_write_error = c.relay_write_error;
	r.packets_not_written = c.packets_not_written;
	r.packets_not_written_uncounted = c.packets_not_written_uncounted;
	r.events_not_written = c.events_not_written;
	return r;
}

} // namespace tracery::daemon
