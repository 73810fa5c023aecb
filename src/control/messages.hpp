// control/messages.hpp — every message of the control protocol, each a struct
// whose fields are named once (encoded and strictly decoded by codec.hpp).
// The protocol's version and its compatibility rule: wire.hpp.
//
// Two conversations run over the daemon's socket (framing: wire.hpp); the
// kind in every frame's header says which (control::Kind).
//
// The tracery command's: one request, one reply, then the connection closes.
//   request  {"cmd": <a Command below>, ...its fields}
//   reply    {"ok": true, ...its fields} or ErrorReply {"ok": false, "error": "<one line naming the fix>"}
//   A request that is not exactly its struct is refused with ErrorReply
//   naming the field.
//
// A traced program's: it opens with a Hello and keeps the connection for as
// long as it runs; each side sends messages whose "type" says which.
//   program -> daemon  Hello, NewEvents (a library loaded later), Ack (of a request of the daemon's)
//   daemon -> program  Ready (registration complete), StartSession (+ the buffers' memfds: one per
//                      channel, in order, but for a channel whose `buffer` is false: it does not
//                      trace this program), Update (ids and filters changed), Ids (answers
//                      NewEvents), StopSession; ErrorReply before it closes a program it refuses.
//   A program's message that is not exactly its struct ends its connection
//   (the daemon logs why).
// Event schemas are event/schema.hpp's JSON form, checked by event::checked_schema.
// Triggers and their notifications have their messages in trigger_messages.hpp.
#pragma once

#include "control/codec.hpp"
#include "control/session_file.hpp"

#include "event/json.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tracery::control {

// The tracery command's requests.
namespace cmd {
inline constexpr char kCreate[] = "create";
inline constexpr char kDestroy[] = "destroy";
inline constexpr char kEnableChannel[] = "enable-channel";
inline constexpr char kEnableEvent[] = "enable-event";
inline constexpr char kDisableEvent[] = "disable-event";
inline constexpr char kAddContext[] = "add-context";
inline constexpr char kStart[] = "start";
inline constexpr char kStop[] = "stop";
inline constexpr char kStatus[] = "status";
inline constexpr char kList[] = "list";
inline constexpr char kListEvents[] = "list-events";
inline constexpr char kSnapshotRecord[] = "snapshot-record";
// The kernel domain (-k): its own requests, which a daemon without it
// refuses as unknown instead of taking them for user space ones.
inline constexpr char kKernelEnableEvent[] = "kernel-enable-event";
inline constexpr char kKernelDisableEvent[] = "kernel-disable-event";
inline constexpr char kKernelEnableChannel[] = "kernel-enable-channel";
inline constexpr char kKernelTrack[] = "kernel-track";
inline constexpr char kKernelUntrack[] = "kernel-untrack";
inline constexpr char kKernelList[] = "kernel-list";
inline constexpr char kKernelAddContext[] = "kernel-add-context";
// Both domains: which processes a session's events come from.
inline constexpr char kTrack[] = "track";
inline constexpr char kUntrack[] = "untrack";
// Trace chunks: rotation and clear.
inline constexpr char kRotate[] = "rotate";
inline constexpr char kEnableRotation[] = "enable-rotation";
inline constexpr char kDisableRotation[] = "disable-rotation";
inline constexpr char kClear[] = "clear";
// Sessions saved to files and loaded from them (session_file.hpp).
inline constexpr char kSave[] = "save";
inline constexpr char kLoad[] = "load";
// A snapshot session's output (as LTTng, one at most).
inline constexpr char kSnapshotAddOutput[] = "snapshot-add-output";
inline constexpr char kSnapshotDelOutput[] = "snapshot-del-output";
inline constexpr char kSnapshotListOutput[] = "snapshot-list-output";
// A channel's events stop (and start again) being recorded.
inline constexpr char kDisableChannel[] = "disable-channel";
} // namespace cmd

// The messages between the daemon and a traced program.
namespace msg {
inline constexpr char kHello[] = "hello";
inline constexpr char kNewEvents[] = "new_events";
inline constexpr char kAck[] = "ack";
inline constexpr char kReady[] = "ready";
inline constexpr char kStartSession[] = "start_session";
inline constexpr char kUpdate[] = "update";
inline constexpr char kIds[] = "ids";
inline constexpr char kStopSession[] = "stop_session";
} // namespace msg

// The string at `key` of a message body, or "" if there is none or it is not
// a string: what says which message a body is, read without throwing.
inline std::string string_field(const nlohmann::json &body, const char *key)
{
	const auto it = body.find(key);
	return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}
inline std::string command_of(const nlohmann::json &body) { return string_field(body, kCmdKey); }
inline std::string type_of(const nlohmann::json &body) { return string_field(body, kTypeKey); }

// A refused command, and a program the daemon refuses.
struct ErrorReply {
	static constexpr Tag tag = refusal();
	std::string error;
	static constexpr auto kFields = std::tuple{field("error", &ErrorReply::error)};
	bool operator==(const ErrorReply &) const = default;
};

// ---- Pieces of several messages.

// A filter a program refused (its bytecode failed the program's verifier).
struct FilterRefusal {
	std::string event;
	std::string reason;
	static constexpr auto kFields =
		std::tuple{field("event", &FilterRefusal::event), field("reason", &FilterRefusal::reason)};
	bool operator==(const FilterRefusal &) const = default;
};
// The same, with the program's pid (in replies to the command).
struct ProgramRefusal {
	int32_t pid = 0;
	std::string event;
	std::string reason;
	static constexpr auto kFields =
		std::tuple{field("pid", &ProgramRefusal::pid), field("event", &ProgramRefusal::event),
	                   field("reason", &ProgramRefusal::reason)};
	bool operator==(const ProgramRefusal &) const = default;
};

// A buffer a program wrote over (ringbuf::Channel::fault): its events from then on are lost.
struct Quarantined {
	std::string buffer; // "uid1000", "pid4242"
	std::string fault;
	std::optional<std::string> channel; // in stop's reply
	static constexpr auto kFields =
		std::tuple{field("buffer", &Quarantined::buffer), field("fault", &Quarantined::fault),
	                   optional_field("channel", &Quarantined::channel)};
	bool operator==(const Quarantined &) const = default;
};

// Events a channel's trace lost because its output refused writes (a full
// disk, a quota, an I/O error; consumer::WriteLosses): counted in the
// channel's `lost` too.
struct WriteLoss {
	uint64_t events = 0;
	// Sub-buffers not written whose events could not be counted (not in `events`).
	uint64_t uncounted_subbufs = 0;
	// Once its buffers are finished: of the channel's lost events, those its
	// trace does not count as discarded (no packet after them could be written).
	uint64_t not_in_trace = 0;
	bool refusing = false; // writes are refused now
	std::string reason;    // the last refusal, with the file
	static constexpr auto kFields = std::tuple{
		field("events", &WriteLoss::events),
		field("uncounted_subbufs", &WriteLoss::uncounted_subbufs),
		field("not_in_trace", &WriteLoss::not_in_trace),
		field("refusing", &WriteLoss::refusing),
		field("reason", &WriteLoss::reason),
	};
	bool operator==(const WriteLoss &) const = default;
};

