// enable-channel --tracefile-size/--tracefile-count, user space and kernel
// alike: the options checked against the session and the channel, as the
// consumer's file sink takes them (consumer/file_sink.hpp).
#pragma once

#include "consumer/file_sink.hpp"
#include "daemon/session_identity.hpp"

#include <cstdint>
#include <optional>

namespace tracery::daemon {

// The limit the options give; none when neither is given. min_size: the
// largest packet the channel writes (its sub-buffer size), below which a
// file would hold a single packet. Throws CommandError naming the fix: a
// count without a size, a size below min_size, a snapshot session, a live
// session (its relay serves each stream from one file). A session sent to a
// relay has the relay keep the ring of files (control::relay::StreamFiles).
consumer::TracefileLimit tracefile_limit(const std::optional<uint64_t> &size, const std::optional<uint64_t> &count,
                                         uint64_t min_size, const SessionIdentity &session);

} // namespace tracery::daemon
