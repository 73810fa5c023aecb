// Daemonless mode settings, read from TRACERY_* environment variables.
#pragma once

#include "ctf/event_context.hpp"
#include "ringbuf/ring_buffer.hpp"
#include "runtime/filter_rules.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tracery::runtime {

struct DaemonlessConfig {
	std::string output_dir;                 // TRACERY_OUTPUT
	std::vector<std::string> patterns{"*"}; // TRACERY_EVENTS, comma-separated
	ringbuf::Mode mode = ringbuf::Mode::discard; // TRACERY_MODE
	uint32_t subbuf_size = 512 * 1024;      // TRACERY_SUBBUF_SIZE (k/M suffixes)
	uint32_t num_subbuf = 4;                // TRACERY_NUM_SUBBUF
	ctf::ContextOptions context{};          // TRACERY_CONTEXT=vpid,vtid,procname
	std::vector<FilterRule> filters;        // TRACERY_FILTER (see filter_rules.hpp)
};

// Reads the environment through getenv_fn. Returns nothing when
// TRACERY_OUTPUT is unset; on a bad value, sets *error to one line naming
// the variable, the value and the fix, and returns nothing.
std::optional<DaemonlessConfig> read_daemonless_config(const char *(*getenv_fn)(const char *),
                                                       std::string *error);

} // namespace tracery::runtime
