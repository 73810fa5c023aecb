// Daemonless mode settings, read from TRACERY_* environment variables.
#pragma once

#include "base/sizes.hpp"
#include "event/context.hpp"
#include "ringbuf/ring_buffer.hpp"
#include "ust/local/filter_rules.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tracery::ust {

struct DaemonlessConfig {
	std::string output_dir;                          // TRACERY_OUTPUT
	std::vector<std::string> patterns{"*"};          // TRACERY_EVENTS, comma-separated
	ringbuf::Mode mode = ringbuf::Mode::discard;     // TRACERY_MODE
	uint32_t subbuf_size = base::kDefaultSubbufSize; // TRACERY_SUBBUF_SIZE (k/M/G suffixes)
	uint32_t num_subbuf = base::kDefaultNumSubbuf;   // TRACERY_NUM_SUBBUF
	event::ContextOptions context{};                 // TRACERY_CONTEXT=vpid,vtid,procname
	std::vector<FilterRule> filters;                 // TRACERY_FILTER (see filter_rules.hpp)
};

// Reads the environment through getenv_fn. Returns nothing when
// TRACERY_OUTPUT is unset; on a bad value, sets *error to one line naming
// the variable, the value and the fix, and returns nothing.
std::optional<DaemonlessConfig> read_daemonless_config(const char *(*getenv_fn)(const char *), std::string *error);

} // namespace tracery::ust
