// Presentation of the daemon's replies: see print.hpp.
#include "cli/print.hpp"

#include "base/sizes.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace tracery::cli {

using nlohmann::json;

namespace {
std::string join(const json &list, const char *empty = "-")
{
	std::string out;
	for (const auto &x : list)
		out += (out.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
	return out.empty() ? empty : out;
}
// "NAME [state, snapshot] -> OUTPUT", with the name set in name_format.
std::string session_summary(const json &s, const char *name_format)
{
	char name[512];
	snprintf(name, sizeof name, name_format, s.value("name", "").c_str());
	std::string where = s.value("output", "");
	if (const json relay = s.value("relay", json()); relay.is_object())
		where = "relay " + relay.value("url", "") + (where.empty() ? "" : " and " + where);
	return std::string(name) + " [" + s.value("state", "") + (s.value("snapshot", false) ? ", snapshot" : "") +
	       "] -> " + where;
}
} // namespace

void print_sessions(const json &reply)
{
	const json &sessions = reply["sessions"];
	if (sessions.empty()) {
		printf("No sessions: create one with `tracery create NAME`.\n");
		return;
	}
	printf("Sessions:\n");
	int i = 1;
	// Root sees every user's sessions, each user naming its own: say whose.
	const std::string mine = std::to_string(getuid());
	for (const auto &s : sessions) {
		const std::string owner = s.contains("owner") ? s["owner"].dump() : mine;
		printf("  %d) %s\n", i++,
		       session_summary(s, owner == mine ? "%s" : ("%s (uid " + owner + ")").c_str()).c_str());
	}
}

void print_lost(const json &lost)
{
	for (const auto &c : lost) {
		const uint64_t n = c.value("lost", uint64_t{0});
		printf("  channel %s: %llu event%s lost\n", c.value("channel", "").c_str(),
		       static_cast<unsigned long long>(n), n == 1 ? "" : "s");
	}
}

void print_quarantined(const json &quarantined, const char *indent)
{
	for (const auto &q : quarantined) {
		const std::string channel = q.contains("channel") ? "channel " + q.value("channel", "") + " " : "";
		printf("%swarning: %sbuffer %s was written over by its program (%s): its events from then on are lost, "
		       "how many is unknown\n",
		       indent, channel.c_str(), q.value("buffer", "").c_str(), q.value("fault", "").c_str());
	}
}

void print_relay(const json &r, const char *indent)
{
	if (!r.is_object())
		return;
	const auto n = [&](const char *key) { return static_cast<unsigned long long>(r.value(key, uint64_t{0})); };
	printf("%srelay %s: %s, %llu connection%s; %llu packets sent, %llu confirmed written\n", indent,
	       r.value("url", "").c_str(),
	       r.value("connected", false) ? ("connected, session in " + r.value("path", "")).c_str()
	                                   : ("not connected (" + r.value("error", "") + ")").c_str(),
	       n("connections"), n("connections") == 1 ? "" : "s", n("packets_sent"), n("packets_confirmed"));
	if (n("packets_dropped")) {
		// What a reader of the relay's copy will miss: the events where counted (kernel and empty packets).
		const unsigned long long all = n("packets_dropped"), counted = n("packets_dropped_counted");
		const uint64_t events = n("events_dropped");
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
		       indent, all, base::format_size(n("bytes_dropped")).c_str(), which.c_str(),
		       events ? " (and the counted events as discarded events)" : "");
	}
	if (n("packets_unconfirmed"))
		printf("%swarning: relay: %llu packets sent on connections that broke before the relay confirmed "
		       "them: their events may be missing from its copy\n",
		       indent, n("packets_unconfirmed"));
	if (n("packets_queued"))
		printf("%srelay: %llu packets queued, not sent yet\n", indent, n("packets_queued"));
}

