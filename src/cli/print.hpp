// How the tracery command shows the daemon's replies: sessions, a session's
// status, lost-event counts, the events of running programs.
#pragma once

#include <nlohmann/json.hpp>

namespace tracery::cli {

void print_sessions(const nlohmann::json &reply);
void print_status(const nlohmann::json &status);
void print_lost(const nlohmann::json &lost); // [{"channel", "lost"}]
// [{"buffer", "fault"[, "channel"]}]: buffers a program wrote over, one warning line each.
void print_quarantined(const nlohmann::json &quarantined, const char *indent);
// A session's relay (TraceSession::relay_status): where, connected or not,
// what was sent, confirmed, not sent; nothing for null.
void print_relay(const nlohmann::json &relay, const char *indent);
void print_program_events(const nlohmann::json &reply);

} // namespace tracery::cli