// A session's relay (create --set-url): where, connected or not, what was
// sent, confirmed, not sent (consumer::RelayLink::Counts).
struct RelayStatus {
	std::string url; // HOST:PORT
	uint64_t live_period_ns = 0;
	bool connected = false;
	std::string path; // the relay's directory of the session
	uint64_t connections = 0;
	uint64_t packets_sent = 0, packets_confirmed = 0;
	uint64_t packets_dropped = 0, bytes_dropped = 0, packets_dropped_counted = 0, events_dropped = 0;
	uint64_t packets_unconfirmed = 0, packets_queued = 0;
	std::string error;
	std::string relay_write_error; // while the relay says its disk refuses the session's writes
	// Sent, then dropped by the relay whose disk still refused them at the
	// session's stop; their events (those of the uncounted ones unknown).
	uint64_t packets_not_written = 0, packets_not_written_uncounted = 0, events_not_written = 0;
	static constexpr auto kFields = std::tuple{
		field("url", &RelayStatus::url),
		field("live_period_ns", &RelayStatus::live_period_ns),
		field("connected", &RelayStatus::connected),
		field("path", &RelayStatus::path),
		field("connections", &RelayStatus::connections),
		field("packets_sent", &RelayStatus::packets_sent),
		field("packets_confirmed", &RelayStatus::packets_confirmed),
		field("packets_dropped", &RelayStatus::packets_dropped),
		field("bytes_dropped", &RelayStatus::bytes_dropped),
		field("packets_dropped_counted", &RelayStatus::packets_dropped_counted),
		field("events_dropped", &RelayStatus::events_dropped),
		field("packets_unconfirmed", &RelayStatus::packets_unconfirmed),
		field("packets_queued", &RelayStatus::packets_queued),
		field("error", &RelayStatus::error),
		field("relay_write_error", &RelayStatus::relay_write_error),
		field("packets_not_written", &RelayStatus::packets_not_written),
		field("packets_not_written_uncounted", &RelayStatus::packets_not_written_uncounted),
		field("events_not_written", &RelayStatus::events_not_written),
	};
	bool operator==(const RelayStatus &) const = default;
};

// ---- The tracery command's requests and their replies.

struct CreateReply {
	static constexpr Tag tag = reply_to(cmd::kCreate);
	std::string session;
	std::string output; // "": sent to the relay only
	bool snapshot = false;
	std::optional<RelayStatus> relay;
	static constexpr auto kFields =
		std::tuple{field("session", &CreateReply::session), field("output", &CreateReply::output),
	                   field("snapshot", &CreateReply::snapshot), optional_field("relay", &CreateReply::relay)};
	bool operator==(const CreateReply &) const = default;
};
struct Create {
	static constexpr Tag tag = command(cmd::kCreate);
	using Reply = CreateReply;
	std::string session;
	bool snapshot = false;
	std::optional<std::string> output;      // absolute; missing: sent to the relay only
	std::optional<std::string> url;         // --set-url
	std::optional<bool> local_copy;         // with url
	std::optional<uint64_t> live_period_ns; // --live
	std::optional<bool> public_live;        // --public-live (with --live)
	// --relay-key: the key's name and secret (hex), read by the command from
	// the user's file (the daemon opens no file for a client); --relay-ca:
	// the PEM text of the CAs that sign the relay's certificate (TLS).
	std::optional<std::string> relay_key_name, relay_key_secret, relay_ca_pem;
	static constexpr auto kFields = std::tuple{
		field("session", &Create::session),
		field("snapshot", &Create::snapshot),
		optional_field("output", &Create::output),
		optional_field("url", &Create::url),
		optional_field("local_copy", &Create::local_copy),
		optional_field("live_period_ns", &Create::live_period_ns),
		optional_field("public_live", &Create::public_live),
		optional_field("relay_key_name", &Create::relay_key_name),
		optional_field("relay_key_secret", &Create::relay_key_secret),
		optional_field("relay_ca_pem", &Create::relay_ca_pem),
	};
	bool operator==(const Create &) const = default;
};

struct DestroyReply {
	static constexpr Tag tag = reply_to(cmd::kDestroy);
	std::vector<std::string> destroyed;
	static constexpr auto kFields = std::tuple{field("destroyed", &DestroyReply::destroyed)};
	bool operator==(const DestroyReply &) const = default;
};
struct Destroy {
	static constexpr Tag tag = command(cmd::kDestroy);
	using Reply = DestroyReply;
	std::optional<bool> all; // --all (then no session)
	std::optional<std::string> session;
	static constexpr auto kFields =
		std::tuple{optional_field("all", &Destroy::all), optional_field("session", &Destroy::session)};
	bool operator==(const Destroy &) const = default;
};

struct EnableChannelReply {
	static constexpr Tag tag = reply_to(cmd::kEnableChannel);
	std::string session;
	std::string channel;
	uint64_t buffer_bytes = 0; // of one buffer
	static constexpr auto kFields = std::tuple{field("session", &EnableChannelReply::session),
	                                           field("channel", &EnableChannelReply::channel),
	                                           field("buffer_bytes", &EnableChannelReply::buffer_bytes)};
	bool operator==(const EnableChannelReply &) const = default;
};
// A channel's monitor timer when enable-channel gives none (LTTng's default).
inline constexpr uint64_t kDefaultMonitorTimerUs = 1'000'000;
struct EnableChannel {
	static constexpr Tag tag = command(cmd::kEnableChannel);
	using Reply = EnableChannelReply;
	std::string session;
	std::string channel;
	std::optional<uint64_t> subbuf_size, num_subbuf; // missing: the defaults
	bool overwrite = false;
	bool per_pid = false;
	// --blocking-timeout: how long an emitter that finds no space waits for
	// it, in microseconds; -1 without limit; missing or 0: never.
	std::optional<int64_t> blocking_timeout_us;
	// --tracefile-size (bytes) and --tracefile-count: each stream in files of
	// at most that size, the newest that many kept (consumer/file_sink.hpp).
	std::optional<uint64_t> tracefile_size, tracefile_count;
	// --switch-timer: every period, each sub-buffer holding events is closed
	// (handed to the consumer, the live view, a snapshot); missing: never.
	// --monitor-timer: how often the buffers' usage is sampled for the
	// triggers (channel-buffer-usage-*, session-consumed-size-ge); missing:
	// the default (kDefaultMonitorTimerUs), 0: never. In microseconds.
	std::optional<uint64_t> switch_timer_us, monitor_timer_us;
	static constexpr auto kFields = std::tuple{
		field("session", &EnableChannel::session),
		field("channel", &EnableChannel::channel),
		optional_field("subbuf_size", &EnableChannel::subbuf_size),
		optional_field("num_subbuf", &EnableChannel::num_subbuf),
		field("overwrite", &EnableChannel::overwrite),
		field("per_pid", &EnableChannel::per_pid),
		optional_field("blocking_timeout_us", &EnableChannel::blocking_timeout_us),
		optional_field("tracefile_size", &EnableChannel::tracefile_size),
		optional_field("tracefile_count", &EnableChannel::tracefile_count),
		optional_field("switch_timer_us", &EnableChannel::switch_timer_us),
		optional_field("monitor_timer_us", &EnableChannel::monitor_timer_us),
	};
	bool operator==(const EnableChannel &) const = default;
};