void print_status(const json &s)
{
	printf("%s\n", session_summary(s, "Session '%s'").c_str());
	for (const auto &c : s["channels"]) {
		printf("  channel %s: %s buffers, %s mode, %u x %u bytes per CPU (%s a buffer), context: %s\n",
		       c.value("name", "").c_str(), c.value("buffers", "").c_str(), c.value("mode", "").c_str(),
		       c.value("num_subbuf", 0u), c.value("subbuf_size", 0u),
		       base::format_size(c.value("buffer_bytes", uint64_t{0})).c_str(),
		       join(c["context"], "none").c_str());
		printf("    enabled: %s; disabled: %s\n", join(c["enabled"]).c_str(), join(c["disabled"]).c_str());
		std::string events;
		for (const auto &e : c["events"])
			events += (events.empty() ? "" : ", ") + e.value("name", "") + " (id " +
			          std::to_string(e.value("id", 0)) + ")";
		printf("    events recorded so far: %s\n", events.empty() ? "none" : events.c_str());
		const uint64_t lost = c.value("lost", uint64_t{0});
		printf("    lost: %llu event%s\n", static_cast<unsigned long long>(lost), lost == 1 ? "" : "s");
		print_quarantined(c.value("quarantined", json::array()), "    ");
		// Programs this channel does not trace (over their user's buffer quota, or no buffer could be made).
		if (const uint64_t n = c.value("not_traced_total", uint64_t{0}); n > 0) {
			const json shown = c.value("not_traced", json::array());
			printf("    not traced: %llu program%s%s\n", static_cast<unsigned long long>(n),
			       n == 1 ? "" : "s", shown.size() < n ? " (the newest below)" : "");
			for (const auto &p : shown)
				printf("      pid %d (uid %u): %s\n", p.value("pid", 0), p.value("uid", 0u),
				       p.value("reason", "").c_str());
		}
	}
	if (s.contains("kernel")) {
		const json &k = s["kernel"];
		const uint64_t bytes = k.value("subbuf_size", uint64_t{0}) * k.value("num_subbuf", uint64_t{0});
		printf("  kernel channel %s: %s mode, %s per CPU\n", k.value("channel", "").c_str(),
		       k.value("mode", "").c_str(),
		       bytes ? base::format_size(bytes).c_str() : "the kernel's default size");
		// Each rule with its filter: "sched_switch (filter: prev_tid == 1)".
		const json filters = k.value("filters", json::object());
		const auto with_filters = [&](const json &names, const std::string &prefix) {
			json out = json::array();
			for (const auto &n : names) {
				const std::string name = n.get<std::string>();
				const auto f = filters.find(prefix + name);
				out.push_back(f == filters.end() ? name
				                                 : name + " (filter: " + f->get<std::string>() + ")");
			}
			return out;
		};
		printf("    tracepoints: %s; system calls: %s\n",
		       join(with_filters(k["tracepoints"], ""), "none").c_str(),
		       join(with_filters(k["syscalls"], "syscall "), "none").c_str());
		for (const auto &p : k.value("probes", json::array())) {
			std::string args;
			for (const auto &arg : p["args"])
				args += (args.empty() ? "" : ", ") + arg.get<std::string>();
			const std::string name = p.value("name", "");
			const auto f = filters.find("probe " + name);
			printf("    probe %s: %s, %llu site%s, arguments (%s): %s%s\n", name.c_str(),
			       p.value("spec", "").c_str(), static_cast<unsigned long long>(p.value("sites", 0ull)),
			       p.value("sites", 0ull) == 1 ? "" : "s", p.value("args_source", "").c_str(),
			       args.empty() ? "none" : args.c_str(),
			       f == filters.end() ? "" : (" (filter: " + f->get<std::string>() + ")").c_str());
			if (p.contains("recorded"))
				printf("      %llu hits (runs of it by any process), %llu recorded: the kernel rejected the rest "
				       "(filter, processes not tracked) before they took buffer space\n",
				       static_cast<unsigned long long>(p.value("hits", 0ull)),
				       static_cast<unsigned long long>(p.value("recorded", 0ull)));
			else if (p.contains("hits"))
				printf("      %llu hits (runs of it by any process)\n",
				       static_cast<unsigned long long>(p.value("hits", 0ull)));
		}
		printf("    processes: %s%s\n", join(k["pids"], "all").c_str(),
		       k["pids"].empty() ? ""
		                         : (k.value("follow_children", true) ? " and their descendants" : " only"));
		if (k.contains("events") && !k.contains("trace")) {
			printf("    %zu kernel events enabled; each `snapshot record` reads the newest the kernel kept since "
			       "the previous one into its kernel/\n",
			       k["events"].size());
		} else if (k.contains("events")) {
			const uint64_t lost = k.value("lost", uint64_t{0});
			printf("    %zu kernel events enabled; %llu written to %s, %llu lost\n", k["events"].size(),
			       static_cast<unsigned long long>(k.value("written", uint64_t{0})),
			       k.value("trace", "").c_str(), static_cast<unsigned long long>(lost));
		}
	}
	if (s.contains("user_trace"))
		printf("  user space trace: %s\n", s.value("user_trace", "").c_str());
	if (s.contains("buffer_quota")) {
		const json &q = s["buffer_quota"];
		printf("  buffer quota of uid %u: %s of %s in use\n", q.value("uid", 0u),
		       base::format_size(q.value("used", uint64_t{0})).c_str(),
		       base::format_size(q.value("limit", uint64_t{0})).c_str());
	}
	print_relay(s.value("relay", json()), "  ");
	printf("  programs tracing into it: %s\n", join(s.value("programs", json::array()), "none").c_str());
}

void print_program_events(const json &reply)
{
	const json &programs = reply["programs"];
	if (programs.empty()) {
		printf("No instrumented program is registered with the session daemon.\n");
		return;
	}
	printf("User space events of running programs:\n");
	for (const auto &p : programs) {
		printf("\nPID: %d - Name: %s (uid %u)\n", p.value("pid", 0), p.value("procname", "").c_str(),
		       p.value("uid", 0u));
		for (const auto &e : p["events"])
			printf("      %s (%s)\n", e.value("name", "").c_str(), e.value("fields", "").c_str());
	}
}

} // namespace tracery::cli
