// What the daemon shows of a session: see session_status.hpp.
#include "daemon/session_status.hpp"

#include <map>
#include <string>

namespace tracery::daemon {

using nlohmann::json;

namespace {

json context_names(const event::ContextOptions &c)
{
	json out = json::array();
	if (c.vpid)
		out.push_back("vpid");
	if (c.vtid)
		out.push_back("vtid");
	if (c.procname)
		out.push_back("procname");
	return out;
}

json channel_status(const Channel &c)
{
	const ChannelSpec &s = c.spec();
	json enabled = json::array();
	for (const auto &r : c.rules())
		enabled.push_back(r.filter.empty() ? r.pattern : r.pattern + " (filter: " + r.filter + ")");
	json events = json::array();
	for (const auto &[key, id] : c.ids())
		events.push_back({{"name", key.substr(0, key.find('#'))}, {"id", id}});
	json not_traced = json::array();
	for (const auto &n : c.not_traced())
		not_traced.push_back({{"pid", n.pid}, {"uid", n.uid}, {"reason", n.reason}});
	return {{"name", s.name},
	        {"subbuf_size", s.subbuf_size},
	        {"num_subbuf", s.num_subbuf},
	        {"mode", s.mode == ringbuf::Mode::overwrite ? "overwrite" : "discard"},
	        {"buffers", s.per_pid ? "per-pid" : "per-uid"},
	        {"context", context_names(s.context)},
	        {"enabled", enabled},
	        {"disabled", c.disabled_patterns()},
	        {"events", events},
	        {"lost", c.lost()},
	        {"buffer_bytes", c.buffer_bytes()},
	        {"not_traced", not_traced},
	        {"not_traced_total", c.not_traced_total()},
	        {"quarantined", c.quarantined()}};
}

// The kernel spec's probes, with their hit counts while there is a kernel trace.
json probes_status(const KernelSpec &spec, const kernel::KernelSession *trace)
{
	std::map<std::string, kernel::KernelSession::ProbeCounts> counts;
	if (trace) {
		try {
			counts = trace->probe_counts();
		} catch (const kernel::TracefsError &) {
			// Shown without counts.
		}
	}
	json out = json::array();
	for (const auto &[name, p] : spec.probes) {
		json args = json::array();
		for (const kernel::ProbeArg &a : p.sites.at(0).args)
			args.push_back(a.name + (a.c_type.empty() ? "" : " (" + a.c_type + ")"));
		json probe = {{"name", name},
		              {"spec", p.spec},
		              {"sites", p.sites.size()},
		              {"args", args},
		              {"args_source", p.sites.at(0).args_source}};
		if (const auto c = counts.find(name); c != counts.end()) {
			probe["hits"] = c->second.hits;
			if (c->second.recorded)
				probe["recorded"] = *c->second.recorded;
		}
		out.push_back(std::move(probe));
	}
	return out;
}

json kernel_status(const TraceSession &s)
{
	const KernelSpec &kernel = s.kernel_spec();
	const kernel::KernelSession *trace = s.kernel_session();
	json k = {{"tracepoints", kernel.tracepoints},
	          {"syscalls", kernel.all_syscalls ? json::array({"*"}) : json(kernel.syscalls)},
	          {"filters", kernel.filters},
	          {"probes", probes_status(kernel, trace)},
	          {"channel", kernel.channel_name()},
	          {"subbuf_size", kernel.subbuf_size},
	          {"num_subbuf", kernel.num_subbuf},
	          {"mode", kernel.overwrite || s.snapshot() ? "overwrite" : "discard"},
	          {"pids", kernel.pids},
	          {"follow_children", kernel.follow_children}};
	if (trace) {
		json events = json::array();
		for (const kernel::Tracepoint &tp : trace->events())
			events.push_back(tp.full_name());
		const kernel::KernelTraceCounts n = trace->counts();
		k["events"] = events;
		if (!s.snapshot()) { // a snapshot session's kernel trace is in each snapshot-N-DATE/kernel
			k["written"] = n.events;
			k["lost"] = n.discarded;
			k["trace"] = s.local() ? trace->trace_dir() : "kernel/ of the relay's copy";
		}
	}
	return k;
}

} // namespace

json session_status(const TraceSession &s)
{
	json chans = json::array();
	for (const auto &c : s.channels())
		chans.push_back(channel_status(*c));
	json out = {{"name", s.name()},
	            {"output", s.output()},
	            {"state", state_name(s.state())},
	            {"owner", s.owner()},
	            {"snapshot", s.snapshot()},
	            {"channels", chans},
	            {"snapshots", s.snapshots_taken()}};
	const KernelSpec &kernel = s.kernel_spec();
	if (kernel.any_events() || !kernel.pids.empty() || !kernel.channel.empty() || s.kernel_session())
		out["kernel"] = kernel_status(s);
	if (s.kernel_domain() && !s.snapshot() && s.local())
		out["user_trace"] = s.user_dir();
	if (s.relay_link())
		out["relay"] = relay_status(s);
	return out;
}

json relay_status(const TraceSession &s)
{
	const SessionRelay &relay = s.identity().relay;
	if (!relay.link)
		return nullptr;
	const consumer::RelayLink::Counts c = relay.link->counts();
	return {{"url", relay.url},
	        {"live_period_ns", relay.live_period_ns},
	        {"connected", c.connected},
	        {"path", c.relay_path},
	        {"connections", c.connections},
	        {"packets_sent", c.packets_sent},
	        {"packets_confirmed", c.packets_confirmed},
	        {"packets_dropped", c.packets_dropped},
	        {"bytes_dropped", c.bytes_dropped},
	        {"packets_dropped_counted", c.packets_dropped_counted},
	        {"events_dropped", c.events_dropped},
	        {"packets_unconfirmed", c.packets_unconfirmed},
	        {"packets_queued", c.packets_queued},
	        {"error", c.error}};
}

} // namespace tracery::daemon
