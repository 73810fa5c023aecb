// control/session_file.hpp — a session saved to a file (`tracery save`) and
// loaded again (`tracery load`, and the daemon's auto/ sessions at its
// start): everything the session is, as a struct whose fields are named once
// (read and written by codec.hpp, strictly: a field unknown, missing or of
// the wrong JSON type is an error naming its JSON path), in the JSON text of
// docs/session-files.md.
//
// Versions (kSessionFileFormat, the file's "format"): a change of what a file
// holds is a new format number, with the fields it adds optional (missing in
// the files of earlier formats). A reader reads every format up to its own
// and refuses a later one, naming both (it cannot know what the later
// fields mean), before it reads anything else of the file. Format 2 adds a
// channel's timers and on/off state, the rotation schedule and the triggers
// that name the session; format 3 the kernel channel's monitor timer.
#pragma once

#include "control/codec.hpp"
#include "control/trigger_messages.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tracery::control {

inline constexpr uint32_t kSessionFileFormat = 3;
// The largest session file read (a request carries it whole; kDaemonLimits).
inline constexpr size_t kMaxSessionFileBytes = 512 * 1024;
inline constexpr char kSessionFileSuffix[] = ".json";

// enable-event -u PATTERN [--filter EXPR] [--exclude NAMES].
struct SavedEventRule {
	std::string pattern;
	std::optional<std::string> filter;
	std::optional<std::vector<std::string>> exclude;
	static constexpr auto kFields = std::tuple{field("pattern", &SavedEventRule::pattern),
	                                           optional_field("filter", &SavedEventRule::filter),
	                                           optional_field("exclude", &SavedEventRule::exclude)};
	bool operator==(const SavedEventRule &) const = default;
};

// A user space channel: enable-channel -u, its events and contexts.
struct SavedChannel {
	std::string name;
	uint64_t subbuf_size = 0, num_subbuf = 0;
	bool overwrite = false;
	bool per_pid = false;
	std::vector<std::string> context;                        // add-context -u
	std::vector<SavedEventRule> events;                      // enabled
	std::vector<std::string> disabled;                       // disable-event -u of patterns no rule enables
	std::optional<int64_t> blocking_timeout_us;              // --blocking-timeout (-1: inf); missing: 0
	std::optional<uint64_t> tracefile_size, tracefile_count; // --tracefile-size/-count; missing: 0
	// Format 2: --switch-timer (missing: none) and --monitor-timer (missing:
	// the default, kDefaultMonitorTimerUs; 0 none) in microseconds;
	// `enabled` false after disable-channel (missing: true).
	std::optional<uint64_t> switch_timer_us, monitor_timer_us;
	std::optional<bool> enabled;
	static constexpr auto kFields = std::tuple{
		field("name", &SavedChannel::name),
		field("subbuf_size", &SavedChannel::subbuf_size),
		field("num_subbuf", &SavedChannel::num_subbuf),
		field("overwrite", &SavedChannel::overwrite),
		field("per_pid", &SavedChannel::per_pid),
		field("context", &SavedChannel::context),
		field("events", &SavedChannel::events),
		field("disabled", &SavedChannel::disabled),
		optional_field("blocking_timeout_us", &SavedChannel::blocking_timeout_us),
		optional_field("tracefile_size", &SavedChannel::tracefile_size),
		optional_field("tracefile_count", &SavedChannel::tracefile_count),
		optional_field("switch_timer_us", &SavedChannel::switch_timer_us),
		optional_field("monitor_timer_us", &SavedChannel::monitor_timer_us),
		optional_field("enabled", &SavedChannel::enabled),
	};
	bool operator==(const SavedChannel &) const = default;
};