// enable-event and disable-event (user space): the event rules of a channel.
struct EventRulesReply {
	std::string session;
	std::string channel;
	std::vector<std::string> patterns;
	// Filters the programs refused (while the session is started).
	std::optional<std::vector<ProgramRefusal>> refused;
	static constexpr auto kFields = std::tuple{
		field("session", &EventRulesReply::session),
		field("channel", &EventRulesReply::channel),
		field("patterns", &EventRulesReply::patterns),
		optional_field("refused", &EventRulesReply::refused),
	};
	bool operator==(const EventRulesReply &) const = default;
};
struct EventRules {
	std::string session;
	std::vector<std::string> patterns; // PROVIDER:NAME, * wildcards
	bool all = false;                  // -a: every event
	std::string channel;               // "": channel0
	std::optional<std::string> filter; // enable-event --filter
	// enable-event --exclude: events the patterns match that the rule leaves out
	std::optional<std::vector<std::string>> exclude;
	static constexpr auto kFields = std::tuple{
		field("session", &EventRules::session),
		field("patterns", &EventRules::patterns),
		field("all", &EventRules::all),
		field("channel", &EventRules::channel),
		optional_field("filter", &EventRules::filter),
		optional_field("exclude", &EventRules::exclude),
	};
	bool operator==(const EventRules &) const = default;
};
struct EnableEventReply : EventRulesReply {
	static constexpr Tag tag = reply_to(cmd::kEnableEvent);
};
struct EnableEvent : EventRules {
	static constexpr Tag tag = command(cmd::kEnableEvent);
	using Reply = EnableEventReply;
};
struct DisableEventReply : EventRulesReply {
	static constexpr Tag tag = reply_to(cmd::kDisableEvent);
};
struct DisableEvent : EventRules {
	static constexpr Tag tag = command(cmd::kDisableEvent);
	using Reply = DisableEventReply;
};

struct AddContextReply {
	static constexpr Tag tag = reply_to(cmd::kAddContext);
	std::string session;
	static constexpr auto kFields = std::tuple{field("session", &AddContextReply::session)};
	bool operator==(const AddContextReply &) const = default;
};
struct AddContext {
	static constexpr Tag tag = command(cmd::kAddContext);
	using Reply = AddContextReply;
	std::string session;
	std::string channel;            // "": every channel (or channel0)
	std::vector<std::string> types; // vpid, vtid, procname, ... (tracery add-context --list)
	static constexpr auto kFields =
		std::tuple{field("session", &AddContext::session), field("channel", &AddContext::channel),
	                   field("types", &AddContext::types)};
	bool operator==(const AddContext &) const = default;
};

// A channel that does not trace a program (over its user's buffer quota, or
// no buffer could be made).
struct NotTraced {
	int32_t pid = 0;
	std::optional<uint32_t> uid;        // in status
	std::optional<std::string> channel; // in start's reply
	std::string reason;
	static constexpr auto kFields =
		std::tuple{field("pid", &NotTraced::pid), optional_field("uid", &NotTraced::uid),
	                   optional_field("channel", &NotTraced::channel), field("reason", &NotTraced::reason)};
	bool operator==(const NotTraced &) const = default;
};

struct StartReply {
	static constexpr Tag tag = reply_to(cmd::kStart);
	std::string session;
	uint64_t programs = 0;             // that trace into it now
	std::vector<int32_t> not_attached; // pids that did not acknowledge in time
	std::vector<NotTraced> not_traced;
	std::vector<ProgramRefusal> refused;
	static constexpr auto kFields = std::tuple{
		field("session", &StartReply::session),           field("programs", &StartReply::programs),
		field("not_attached", &StartReply::not_attached), field("not_traced", &StartReply::not_traced),
		field("refused", &StartReply::refused),
	};
	bool operator==(const StartReply &) const = default;
};

// The requests that name a session and nothing else.
struct SessionRequest {
	std::string session;
	static constexpr auto kFields = std::tuple{field("session", &SessionRequest::session)};
	bool operator==(const SessionRequest &) const = default;
};
struct Start : SessionRequest {
	static constexpr Tag tag = command(cmd::kStart);
	using Reply = StartReply;
};

struct LostCount {
	std::string channel; // "NAME (kernel)" for the kernel's
	uint64_t lost = 0;
	std::optional<WriteLoss> write_loss; // when writes were refused
	static constexpr auto kFields =
		std::tuple{field("channel", &LostCount::channel), field("lost", &LostCount::lost),
	                   optional_field("write_loss", &LostCount::write_loss)};
	bool operator==(const LostCount &) const = default;
};
struct StopReply {
	static constexpr Tag tag = reply_to(cmd::kStop);
	std::string session;
	std::vector<LostCount> lost;
	std::vector<int32_t> not_detached; // pids that did not acknowledge in time
	std::vector<Quarantined> quarantined;
	std::optional<std::string> kernel_error;
	std::optional<RelayStatus> relay;
	std::optional<std::string> relay_error;
	static constexpr auto kFields = std::tuple{
		field("session", &StopReply::session),
		field("lost", &StopReply::lost),
		field("not_detached", &StopReply::not_detached),
		field("quarantined", &StopReply::quarantined),
		optional_field("kernel_error", &StopReply::kernel_error),
		optional_field("relay", &StopReply::relay),
		optional_field("relay_error", &StopReply::relay_error),
	};
	bool operator==(const StopReply &) const = default;
};
struct Stop : SessionRequest {
	static constexpr Tag tag = command(cmd::kStop);
	using Reply = StopReply;
};

// ---- A session's status (status), piece by piece.

