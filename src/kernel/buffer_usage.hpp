// kernel/buffer_usage.hpp — how full a tracefs instance's per-CPU ring
// buffers are, for the triggers on a kernel channel's buffer usage.
//
// Each CPU's per_cpu/cpuN/stats has `bytes: N`, the bytes of events the
// kernel wrote in that CPU's buffer that no reader has consumed yet (event
// headers and payloads; page headers not counted), and the instance's
// buffer_size_kb the size of each CPU's buffer. A session's readers drain
// the buffer within milliseconds, so a high usage means the readers fall
// behind; in a snapshot session (nothing read while tracing) it is how much
// of the flight recorder is filled.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::kernel {

struct BufferUsage {
	std::vector<uint64_t> bytes; // unconsumed, per CPU (in per_cpu/ order)
	uint64_t buffer_bytes = 0;   // the size of one CPU's buffer
};

// The value of `name: N` in a stats file's text; 0 with *found false if
// there is no such line or its value is not a number.
uint64_t stats_value(std::string_view stats, std::string_view name, bool *found);

// Reads ROOT/instances/NAME (its path) per_cpu/cpu*/stats and
// buffer_size_kb. Throws TracefsError, std::runtime_error (a stats file
// without `bytes:`).
BufferUsage read_buffer_usage(const std::string &instance_path);

} // namespace tracery::kernel
