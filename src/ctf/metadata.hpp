// ctf/metadata.hpp — TSDL (CTF 1.8 plain-text metadata) generation.
//
// A trace's metadata file is: preamble() once, then stream_class() once per
// stream class (channel), then event_class() once per (stream class, event)
// pair, appended at any time later (events appear while a program runs).
// Every text returned is a whole TSDL block that can be appended on its own.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "base/tick_scale.hpp"
#include "ctf/uuid.hpp"
#include "event/context.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::ctf {

// Name of the clock that timestamps are mapped to.
inline constexpr const char *kClockName = "monotonic";

using EnvValue = std::variant<int64_t, std::string>;

struct EnvEntry {
	std::string key; // a TSDL identifier, not a keyword (else invalid_argument)
	EnvValue value;
};

// The env entries that say what made the trace and which domain it is of
// (what readers such as Trace Compass and lttng-analyses look at): written
// right after env.hostname. A user trace: domain "ust", tracer_name
// "tracery", tracer_major/minor/patch of this build (tracery_identity()); a
// kernel trace: the LTTng kernel identity (kernel/kernel_events.hpp).
std::vector<EnvEntry> tracery_identity();

// The processes a session tracked (`track --pid`, `--vpid`), one env entry
// per attribute: tracery_tracked_pid = "1234,5678" (in increasing order;
// readers such as babeltrace2 keep it as any other env entry). Written with
// the rest of the env when the trace begins.
inline constexpr const char *kTrackedEnvPrefix = "tracery_tracked_";
EnvEntry tracked_processes_entry(const std::string &attribute, const std::set<uint64_t> &values);

struct TraceInfo {
	Uuid uuid;       // trace UUID, also in every packet header
	Uuid clock_uuid; // identity of the clock source (e.g. boot id); nil -> uuid
	// env.hostname; empty -> gethostname().
	std::string hostname;
	// What the timestamps count: ticks per second and the CLOCK_REALTIME time
	// of tick 0, which readers add to show wall-clock time.
	base::TickScale clock_scale;
	uint64_t clock_precision = 1; // in ticks
	// The identity entries, then extra env entries (procname, vpid, ...),
	// each list written in order. Keys must be TSDL identifiers, differ from
	// each other (across both lists) and from hostname.
	std::vector<EnvEntry> identity = tracery_identity();
	std::vector<EnvEntry> env;
};

class MetadataWriter {
public:
	// Throws std::invalid_argument for a bad or repeated env key.
	explicit MetadataWriter(TraceInfo info);

	const TraceInfo &info() const noexcept { return info_; }

	// "/* CTF 1.8 */", type aliases, trace (with packet.header), env, clock,
	// the packet context and event header structs shared by stream classes.
	std::string preamble() const;

	// stream { id; event.header; packet.context; event.context }.
	static std::string stream_class(uint32_t stream_id, const event::ContextOptions &context);

	// event { name = "provider:name"; id; stream_id; fields := ... }.
	// Throws std::invalid_argument if event_desc_error(desc).
	static std::string event_class(uint32_t stream_id, uint32_t event_id, const tracery_event_desc &desc);

private:
	TraceInfo info_;
};

} // namespace tracery::ctf