struct EventId {
	std::string name;
	uint32_t id = 0;
	static constexpr auto kFields = std::tuple{field("name", &EventId::name), field("id", &EventId::id)};
	bool operator==(const EventId &) const = default;
};
struct ChannelStatus {
	std::string name;
	uint32_t subbuf_size = 0, num_subbuf = 0;
	std::string mode;    // overwrite, discard
	std::string buffers; // per-pid, per-uid
	std::vector<std::string> context;
	std::vector<std::string> enabled; // "PATTERN" or "PATTERN (filter: EXPR)"
	std::vector<std::string> disabled;
	std::vector<EventId> events; // recorded so far
	uint64_t lost = 0;
	std::optional<WriteLoss> write_loss; // when writes were refused
	uint64_t buffer_bytes = 0;
	std::vector<NotTraced> not_traced; // the newest
	uint64_t not_traced_total = 0;
	std::vector<Quarantined> quarantined;
	// A blocking channel: its timeout (EnableChannel's), the records that
	// waited for space and the microseconds they waited in all.
	std::optional<int64_t> blocking_timeout_us;
	std::optional<uint64_t> waits, wait_us;
	std::optional<uint64_t> tracefile_size, tracefile_count;   // EnableChannel's, when given
	std::optional<uint64_t> switch_timer_us, monitor_timer_us; // EnableChannel's, when not 0
	std::optional<bool> channel_disabled;                      // disable-channel: true while it is
	static constexpr auto kFields = std::tuple{
		field("name", &ChannelStatus::name),
		field("subbuf_size", &ChannelStatus::subbuf_size),
		field("num_subbuf", &ChannelStatus::num_subbuf),
		field("mode", &ChannelStatus::mode),
		field("buffers", &ChannelStatus::buffers),
		field("context", &ChannelStatus::context),
		field("enabled", &ChannelStatus::enabled),
		field("disabled", &ChannelStatus::disabled),
		field("events", &ChannelStatus::events),
		field("lost", &ChannelStatus::lost),
		optional_field("write_loss", &ChannelStatus::write_loss),
		field("buffer_bytes", &ChannelStatus::buffer_bytes),
		field("not_traced", &ChannelStatus::not_traced),
		field("not_traced_total", &ChannelStatus::not_traced_total),
		field("quarantined", &ChannelStatus::quarantined),
		optional_field("blocking_timeout_us", &ChannelStatus::blocking_timeout_us),
		optional_field("waits", &ChannelStatus::waits),
		optional_field("wait_us", &ChannelStatus::wait_us),
		optional_field("tracefile_size", &ChannelStatus::tracefile_size),
		optional_field("tracefile_count", &ChannelStatus::tracefile_count),
		optional_field("switch_timer_us", &ChannelStatus::switch_timer_us),
		optional_field("monitor_timer_us", &ChannelStatus::monitor_timer_us),
		optional_field("channel_disabled", &ChannelStatus::channel_disabled),
	};
	bool operator==(const ChannelStatus &) const = default;
};
// enable-event -k --userspace-probe, as status shows it.
struct ProbeStatus {
	std::string name;
	std::string spec;
	uint64_t sites = 0;
	std::vector<std::string> args; // "NAME (C TYPE)"
	std::string args_source;
	std::optional<uint64_t> hits;     // when the kernel says
	std::optional<uint64_t> recorded; // likewise
	static constexpr auto kFields = std::tuple{
		field("name", &ProbeStatus::name),
		field("spec", &ProbeStatus::spec),
		field("sites", &ProbeStatus::sites),
		field("args", &ProbeStatus::args),
		field("args_source", &ProbeStatus::args_source),
		optional_field("hits", &ProbeStatus::hits),
		optional_field("recorded", &ProbeStatus::recorded),
	};
	bool operator==(const ProbeStatus &) const = default;
};
// What `track` and `untrack` set, in each domain of a session: as LTTng's
// process attribute trackers, an inclusion set per attribute, every value at
// first. A process is traced when every attribute's set includes its value
// (user space: vpid, vuid, vgid; the kernel: pid, vpid, uid, vuid, gid, vgid).
struct ProcessAttrRule {
	std::string attribute;
	bool all = true;              // every value is included
	std::vector<uint64_t> values; // without `all`: those included (none: no process)
	static constexpr auto kFields =
		std::tuple{field("attribute", &ProcessAttrRule::attribute), field("all", &ProcessAttrRule::all),
	                   field("values", &ProcessAttrRule::values)};
	bool operator==(const ProcessAttrRule &) const = default;
};
struct DomainTracking {
	std::string domain;                  // "user" or "kernel"
	std::vector<ProcessAttrRule> rules;  // each attribute of the domain, in the order above
	std::optional<bool> follow_children; // the kernel's pid: their descendants too
	static constexpr auto kFields =
		std::tuple{field("domain", &DomainTracking::domain), field("rules", &DomainTracking::rules),
	                   optional_field("follow_children", &DomainTracking::follow_children)};
	bool operator==(const DomainTracking &) const = default;
};

// While tracing processes tracked by more than pids: the threads listed in
// tracefs's set_event_pid and their upkeep (kernel/tracked_processes.hpp).
struct KernelTrackedStatus {
	uint64_t listed = 0, joined = 0, left = 0;
	uint64_t scans = 0; // /proc read whole
	uint64_t lost = 0;  // watcher records lost (then a scan)
	uint64_t window_max_ns = 0;
	static constexpr auto kFields = std::tuple{field("listed", &KernelTrackedStatus::listed),
	                                           field("joined", &KernelTrackedStatus::joined),
	                                           field("left", &KernelTrackedStatus::left),
	                                           field("scans", &KernelTrackedStatus::scans),
	                                           field("lost", &KernelTrackedStatus::lost),
	                                           field("window_max_ns", &KernelTrackedStatus::window_max_ns)};
	bool operator==(const KernelTrackedStatus &) const = default;
};

struct KernelStatus {
	std::vector<std::string> tracepoints;
	std::vector<std::string> syscalls;          // ["*"]: every one
	std::map<std::string, std::string> filters; // by rule: "NAME", "syscall NAME", "probe NAME"
	std::vector<ProbeStatus> probes;
	std::string channel;
	uint64_t subbuf_size = 0, num_subbuf = 0; // 0: the kernel's default
	std::string mode;
	std::vector<int32_t> pids; // empty: every process
	bool follow_children = true;
	// Once started: the events enabled; but for a snapshot session, what
	// was written where and lost.
	std::optional<std::vector<std::string>> events;
	std::optional<uint64_t> written, lost;
	std::optional<WriteLoss> write_loss; // when writes were refused
	std::optional<std::string> trace;
	std::optional<KernelTrackedStatus> tracked;              // last: added after the others
	std::optional<uint64_t> tracefile_size, tracefile_count; // KernelEnableChannel's, when given
	std::optional<bool> disabled;                            // disable-channel -k: true while it is
	std::optional<uint64_t> monitor_timer_us;                // KernelEnableChannel's, when not 0
	static constexpr auto kFields = std::tuple{
		field("tracepoints", &KernelStatus::tracepoints),
		field("syscalls", &KernelStatus::syscalls),
		field("filters", &KernelStatus::filters),
		field("probes", &KernelStatus::probes),
		field("channel", &KernelStatus::channel),
		field("subbuf_size", &KernelStatus::subbuf_size),
		field("num_subbuf", &KernelStatus::num_subbuf),
		field("mode", &KernelStatus::mode),
		field("pids", &KernelStatus::pids),
		field("follow_children", &KernelStatus::follow_children),
		optional_field("events", &KernelStatus::events),
		optional_field("written", &KernelStatus::written),
		optional_field("lost", &KernelStatus::lost),
		optional_field("write_loss", &KernelStatus::write_loss),
		optional_field("trace", &KernelStatus::trace),
		optional_field("tracked", &KernelStatus::tracked),
		optional_field("tracefile_size", &KernelStatus::tracefile_size),
		optional_field("tracefile_count", &KernelStatus::tracefile_count),
		optional_field("disabled", &KernelStatus::disabled),
		optional_field("monitor_timer_us", &KernelStatus::monitor_timer_us),
	};
	bool operator==(const KernelStatus &) const = default;
};
struct BufferQuotaStatus {
	uint32_t uid = 0;
	uint64_t limit = 0, used = 0; // bytes
	static constexpr auto kFields =
		std::tuple{field("uid", &BufferQuotaStatus::uid), field("limit", &BufferQuotaStatus::limit),
	                   field("used", &BufferQuotaStatus::used)};
	bool operator==(const BufferQuotaStatus &) const = default;
};
// A session's trace chunks (rotate, enable-rotation, clear).
struct RotationStatus {
	std::optional<uint64_t> timer_ns;        // rotates at least this often (enable-rotation --timer)
	std::optional<uint64_t> size_bytes;      // rotates once its current chunk holds this much (--size)
	uint64_t rotations = 0;                  // done so far
	std::string chunk;                       // the directory of the chunk being written
	std::optional<std::string> last_archive; // the newest archived chunk
	static constexpr auto kFields = std::tuple{
		optional_field("timer_ns", &RotationStatus::timer_ns),
		optional_field("size_bytes", &RotationStatus::size_bytes),
		field("rotations", &RotationStatus::rotations),
		field("chunk", &RotationStatus::chunk),
		optional_field("last_archive", &RotationStatus::last_archive),
	};
	bool operator==(const RotationStatus &) const = default;
};
struct StatusReply {
	static constexpr Tag tag = reply_to(cmd::kStatus);
	std::string name;
	std::string output;
	std::string state; // created, started, stopping, stopped
	uint32_t owner = 0;
	bool snapshot = false;
	std::vector<ChannelStatus> channels;
	uint32_t snapshots = 0; // recorded
	std::optional<KernelStatus> kernel;
	std::optional<std::string> user_trace; // where, beside a kernel trace
	std::optional<RelayStatus> relay;
	std::vector<int32_t> programs; // pids tracing into it
	BufferQuotaStatus buffer_quota;
	std::vector<DomainTracking> tracking;   // each domain's tracked process attributes
	std::optional<RotationStatus> rotation; // a session that may rotate (local, not snapshot)
	static constexpr auto kFields = std::tuple{
		field("name", &StatusReply::name),
		field("output", &StatusReply::output),
		field("state", &StatusReply::state),
		field("owner", &StatusReply::owner),
		field("snapshot", &StatusReply::snapshot),
		field("channels", &StatusReply::channels),
		field("snapshots", &StatusReply::snapshots),
		optional_field("kernel", &StatusReply::kernel),
		optional_field("user_trace", &StatusReply::user_trace),
		optional_field("relay", &StatusReply::relay),
		field("programs", &StatusReply::programs),
		field("buffer_quota", &StatusReply::buffer_quota),
		field("tracking", &StatusReply::tracking),
		optional_field("rotation", &StatusReply::rotation),
	};
	bool operator==(const StatusReply &) const = default;
};
struct Status : SessionRequest {
	static constexpr Tag tag = command(cmd::kStatus);
	using Reply = StatusReply;
};