// The rules of track and untrack in one domain: ProcessAttrRule of
// messages.hpp, an inclusion set per attribute.
struct SavedTracking {
	std::string attribute;
	bool all = true;
	std::vector<uint64_t> values;
	static constexpr auto kFields =
		std::tuple{field("attribute", &SavedTracking::attribute), field("all", &SavedTracking::all),
	                   field("values", &SavedTracking::values)};
	bool operator==(const SavedTracking &) const = default;
};

struct SavedUserDomain {
	std::vector<SavedChannel> channels;
	std::vector<SavedTracking> tracking; // vpid, vuid, vgid
	static constexpr auto kFields = std::tuple{field("channels", &SavedUserDomain::channels),
	                                           field("tracking", &SavedUserDomain::tracking)};
	bool operator==(const SavedUserDomain &) const = default;
};

// A kernel tracepoint or system call ("*": every one) enabled, with its filter.
struct SavedKernelRule {
	std::string name;
	std::optional<std::string> filter;
	static constexpr auto kFields =
		std::tuple{field("name", &SavedKernelRule::name), optional_field("filter", &SavedKernelRule::filter)};
	bool operator==(const SavedKernelRule &) const = default;
};
// enable-event -k --userspace-probe=SPEC [--args ARGS] NAME.
struct SavedProbe {
	std::string name;
	std::string spec;
	std::optional<std::string> args;
	std::optional<std::string> filter;
	static constexpr auto kFields =
		std::tuple{field("name", &SavedProbe::name), field("spec", &SavedProbe::spec),
	                   optional_field("args", &SavedProbe::args), optional_field("filter", &SavedProbe::filter)};
	bool operator==(const SavedProbe &) const = default;
};
struct SavedKernelDomain {
	std::string channel;
	uint64_t subbuf_size = 0, num_subbuf = 0; // 0: the kernel's default
	bool overwrite = false;
	std::vector<std::string> context;
	std::vector<SavedKernelRule> tracepoints;
	std::vector<SavedKernelRule> syscalls;
	std::vector<SavedProbe> probes;
	uint64_t capture_buffers = 0; // 0: none
	std::vector<SavedTracking> tracking;
	bool follow_children = true;
	std::optional<uint64_t> tracefile_size, tracefile_count; // --tracefile-size/-count; missing: 0
	std::optional<bool> enabled;                             // format 2: false after disable-channel -k
	// Format 3: --monitor-timer in microseconds (missing: the default,
	// kDefaultMonitorTimerUs; 0: none).
	std::optional<uint64_t> monitor_timer_us;
	static constexpr auto kFields = std::tuple{
		field("channel", &SavedKernelDomain::channel),
		field("subbuf_size", &SavedKernelDomain::subbuf_size),
		field("num_subbuf", &SavedKernelDomain::num_subbuf),
		field("overwrite", &SavedKernelDomain::overwrite),
		field("context", &SavedKernelDomain::context),
		field("tracepoints", &SavedKernelDomain::tracepoints),
		field("syscalls", &SavedKernelDomain::syscalls),
		field("probes", &SavedKernelDomain::probes),
		field("capture_buffers", &SavedKernelDomain::capture_buffers),
		field("tracking", &SavedKernelDomain::tracking),
		field("follow_children", &SavedKernelDomain::follow_children),
		optional_field("tracefile_size", &SavedKernelDomain::tracefile_size),
		optional_field("tracefile_count", &SavedKernelDomain::tracefile_count),
		optional_field("enabled", &SavedKernelDomain::enabled),
		optional_field("monitor_timer_us", &SavedKernelDomain::monitor_timer_us),
	};
	bool operator==(const SavedKernelDomain &) const = default;
};

// create --set-url (the key and the CAs are not saved: they stay in the
// user's files).
struct SavedRelay {
	std::string url; // net://HOST:PORT
	std::optional<uint64_t> live_period_ns;
	bool public_live = false;
	static constexpr auto kFields = std::tuple{field("url", &SavedRelay::url),
	                                           optional_field("live_period_ns", &SavedRelay::live_period_ns),
	                                           field("public_live", &SavedRelay::public_live)};
	bool operator==(const SavedRelay &) const = default;
};

