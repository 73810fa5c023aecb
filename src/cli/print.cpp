// Presentation of the daemon's replies: see print.hpp.
#include "cli/print.hpp"
#include "cli/rotation.hpp"
#include "cli/tracking.hpp"

#include "base/sizes.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace tracery::cli {

namespace {
std::string join(const std::vector<std::string> &list, const char *empty = "-")
{
	std::string out;
	for (const auto &x : list)
		out += (out.empty() ? "" : ", ") + x;
	return out.empty() ? empty : out;
}
std::string join(const std::vector<int32_t> &pids, const char *empty)
{
	std::vector<std::string> text;
	for (const int32_t pid : pids)
		text.push_back(std::to_string(pid));
	return join(text, empty);
}
// "NAME [state, snapshot] -> OUTPUT", with the name set in name_format (a
// session of the list, or a session's status).
template <class Session>
std::string session_summary(const Session &s, const char *name_format)
{
	char name[512];
	snprintf(name, sizeof name, name_format, s.name.c_str());
	std::string where = s.output;
	if (s.relay)
		where = "relay " + s.relay->url + (where.empty() ? "" : " and " + where);
	return std::string(name) + " [" + s.state + (s.snapshot ? ", snapshot" : "") + "] -> " + where;
}
} // namespace

void print_sessions(const control::ListReply &reply)
{
	if (reply.sessions.empty()) {
		printf("No sessions: create one with `tracery create NAME`.\n");
		return;
	}
	printf("Sessions:\n");
	int i = 1;
	// Root sees every user's sessions, each user naming its own: say whose.
	for (const auto &s : reply.sessions)
		printf("  %d) %s\n", i++,
		       session_summary(s, s.owner == getuid() ? "%s"
		                                              : ("%s (uid " + std::to_string(s.owner) + ")").c_str())
		               .c_str());
}

void print_write_loss(const std::optional<control::WriteLoss> &loss, const char *indent)
{
	if (!loss)
		return;
	const control::WriteLoss &w = *loss;
	printf("%s%s%llu event%s lost because writes were refused: %s%s\n", indent,
	       w.refusing ? "writes refused now; " : "", static_cast<unsigned long long>(w.events),
	       w.events == 1 ? "" : "s", w.reason.c_str(), w.refusing ? "" : " (writing resumed or ended)");
	if (w.uncounted_subbufs > 0)
		printf("%sand %llu sub-buffer%s not written whose events could not be counted\n", indent,
		       static_cast<unsigned long long>(w.uncounted_subbufs), w.uncounted_subbufs == 1 ? "" : "s");
	if (w.not_in_trace > 0)
		printf("%sthe trace itself does not count %llu of the lost events (no packet after them could be "
		       "written)\n",
		       indent, static_cast<unsigned long long>(w.not_in_trace));
}

void print_lost(const std::vector<control::LostCount> &lost)
{
	for (const auto &c : lost) {
		printf("  channel %s: %llu event%s lost\n", c.channel.c_str(), static_cast<unsigned long long>(c.lost),
		       c.lost == 1 ? "" : "s");
		print_write_loss(c.write_loss, "    ");
	}
}

void print_quarantined(const std::vector<control::Quarantined> &quarantined, const char *indent)
{
	for (const auto &q : quarantined) {
		const std::string channel = q.channel ? "channel " + *q.channel + " " : "";
		printf("%swarning: %sbuffer %s was written over by its program (%s): its events from then on are lost, "
		       "how many is unknown\n",
		       indent, channel.c_str(), q.buffer.c_str(), q.fault.c_str());
	}
}

void print_relay(const std::optional<control::RelayStatus> &relay, const char *indent)
{
	if (!relay)
		return;
	const control::RelayStatus &r = *relay;
	const auto n = [](uint64_t count) { return static_cast<unsigned long long>(count); };
	printf("%srelay %s: %s, %llu connection%s; %llu packets sent, %llu confirmed written\n", indent, r.url.c_str(),
	       r.connected ? ("connected, session in " + r.path).c_str() : ("not connected (" + r.error + ")").c_str(),
	       n(r.connections), r.connections == 1 ? "" : "s", n(r.packets_sent), n(r.packets_confirmed));
	if (r.packets_dropped) {
		// What a reader of the relay's copy will miss: the events where counted (kernel and empty packets).
		const unsigned long long all = n(r.packets_dropped), counted = n(r.packets_dropped_counted);
		const uint64_t events = r.events_dropped;
		// Counted packets without events are empty ones (a live stream's, a lost count's).
		const std::string holding = events ? " holding " + std::to_string(events) + " events" : " empty";
		std::string which;
		if (counted == all)
			which = events ? holding + " not sent" : " not sent, all empty";
		else if (counted == 0)
			which = " of user buffers not sent, their events not counted";
		else
			which = " not sent: " + std::to_string(counted) + holding + ", " +
			        std::to_string(all - counted) + " of user buffers whose events were not counted";
		printf("%swarning: relay: %llu packets (%s)%s (a full send queue, a broken connection or "
		       "the session's end): the relay's copy has gaps there, which its readers report as discarded "
		       "packets%s\n",
		       indent, all, base::format_size(r.bytes_dropped).c_str(), which.c_str(),
		       events ? " (and the counted events as discarded events)" : "");
	}
	if (r.packets_unconfirmed)
		printf("%swarning: relay: %llu packets sent on connections that broke before the relay confirmed "
		       "them: their events may be missing from its copy\n",
		       indent, n(r.packets_unconfirmed));
	if (r.packets_not_written)
		printf("%swarning: relay: %llu events lost: %llu packets sent%s were not written, the relay's disk "
		       "refusing them as the session stopped\n",
		       indent, n(r.events_not_written), n(r.packets_not_written),
		       r.packets_not_written_uncounted ? (" (" + std::to_string(r.packets_not_written_uncounted) +
		                                          " of them with events that could not be counted)")
		                                                 .c_str()
		                                       : "");
	if (r.packets_queued)
		printf("%srelay: %llu packets queued, not sent yet\n", indent, n(r.packets_queued));
	if (!r.relay_write_error.empty())
		printf("%swarning: the relay's disk refuses writes: %s (what does not fit in the queue meanwhile is "
		       "counted as lost under its channel)\n",
		       indent, r.relay_write_error.c_str());
}

