// The verbs of a session's trace chunks: `rotate`, `enable-rotation`,
// `disable-rotation` and `clear`, with LTTng's options and meanings
// (lttng-rotate(1), lttng-enable-rotation(1), lttng-disable-rotation(1),
// lttng-clear(1)); the layout of chunks: src/daemon/session_chunks.hpp.
#pragma once

#include "control/messages.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tracery::cli {

// Adds the four verbs to `app`; the one given sets `run`.
void add_rotation_verbs(CLI::App &app, std::function<int()> &run);

// --timer's PERIOD: a number with us, ms, s, m or h (a bare number is
// microseconds, as LTTng's PERIODUS), in ns; nullopt if it is not one.
std::optional<uint64_t> parse_rotation_period(std::string_view text);

// What status prints of a session's chunks, one line each.
void print_rotation(const control::RotationStatus &r, const char *indent);

} // namespace tracery::cli