struct SessionSummary {
	std::string name;
	uint32_t owner = 0;
	std::string output;
	std::string state;
	bool snapshot = false;
	std::optional<RelayStatus> relay; // null without one
	static constexpr auto kFields = std::tuple{
		field("name", &SessionSummary::name),         field("owner", &SessionSummary::owner),
		field("output", &SessionSummary::output),     field("state", &SessionSummary::state),
		field("snapshot", &SessionSummary::snapshot), field("relay", &SessionSummary::relay),
	};
	bool operator==(const SessionSummary &) const = default;
};
struct ListReply {
	static constexpr Tag tag = reply_to(cmd::kList);
	std::vector<SessionSummary> sessions; // those the peer may see
	static constexpr auto kFields = std::tuple{field("sessions", &ListReply::sessions)};
	bool operator==(const ListReply &) const = default;
};
struct List {
	static constexpr Tag tag = command(cmd::kList);
	using Reply = ListReply;
	static constexpr auto kFields = std::tuple{};
	bool operator==(const List &) const = default;
};

struct EventSummary {
	std::string name;   // PROVIDER:NAME
	std::string fields; // event::fields_summary
	static constexpr auto kFields =
		std::tuple{field("name", &EventSummary::name), field("fields", &EventSummary::fields)};
	bool operator==(const EventSummary &) const = default;
};
struct ProgramEvents {
	int32_t pid = 0;
	uint32_t uid = 0;
	std::string procname;
	std::vector<EventSummary> events;
	static constexpr auto kFields =
		std::tuple{field("pid", &ProgramEvents::pid), field("uid", &ProgramEvents::uid),
	                   field("procname", &ProgramEvents::procname), field("events", &ProgramEvents::events)};
	bool operator==(const ProgramEvents &) const = default;
};
struct ListEventsReply {
	static constexpr Tag tag = reply_to(cmd::kListEvents);
	std::vector<ProgramEvents> programs; // those the peer may trace
	static constexpr auto kFields = std::tuple{field("programs", &ListEventsReply::programs)};
	bool operator==(const ListEventsReply &) const = default;
};
struct ListEvents {
	static constexpr Tag tag = command(cmd::kListEvents);
	using Reply = ListEventsReply;
	static constexpr auto kFields = std::tuple{};
	bool operator==(const ListEvents &) const = default;
};

struct SnapshotRecordReply {
	static constexpr Tag tag = reply_to(cmd::kSnapshotRecord);
	std::string session;
	std::string path; // the snapshot's directory
	static constexpr auto kFields =
		std::tuple{field("session", &SnapshotRecordReply::session), field("path", &SnapshotRecordReply::path)};
	bool operator==(const SnapshotRecordReply &) const = default;
};
struct SnapshotRecord {
	static constexpr Tag tag = command(cmd::kSnapshotRecord);
	using Reply = SnapshotRecordReply;
	std::string session;
	// Each missing: the snapshot output's (snapshot add-output), else the defaults.
	std::optional<std::string> name;  // --name: the snapshot's directory is NAME-N-DATE ("snapshot")
	std::optional<uint64_t> max_size; // --max-size: bytes of the user space buffers copied (0: all)
	std::optional<std::string> path;  // a directory of snapshots instead of the output's (absolute)
	static constexpr auto kFields = std::tuple{
		field("session", &SnapshotRecord::session), optional_field("name", &SnapshotRecord::name),
		optional_field("max_size", &SnapshotRecord::max_size), optional_field("path", &SnapshotRecord::path)};
	bool operator==(const SnapshotRecord &) const = default;
};

// ---- The kernel domain's requests.

// enable-event -k and disable-event -k: tracepoints or system calls; or
// (enable only) one probe of a program, --userspace-probe.
struct KernelEventsReply {
	std::string session;
	std::string channel;
	std::vector<std::string> events;                      // as enabled or disabled, each with its filter
	std::optional<std::vector<std::string>> not_recorded; // tracepoints and system calls: what a filter keeps out
	std::optional<uint64_t> sites;                        // a probe: its sites,
	std::optional<std::string> args_source;               // where its arguments' names come from,
	std::optional<std::vector<std::string>> notes;        // and what to know about them
	static constexpr auto kFields = std::tuple{
		field("session", &KernelEventsReply::session),
		field("channel", &KernelEventsReply::channel),
		field("events", &KernelEventsReply::events),
		optional_field("not_recorded", &KernelEventsReply::not_recorded),
		optional_field("sites", &KernelEventsReply::sites),
		optional_field("args_source", &KernelEventsReply::args_source),
		optional_field("notes", &KernelEventsReply::notes),
	};
	bool operator==(const KernelEventsReply &) const = default;
};
struct KernelEvents {
	std::string session;
	std::string channel;                                 // "": the session's kernel channel
	std::optional<std::string> filter;                   // --filter
	std::optional<std::vector<std::string>> tracepoints; // patterns, SYSTEM:NAME, * wildcards
	std::optional<std::vector<std::string>> syscalls;    // --syscall
	std::optional<bool> all_syscalls;                    // --syscall -a, or -a
	std::optional<std::string> probe;                    // --userspace-probe=SPEC
	std::optional<std::string> probe_name;               // its event name
	std::optional<std::string> args;                     // --args
	std::optional<uint64_t> capture_buffers;             // --capture-buffers[=BYTES] (last: added after the others)
	static constexpr auto kFields = std::tuple{
		field("session", &KernelEvents::session),
		field("channel", &KernelEvents::channel),
		optional_field("filter", &KernelEvents::filter),
		optional_field("tracepoints", &KernelEvents::tracepoints),
		optional_field("syscalls", &KernelEvents::syscalls),
		optional_field("all_syscalls", &KernelEvents::all_syscalls),
		optional_field("probe", &KernelEvents::probe),
		optional_field("probe_name", &KernelEvents::probe_name),
		optional_field("args", &KernelEvents::args),
		optional_field("capture_buffers", &KernelEvents::capture_buffers),
	};
	bool operator==(const KernelEvents &) const = default;
};
struct KernelEnableEventReply : KernelEventsReply {
	static constexpr Tag tag = reply_to(cmd::kKernelEnableEvent);
};
struct KernelEnableEvent : KernelEvents {
	static constexpr Tag tag = command(cmd::kKernelEnableEvent);
	using Reply = KernelEnableEventReply;
};
struct KernelDisableEventReply : KernelEventsReply {
	static constexpr Tag tag = reply_to(cmd::kKernelDisableEvent);
};
struct KernelDisableEvent : KernelEvents {
	static constexpr Tag tag = command(cmd::kKernelDisableEvent);
	using Reply = KernelDisableEventReply;
};