namespace {

// --tracefile-size/--tracefile-count, when given.
void print_tracefiles(const std::optional<uint64_t> &size, const std::optional<uint64_t> &count)
{
	if (!size)
		return;
	if (count.value_or(0))
		printf("    trace files: at most %s each, the newest %llu of each stream kept\n",
		       base::format_size(*size).c_str(), static_cast<unsigned long long>(*count));
	else
		printf("    trace files: at most %s each\n", base::format_size(*size).c_str());
}

// A timer's period: "1 s", "250 ms", "1500 us".
std::string timer_period(uint64_t us)
{
	return us % 1000000 == 0 ? std::to_string(us / 1000000) + " s"
	       : us % 1000 == 0  ? std::to_string(us / 1000) + " ms"
	                         : std::to_string(us) + " us";
}

// enable-channel --switch-timer and --monitor-timer, when set.
void print_timers(const std::optional<uint64_t> &switch_us, const std::optional<uint64_t> &monitor_us)
{
	if (switch_us || monitor_us)
		printf("    switch timer: %s; monitor timer: %s\n",
		       switch_us ? timer_period(*switch_us).c_str() : "none",
		       monitor_us ? timer_period(*monitor_us).c_str() : "none");
}

void print_kernel(const control::KernelStatus &k)
{
	const uint64_t bytes = k.subbuf_size * k.num_subbuf;
	printf("  kernel channel %s%s: %s mode, %s per CPU\n", k.channel.c_str(),
	       k.disabled.value_or(false) ? " [disabled]" : "", k.mode.c_str(),
	       bytes ? base::format_size(bytes).c_str() : "the kernel's default size");
	print_tracefiles(k.tracefile_size, k.tracefile_count);
	// enable-channel -k --monitor-timer (a kernel channel has no switch timer).
	printf("    monitor timer: %s\n", k.monitor_timer_us ? timer_period(*k.monitor_timer_us).c_str() : "none");
	// Each rule with its filter: "sched_switch (filter: prev_tid == 1)".
	const auto with_filters = [&](const std::vector<std::string> &names, const std::string &prefix) {
		std::vector<std::string> out;
		for (const auto &name : names) {
			const auto f = k.filters.find(prefix + name);
			out.push_back(f == k.filters.end() ? name : name + " (filter: " + f->second + ")");
		}
		return out;
	};
	printf("    tracepoints: %s; system calls: %s\n", join(with_filters(k.tracepoints, ""), "none").c_str(),
	       join(with_filters(k.syscalls, "syscall "), "none").c_str());
	for (const auto &p : k.probes) {
		const auto f = k.filters.find("probe " + p.name);
		printf("    probe %s: %s, %llu site%s, arguments (%s): %s%s\n", p.name.c_str(), p.spec.c_str(),
		       static_cast<unsigned long long>(p.sites), p.sites == 1 ? "" : "s", p.args_source.c_str(),
		       join(p.args, "none").c_str(),
		       f == k.filters.end() ? "" : (" (filter: " + f->second + ")").c_str());
		if (p.recorded)
			printf("      %llu hits (runs of it by any process), %llu recorded: the kernel rejected the rest "
			       "(filter, processes not tracked) before they took buffer space\n",
			       static_cast<unsigned long long>(p.hits.value_or(0)),
			       static_cast<unsigned long long>(*p.recorded));
		else if (p.hits)
			printf("      %llu hits (runs of it by any process)\n",
			       static_cast<unsigned long long>(*p.hits));
	}
	if (!k.pids.empty()) // the rest of the kernel's tracking: below, with the user space's
		printf("    processes: %s%s\n", join(k.pids, "").c_str(),
		       k.follow_children ? " and their descendants" : " only");
	if (k.tracked)
		printf("    tracked threads: %llu listed; since the start %llu joined (the longest %.1f ms after their "
		       "change), %llu left; /proc read %llu times, %llu watcher records lost\n",
		       static_cast<unsigned long long>(k.tracked->listed),
		       static_cast<unsigned long long>(k.tracked->joined), k.tracked->window_max_ns / 1e6,
		       static_cast<unsigned long long>(k.tracked->left),
		       static_cast<unsigned long long>(k.tracked->scans),
		       static_cast<unsigned long long>(k.tracked->lost));
	if (k.events && !k.trace) {
		printf("    %zu kernel events enabled; each `snapshot record` reads the newest the kernel kept since "
		       "the previous one into its kernel/\n",
		       k.events->size());
	} else if (k.events) {
		printf("    %zu kernel events enabled; %llu written to %s, %llu lost\n", k.events->size(),
		       static_cast<unsigned long long>(k.written.value_or(0)), k.trace->c_str(),
		       static_cast<unsigned long long>(k.lost.value_or(0)));
		print_write_loss(k.write_loss, "      ");
	}
}

// A blocking channel: its timeout, and what its emitters waited for space.
void print_blocking(int64_t timeout_us, uint64_t waits, uint64_t wait_us)
{
	const std::string timeout = timeout_us < 0 ? "inf" : std::to_string(timeout_us) + " us";
	printf("    blocking timeout: %s; %llu event%s waited for space, %.3f s in all\n", timeout.c_str(),
	       static_cast<unsigned long long>(waits), waits == 1 ? "" : "s", static_cast<double>(wait_us) / 1e6);
}

} // namespace

