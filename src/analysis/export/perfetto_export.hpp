// analysis/export/perfetto_export.hpp — `tracery export --format perfetto`: the
// events of traces as a Perfetto trace (protobuf, analysis/proto/
// perfetto_trace.proto), which ui.perfetto.dev and Perfetto's trace
// processor open: track descriptors for processes, threads and counters,
// track events (instants with the fields as debug annotations, slices for
// system calls and spans, counter values), the scheduler's events as ftrace
// event bundles per CPU, and a clock snapshot first. docs/export.md says
// what maps to what.
//
// One packet sequence (id 1): its first packet clears the incremental state
// and carries the clock snapshot and the default clock; event and field
// names are interned on the packet that first uses them. Written as it goes:
// memory does not grow with the trace.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/export/export_model.hpp"

namespace tracery::analysis {

// The trusted packet sequence id of every packet.
inline constexpr uint32_t kPerfettoSequence = 1;

// Writes the Perfetto trace of walk's events to fd (what: its name, for
// errors). Throws as export_events(), and std::runtime_error when writing
// fails.
ExportCounts export_perfetto(EventWalk &walk, const ExportOptions &options, int fd, const std::string &what);

// The sink itself, for the tests: packets appended to bytes, written out
// whenever they pass flush_at (never, when fd < 0).
class PerfettoSink final : public ExportSink {
public:
	PerfettoSink(int fd, std::string what, size_t flush_at = size_t{1} << 20);
	~PerfettoSink() override;
	void start(const ExportClock &clock, const NameTable &names) override;
	void track(const TrackInfo &track) override;
	void event(const ExportEvent &event) override;
	void sched_switch(const SchedSwitchEvent &event) override;
	void sched_wake(const SchedWakeEvent &event) override;
	void finish() override;
	// What is not written yet (everything, when fd < 0).
	std::string_view pending() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace tracery::analysis
