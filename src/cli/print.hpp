// How the tracery command shows the daemon's replies: sessions, a session's
// status, lost-event counts, the events of running programs.
#pragma once

#include "control/messages.hpp"

#include <optional>
#include <vector>

namespace tracery::cli {

void print_sessions(const control::ListReply &reply);
void print_status(const control::StatusReply &status);
void print_lost(const std::vector<control::LostCount> &lost);
// What refused writes (a full disk...) cost a channel's trace, if anything.
void print_write_loss(const std::optional<control::WriteLoss> &loss, const char *indent);
// Buffers a program wrote over, one warning line each.
void print_quarantined(const std::vector<control::Quarantined> &quarantined, const char *indent);
// A session's relay: where, connected or not, what was sent, confirmed, not
// sent; nothing without one.
void print_relay(const std::optional<control::RelayStatus> &relay, const char *indent);
void print_program_events(const control::ListEventsReply &reply);

} // namespace tracery::cli