struct KernelEnableChannelReply {
	static constexpr Tag tag = reply_to(cmd::kKernelEnableChannel);
	std::string session;
	std::string channel;
	uint64_t buffer_bytes = 0; // per CPU; 0: the kernel's default
	bool overwrite = false;
	static constexpr auto kFields = std::tuple{
		field("session", &KernelEnableChannelReply::session),
		field("channel", &KernelEnableChannelReply::channel),
		field("buffer_bytes", &KernelEnableChannelReply::buffer_bytes),
		field("overwrite", &KernelEnableChannelReply::overwrite),
	};
	bool operator==(const KernelEnableChannelReply &) const = default;
};
struct KernelEnableChannel {
	static constexpr Tag tag = command(cmd::kKernelEnableChannel);
	using Reply = KernelEnableChannelReply;
	std::string session;
	std::string channel;
	std::optional<uint64_t> subbuf_size, num_subbuf; // both or neither
	bool overwrite = false;
	std::optional<uint64_t> tracefile_size, tracefile_count; // as EnableChannel's
	// --monitor-timer: how often the instance's buffer usage is sampled for
	// the triggers (µs; 0: never; missing: kDefaultMonitorTimerUs).
	std::optional<uint64_t> monitor_timer_us;
	static constexpr auto kFields = std::tuple{
		field("session", &KernelEnableChannel::session),
		field("channel", &KernelEnableChannel::channel),
		optional_field("subbuf_size", &KernelEnableChannel::subbuf_size),
		optional_field("num_subbuf", &KernelEnableChannel::num_subbuf),
		field("overwrite", &KernelEnableChannel::overwrite),
		optional_field("tracefile_size", &KernelEnableChannel::tracefile_size),
		optional_field("tracefile_count", &KernelEnableChannel::tracefile_count),
		optional_field("monitor_timer_us", &KernelEnableChannel::monitor_timer_us),
	};
	bool operator==(const KernelEnableChannel &) const = default;
};

// track -k and untrack -k: the processes whose kernel events are recorded.
struct KernelTrackingReply {
	std::string session;
	std::vector<int32_t> pids; // tracked now; empty: every process
	bool follow_children = true;
	static constexpr auto kFields =
		std::tuple{field("session", &KernelTrackingReply::session), field("pids", &KernelTrackingReply::pids),
	                   field("follow_children", &KernelTrackingReply::follow_children)};
	bool operator==(const KernelTrackingReply &) const = default;
};
struct KernelTracking {
	std::string session;
	std::vector<uint64_t> pids;
	std::optional<bool> follow_children; // track only
	static constexpr auto kFields =
		std::tuple{field("session", &KernelTracking::session), field("pids", &KernelTracking::pids),
	                   optional_field("follow_children", &KernelTracking::follow_children)};
	bool operator==(const KernelTracking &) const = default;
};
struct KernelTrackReply : KernelTrackingReply {
	static constexpr Tag tag = reply_to(cmd::kKernelTrack);
};
struct KernelTrack : KernelTracking {
	static constexpr Tag tag = command(cmd::kKernelTrack);
	using Reply = KernelTrackReply;
};
struct KernelUntrackReply : KernelTrackingReply {
	static constexpr Tag tag = reply_to(cmd::kKernelUntrack);
};
struct KernelUntrack : KernelTracking {
	static constexpr Tag tag = command(cmd::kKernelUntrack);
	using Reply = KernelUntrackReply;
};

struct KernelListReply {
	static constexpr Tag tag = reply_to(cmd::kKernelList);
	std::vector<std::string> tracepoints; // SYSTEM:NAME, but system calls
	std::vector<std::string> syscalls;
	static constexpr auto kFields = std::tuple{field("tracepoints", &KernelListReply::tracepoints),
	                                           field("syscalls", &KernelListReply::syscalls)};
	bool operator==(const KernelListReply &) const = default;
};
struct KernelList {
	static constexpr Tag tag = command(cmd::kKernelList);
	using Reply = KernelListReply;
	static constexpr auto kFields = std::tuple{};
	bool operator==(const KernelList &) const = default;
};

// track and untrack, either domain: changes to the sets of DomainTracking,
// applied together or not at all, and at once to a started session's
// programs (user space) or kernel trace.
//   track   values: added to the set (a set of every value becomes just them)
//           all:    the set includes every value again
//   untrack values: removed from the set (each must be in it)
//           all:    the set includes no value: no process is traced
struct TrackingChange {
	std::string attribute;        // pid, vpid, uid, vuid, gid, vgid
	bool all = false;             // then no values
	std::vector<uint64_t> values; // ids; the daemon checks their range
	static constexpr auto kFields =
		std::tuple{field("attribute", &TrackingChange::attribute), field("all", &TrackingChange::all),
	                   field("values", &TrackingChange::values)};
	bool operator==(const TrackingChange &) const = default;
};
struct TrackingReply {
	std::string session;
	DomainTracking tracking; // the domain's rules now
	static constexpr auto kFields =
		std::tuple{field("session", &TrackingReply::session), field("tracking", &TrackingReply::tracking)};
	bool operator==(const TrackingReply &) const = default;
};
struct Tracking {
	std::string session;
	std::string domain; // "user" or "kernel"
	std::vector<TrackingChange> changes;
	std::optional<bool> follow_children; // the kernel's pid, track only
	static constexpr auto kFields = std::tuple{
		field("session", &Tracking::session), field("domain", &Tracking::domain),
		field("changes", &Tracking::changes), optional_field("follow_children", &Tracking::follow_children)};
	bool operator==(const Tracking &) const = default;
};
struct TrackReply : TrackingReply {
	static constexpr Tag tag = reply_to(cmd::kTrack);
};
struct Track : Tracking {
	static constexpr Tag tag = command(cmd::kTrack);
	using Reply = TrackReply;
};
struct UntrackReply : TrackingReply {
	static constexpr Tag tag = reply_to(cmd::kUntrack);
};
struct Untrack : Tracking {
	static constexpr Tag tag = command(cmd::kUntrack);
	using Reply = UntrackReply;
};

// add-context -k: the kernel events' context (kernel/kernel_context.hpp names them).
struct KernelAddContextReply {
	static constexpr Tag tag = reply_to(cmd::kKernelAddContext);
	std::string session;
	std::vector<std::string> contexts; // the kernel channel's, now
	static constexpr auto kFields = std::tuple{field("session", &KernelAddContextReply::session),
	                                           field("contexts", &KernelAddContextReply::contexts)};
	bool operator==(const KernelAddContextReply &) const = default;
};
struct KernelAddContext {
	static constexpr Tag tag = command(cmd::kKernelAddContext);
	using Reply = KernelAddContextReply;
	std::string session;
	std::string channel; // "": the session's kernel channel
	std::vector<std::string> types;
	static constexpr auto kFields =
		std::tuple{field("session", &KernelAddContext::session), field("channel", &KernelAddContext::channel),
	                   field("types", &KernelAddContext::types)};
	bool operator==(const KernelAddContext &) const = default;
};