void print_status(const control::StatusReply &s)
{
	printf("%s\n", session_summary(s, "Session '%s'").c_str());
	for (const auto &c : s.channels) {
		printf("  channel %s%s: %s buffers, %s mode, %u x %u bytes per CPU (%s a buffer), context: %s\n",
		       c.name.c_str(), c.channel_disabled.value_or(false) ? " [disabled]" : "", c.buffers.c_str(),
		       c.mode.c_str(), c.num_subbuf, c.subbuf_size, base::format_size(c.buffer_bytes).c_str(),
		       join(c.context, "none").c_str());
		print_timers(c.switch_timer_us, c.monitor_timer_us);
		printf("    enabled: %s; disabled: %s\n", join(c.enabled).c_str(), join(c.disabled).c_str());
		std::string events;
		for (const auto &e : c.events)
			events += (events.empty() ? "" : ", ") + e.name + " (id " + std::to_string(e.id) + ")";
		printf("    events recorded so far: %s\n", events.empty() ? "none" : events.c_str());
		printf("    lost: %llu event%s\n", static_cast<unsigned long long>(c.lost), c.lost == 1 ? "" : "s");
		print_tracefiles(c.tracefile_size, c.tracefile_count);
		if (c.blocking_timeout_us)
			print_blocking(*c.blocking_timeout_us, c.waits.value_or(0), c.wait_us.value_or(0));
		print_write_loss(c.write_loss, "      ");
		print_quarantined(c.quarantined, "    ");
		// Programs this channel does not trace (over their user's buffer quota, or no buffer could be made).
		if (const uint64_t n = c.not_traced_total; n > 0) {
			printf("    not traced: %llu program%s%s\n", static_cast<unsigned long long>(n),
			       n == 1 ? "" : "s", c.not_traced.size() < n ? " (the newest below)" : "");
			for (const auto &p : c.not_traced)
				printf("      pid %d (uid %u): %s\n", p.pid, p.uid.value_or(0), p.reason.c_str());
		}
	}
	if (s.kernel)
		print_kernel(*s.kernel);
	if (s.user_trace)
		printf("  user space trace: %s\n", s.user_trace->c_str());
	const control::BufferQuotaStatus &q = s.buffer_quota;
	printf("  buffer quota of uid %u: %s of %s in use\n", q.uid, base::format_size(q.used).c_str(),
	       base::format_size(q.limit).c_str());
	print_relay(s.relay, "  ");
	for (const control::DomainTracking &t : s.tracking)
		print_tracking(t, "  ");
	if (s.rotation)
		print_rotation(*s.rotation, "  ");
	printf("  programs tracing into it: %s\n", join(s.programs, "none").c_str());
}

void print_program_events(const control::ListEventsReply &reply)
{
	if (reply.programs.empty()) {
		printf("No instrumented program is registered with the session daemon.\n");
		return;
	}
	printf("User space events of running programs:\n");
	for (const auto &p : reply.programs) {
		printf("\nPID: %d - Name: %s (uid %u)\n", p.pid, p.procname.c_str(), p.uid);
		for (const auto &e : p.events)
			printf("      %s (%s)\n", e.name.c_str(), e.fields.c_str());
	}
}

} // namespace tracery::cli