// snapshot add-output: where `snapshot record` writes, NAME-N-DATE in a
// directory, and how much of the user space buffers (bytes, 0: all).
struct SavedSnapshotOutput {
	std::string name;
	std::string path;
	uint64_t max_size = 0;
	static constexpr auto kFields =
		std::tuple{field("name", &SavedSnapshotOutput::name), field("path", &SavedSnapshotOutput::path),
	                   field("max_size", &SavedSnapshotOutput::max_size)};
	bool operator==(const SavedSnapshotOutput &) const = default;
};

// Format 2: enable-rotation --timer (nanoseconds) and --size (bytes).
struct SavedRotation {
	std::optional<uint64_t> timer_ns;
	std::optional<uint64_t> size_bytes;
	static constexpr auto kFields = std::tuple{optional_field("timer_ns", &SavedRotation::timer_ns),
	                                           optional_field("size_bytes", &SavedRotation::size_bytes)};
	bool operator==(const SavedRotation &) const = default;
};

// Format 2: a trigger of the session's owner whose condition or an action
// names the session (add-trigger; trigger_messages.hpp).
struct SavedTrigger {
	std::string name;
	TriggerCondition condition;
	std::vector<TriggerAction> actions;
	static constexpr auto kFields =
		std::tuple{field("name", &SavedTrigger::name), field("condition", &SavedTrigger::condition),
	                   field("actions", &SavedTrigger::actions)};
	bool operator==(const SavedTrigger &) const = default;
};

// A whole session file.
struct SavedSession {
	uint32_t format = kSessionFileFormat;
	std::string name;
	bool snapshot = false;
	std::optional<std::string> output; // the trace directory (with a relay: its local copy)
	std::optional<SavedRelay> relay;
	bool started = false; // tracing when saved: `load` starts it
	SavedUserDomain user;
	std::optional<SavedKernelDomain> kernel;
	std::vector<SavedSnapshotOutput> snapshot_outputs;
	std::optional<SavedRotation> rotation;             // format 2
	std::optional<std::vector<SavedTrigger>> triggers; // format 2
	static constexpr auto kFields = std::tuple{
		field("format", &SavedSession::format),
		field("name", &SavedSession::name),
		field("snapshot", &SavedSession::snapshot),
		optional_field("output", &SavedSession::output),
		optional_field("relay", &SavedSession::relay),
		field("started", &SavedSession::started),
		field("user", &SavedSession::user),
		optional_field("kernel", &SavedSession::kernel),
		field("snapshot_outputs", &SavedSession::snapshot_outputs),
		optional_field("rotation", &SavedSession::rotation),
		optional_field("triggers", &SavedSession::triggers),
	};
	bool operator==(const SavedSession &) const = default;
};

// The text of a session file: JSON indented for people to read and edit.
std::string session_file_text(const SavedSession &session);
// A session file read from its text: throws DecodeError, one line naming the
// problem and its JSON path ("user.channels[1].subbuf_size"), for text that
// is not JSON, a format later than kSessionFileFormat, or a value that is
// not exactly its field. What the values mean is checked where the session
// is made (the daemon), which names the same paths.
SavedSession parse_session_file(const std::string &text);
// The same as JSON (a request carries it so).
nlohmann::json session_file_json(const SavedSession &session);
SavedSession session_from_json(const nlohmann::json &j);

// Where sessions are saved and loaded by default: TRACERY_SESSIONS_DIR if
// set, else /etc/tracery/sessions for root, else $HOME/.tracery/sessions.
// Its auto/ folder holds the sessions the daemon loads and starts at its start.
std::string default_sessions_dir();
inline constexpr char kSystemSessionsDir[] = "/etc/tracery/sessions";
inline constexpr char kAutoSessionsFolder[] = "auto";

} // namespace tracery::control