// save: what the sessions named are (session_file.hpp), for the command
// to write; load: a session made again from what a file says.
struct SaveReply {
	static constexpr Tag tag = reply_to(cmd::kSave);
	std::vector<SavedSession> sessions;
	static constexpr auto kFields = std::tuple{field("sessions", &SaveReply::sessions)};
	bool operator==(const SaveReply &) const = default;
};
struct Save {
	static constexpr Tag tag = command(cmd::kSave);
	using Reply = SaveReply;
	std::optional<bool> all; // --all (then no session): every session of the user
	std::optional<std::string> session;
	static constexpr auto kFields =
		std::tuple{optional_field("all", &Save::all), optional_field("session", &Save::session)};
	bool operator==(const Save &) const = default;
};
struct LoadReply {
	static constexpr Tag tag = reply_to(cmd::kLoad);
	std::string session;
	std::string output; // where its traces go ("": the relay only)
	bool started = false;
	static constexpr auto kFields =
		std::tuple{field("session", &LoadReply::session), field("output", &LoadReply::output),
	                   field("started", &LoadReply::started)};
	bool operator==(const LoadReply &) const = default;
};
struct Load {
	static constexpr Tag tag = command(cmd::kLoad);
	using Reply = LoadReply;
	SavedSession session;
	std::string file;          // where it was read, for the errors
	std::optional<bool> start; // started even if it was not when saved
	static constexpr auto kFields = std::tuple{field("session", &Load::session), field("file", &Load::file),
	                                           optional_field("start", &Load::start)};
	bool operator==(const Load &) const = default;
};

// snapshot add-output, del-output, list-output: where `snapshot record`
// writes (SavedSnapshotOutput: a name, a directory, a maximum size); each
// reply lists the outputs now, the first one's id 1.
struct SnapshotOutputsReply {
	std::string session;
	std::vector<SavedSnapshotOutput> outputs;
	static constexpr auto kFields = std::tuple{field("session", &SnapshotOutputsReply::session),
	                                           field("outputs", &SnapshotOutputsReply::outputs)};
	bool operator==(const SnapshotOutputsReply &) const = default;
};
struct SnapshotAddOutputReply : SnapshotOutputsReply {
	static constexpr Tag tag = reply_to(cmd::kSnapshotAddOutput);
};
struct SnapshotAddOutput {
	static constexpr Tag tag = command(cmd::kSnapshotAddOutput);
	using Reply = SnapshotAddOutputReply;
	std::string session;
	SavedSnapshotOutput output; // a name "": snapshot-N
	static constexpr auto kFields =
		std::tuple{field("session", &SnapshotAddOutput::session), field("output", &SnapshotAddOutput::output)};
	bool operator==(const SnapshotAddOutput &) const = default;
};
struct SnapshotDelOutputReply : SnapshotOutputsReply {
	static constexpr Tag tag = reply_to(cmd::kSnapshotDelOutput);
};
struct SnapshotDelOutput {
	static constexpr Tag tag = command(cmd::kSnapshotDelOutput);
	using Reply = SnapshotDelOutputReply;
	std::string session;
	std::string output; // its id or its name
	static constexpr auto kFields =
		std::tuple{field("session", &SnapshotDelOutput::session), field("output", &SnapshotDelOutput::output)};
	bool operator==(const SnapshotDelOutput &) const = default;
};
struct SnapshotListOutputReply : SnapshotOutputsReply {
	static constexpr Tag tag = reply_to(cmd::kSnapshotListOutput);
};
struct SnapshotListOutput : SessionRequest {
	static constexpr Tag tag = command(cmd::kSnapshotListOutput);
	using Reply = SnapshotListOutputReply;
};

// disable-channel: the channel's events are no longer recorded (while the
// session traces too) until `enable-channel` of its name enables it again.
// `kernel`: the kernel channel (its events stop: tracing off in its instance).
struct DisableChannelReply {
	static constexpr Tag tag = reply_to(cmd::kDisableChannel);
	std::string session;
	std::string channel;
	static constexpr auto kFields = std::tuple{field("session", &DisableChannelReply::session),
	                                           field("channel", &DisableChannelReply::channel)};
	bool operator==(const DisableChannelReply &) const = default;
};
struct DisableChannel {
	static constexpr Tag tag = command(cmd::kDisableChannel);
	using Reply = DisableChannelReply;
	std::string session;
	std::string channel;
	bool kernel = false;
	static constexpr auto kFields =
		std::tuple{field("session", &DisableChannel::session), field("channel", &DisableChannel::channel),
	                   field("kernel", &DisableChannel::kernel)};
	bool operator==(const DisableChannel &) const = default;
};

// ---- Between the daemon and a traced program.

struct Hello {
	static constexpr Tag tag = program_message(msg::kHello);
	std::string procname;
	std::vector<nlohmann::json> events; // schemas
	// Its pid, uid and gid in its own namespaces (getpid(), getuid(),
	// getgid()), for `track -u --vpid/--vuid/--vgid`. The daemon believes
	// them only of a program in other namespaces than its own; missing: the
	// values SO_PEERCRED gives.
	std::optional<uint32_t> vpid, vuid, vgid;
	static constexpr auto kFields =
		std::tuple{field("procname", &Hello::procname), field("events", &Hello::events),
	                   optional_field("vpid", &Hello::vpid), optional_field("vuid", &Hello::vuid),
	                   optional_field("vgid", &Hello::vgid)};
	bool operator==(const Hello &) const = default;
};
// Events of a library loaded later; the daemon answers with Ids.
struct NewEvents {
	static constexpr Tag tag = program_message(msg::kNewEvents);
	uint64_t req = 0;
	std::vector<nlohmann::json> events; // schemas
	static constexpr auto kFields = std::tuple{field("req", &NewEvents::req), field("events", &NewEvents::events)};
	bool operator==(const NewEvents &) const = default;
};
// A request of the daemon's (StartSession, Update, StopSession) carried out.
struct Ack {
	static constexpr Tag tag = program_message(msg::kAck);
	uint64_t seq = 0;
	uint64_t session = 0;
	bool tracing = false; // it writes into the session's buffers
	std::vector<FilterRefusal> refused;
	static constexpr auto kFields = std::tuple{field("seq", &Ack::seq), field("session", &Ack::session),
	                                           field("tracing", &Ack::tracing), field("refused", &Ack::refused)};
	bool operator==(const Ack &) const = default;
};

struct Ready {
	static constexpr Tag tag = program_message(msg::kReady);
	static constexpr auto kFields = std::tuple{};
	bool operator==(const Ready &) const = default;
};

