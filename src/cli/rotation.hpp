// The verbs of a session's trace chunks: `rotate`, `enable-rotation`,
// `disable-rotation` and `clear`, with LTTng's options and meanings
// (lttng-rotate(1), lttng-enable-rotation(1), lttng-disable-rotation(1),
// lttng-clear(1)); the layout of chunks: src/daemon/session_chunks.hpp.
#pragma once

#include "control/messages.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tracery::cli {

// Their arguments (their options are declared in main.cpp).
struct RotationArgs {
	std::string session;                        // SESSION, or -s SESSION
	bool no_wait = false;                       // rotate --no-wait
	std::string timer, size;                    // enable-rotation --timer, --size
	bool timer_only = false, size_only = false; // disable-rotation --timer, --size
};

int verb_rotate(const RotationArgs &a);
int verb_enable_rotation(const RotationArgs &a);
int verb_disable_rotation(const RotationArgs &a);
int verb_clear(const RotationArgs &a);

// --timer's PERIOD: a number with us, ms, s, m or h (a bare number is
// microseconds, as LTTng's PERIODUS), in ns; nullopt if it is not one.
std::optional<uint64_t> parse_rotation_period(std::string_view text);

// What status prints of a session's chunks, one line each.
void print_rotation(const control::RotationStatus &r, const char *indent);

} // namespace tracery::cli