// What a program records in a channel of a session: the ids of its events
// enabled there (schema key -> id), their filters (schema key -> hex
// bytecode, control::to_hex); with StartSession, its buffer.
struct ContextFlags {
	bool vpid = false, vtid = false, procname = false;
	std::vector<std::string> more; // the other contexts, by name (event/context_table.hpp)
	static constexpr auto kFields =
		std::tuple{field("vpid", &ContextFlags::vpid), field("vtid", &ContextFlags::vtid),
	                   field("procname", &ContextFlags::procname), field("more", &ContextFlags::more)};
	bool operator==(const ContextFlags &) const = default;
};
struct ChannelRules {
	uint64_t index = 0;
	std::map<std::string, uint32_t> ids;
	std::map<std::string, std::vector<std::string>> filters;
	std::optional<bool> buffer;          // false: this channel does not trace the program (no fd)
	std::optional<ContextFlags> context; // with a buffer
	std::optional<std::string> clock;    // likewise: what timestamps count (missing: ns)
	// Likewise: how long an emitter waits for space, in microseconds (-1:
	// without limit; missing: never).
	std::optional<int64_t> blocking_timeout_us;
	static constexpr auto kFields = std::tuple{
		field("index", &ChannelRules::index),
		field("ids", &ChannelRules::ids),
		field("filters", &ChannelRules::filters),
		optional_field("buffer", &ChannelRules::buffer),
		optional_field("context", &ChannelRules::context),
		optional_field("clock", &ChannelRules::clock),
		optional_field("blocking_timeout_us", &ChannelRules::blocking_timeout_us),
	};
	bool operator==(const ChannelRules &) const = default;
};
struct StartSession {
	static constexpr Tag tag = program_message(msg::kStartSession);
	uint64_t session = 0;
	uint64_t seq = 0; // its Ack's
	std::string name;
	std::vector<ChannelRules> channels;
	static constexpr auto kFields =
		std::tuple{field("session", &StartSession::session), field("seq", &StartSession::seq),
	                   field("name", &StartSession::name), field("channels", &StartSession::channels)};
	bool operator==(const StartSession &) const = default;
};
struct Update {
	static constexpr Tag tag = program_message(msg::kUpdate);
	uint64_t session = 0;
	uint64_t seq = 0;
	std::vector<ChannelRules> channels;
	static constexpr auto kFields = std::tuple{field("session", &Update::session), field("seq", &Update::seq),
	                                           field("channels", &Update::channels)};
	bool operator==(const Update &) const = default;
};
struct SessionRules {
	uint64_t session = 0;
	std::vector<ChannelRules> channels;
	static constexpr auto kFields =
		std::tuple{field("session", &SessionRules::session), field("channels", &SessionRules::channels)};
	bool operator==(const SessionRules &) const = default;
};
struct Ids {
	static constexpr Tag tag = program_message(msg::kIds);
	uint64_t req = 0; // the NewEvents answered
	std::vector<SessionRules> sessions;
	static constexpr auto kFields = std::tuple{field("req", &Ids::req), field("sessions", &Ids::sessions)};
	bool operator==(const Ids &) const = default;
};
struct StopSession {
	static constexpr Tag tag = program_message(msg::kStopSession);
	uint64_t session = 0;
	uint64_t seq = 0;
	static constexpr auto kFields =
		std::tuple{field("session", &StopSession::session), field("seq", &StopSession::seq)};
	bool operator==(const StopSession &) const = default;
};

// ---- Trace chunks: rotation and clear.

// rotate: the current chunk archived as OUTPUT/archives/BEGIN-END-ID.
struct RotateReply {
	static constexpr Tag tag = reply_to(cmd::kRotate);
	std::string session;
	std::optional<std::string> archive; // its directory; none with --no-wait
	static constexpr auto kFields =
		std::tuple{field("session", &RotateReply::session), optional_field("archive", &RotateReply::archive)};
	bool operator==(const RotateReply &) const = default;
};
struct Rotate {
	static constexpr Tag tag = command(cmd::kRotate);
	using Reply = RotateReply;
	std::string session;
	bool no_wait = false; // reply once the rotation is under way
	static constexpr auto kFields =
		std::tuple{field("session", &Rotate::session), field("no_wait", &Rotate::no_wait)};
	bool operator==(const Rotate &) const = default;
};
// enable-rotation and disable-rotation: the schedule as it is now.
struct RotationScheduleReply {
	std::string session;
	RotationStatus rotation;
	static constexpr auto kFields = std::tuple{field("session", &RotationScheduleReply::session),
	                                           field("rotation", &RotationScheduleReply::rotation)};
	bool operator==(const RotationScheduleReply &) const = default;
};
struct EnableRotationReply : RotationScheduleReply {
	static constexpr Tag tag = reply_to(cmd::kEnableRotation);
};
struct EnableRotation {
	static constexpr Tag tag = command(cmd::kEnableRotation);
	using Reply = EnableRotationReply;
	std::string session;
	std::optional<uint64_t> timer_ns;
	std::optional<uint64_t> size_bytes;
	static constexpr auto kFields = std::tuple{field("session", &EnableRotation::session),
	                                           optional_field("timer_ns", &EnableRotation::timer_ns),
	                                           optional_field("size_bytes", &EnableRotation::size_bytes)};
	bool operator==(const EnableRotation &) const = default;
};
struct DisableRotationReply : RotationScheduleReply {
	static constexpr Tag tag = reply_to(cmd::kDisableRotation);
};
struct DisableRotation {
	static constexpr Tag tag = command(cmd::kDisableRotation);
	using Reply = DisableRotationReply;
	std::string session;
	bool timer = false; // neither: both
	bool size = false;
	static constexpr auto kFields =
		std::tuple{field("session", &DisableRotation::session), field("timer", &DisableRotation::timer),
	                   field("size", &DisableRotation::size)};
	bool operator==(const DisableRotation &) const = default;
};
// clear: what the session recorded so far dropped, on disk and in buffers.
struct ClearReply {
	static constexpr Tag tag = reply_to(cmd::kClear);
	std::string session;
	uint64_t files_removed = 0;
	static constexpr auto kFields =
		std::tuple{field("session", &ClearReply::session), field("files_removed", &ClearReply::files_removed)};
	bool operator==(const ClearReply &) const = default;
};
struct Clear : SessionRequest {
	static constexpr Tag tag = command(cmd::kClear);
	using Reply = ClearReply;
};

// Every message, for the tests and the fuzzer.
using AllMessages =
	std::tuple<ErrorReply, Create, CreateReply, Destroy, DestroyReply, EnableChannel, EnableChannelReply,
                   EnableEvent, EnableEventReply, DisableEvent, DisableEventReply, AddContext, AddContextReply, Start,
                   StartReply, Stop, StopReply, Status, StatusReply, List, ListReply, ListEvents, ListEventsReply,
                   SnapshotRecord, SnapshotRecordReply, KernelEnableEvent, KernelEnableEventReply, KernelDisableEvent,
                   KernelDisableEventReply, KernelEnableChannel, KernelEnableChannelReply, KernelTrack,
                   KernelTrackReply, KernelUntrack, KernelUntrackReply, KernelList, KernelListReply, Track, TrackReply,
                   Untrack, UntrackReply, KernelAddContext, KernelAddContextReply, Hello, NewEvents, Ack, Ready,
                   StartSession, Update, Ids, StopSession, Rotate, RotateReply, EnableRotation, EnableRotationReply,
                   DisableRotation, DisableRotationReply, Clear, ClearReply, Save, SaveReply, Load, LoadReply,
                   SnapshotAddOutput, SnapshotAddOutputReply, SnapshotDelOutput, SnapshotDelOutputReply,
                   SnapshotListOutput, SnapshotListOutputReply, DisableChannel, DisableChannelReply>;

} // namespace tracery::control
