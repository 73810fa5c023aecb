// traceryd under systemd, without libsystemd: the listening socket of
// socket activation (traceryd.socket: LISTEN_PID, LISTEN_FDS, the socket at
// descriptor 3), readiness and stopping told to the service manager
// (Type=notify: one datagram to NOTIFY_SOCKET), and whether stderr is the
// journal (JOURNAL_STREAM), where log lines carry their priority as "<N>".
// The protocols are systemd's documented ones: sd_listen_fds(3),
// sd_notify(3), systemd.exec(5).
#pragma once

#include "base/fd.hpp"

#include <string>

namespace tracery::daemon {

// The listening UNIX stream socket systemd passed to this process, made
// close-on-exec, and the LISTEN_* variables removed (children do not see
// them); an empty Fd when none was passed. std::runtime_error when systemd
// passed something else (several descriptors, not a listening UNIX stream
// socket): the unit is wrong.
base::Fd socket_from_systemd();

// Sends STATE ("READY=1", "STOPPING=1", ...) to NOTIFY_SOCKET when it is
// set (a path, or '@' for the abstract namespace); false when it is set and
// the datagram could not be sent.
bool notify_systemd(const std::string &state);

// True when stderr is the stream JOURNAL_STREAM names (device:inode).
bool stderr_is_journal();

} // namespace tracery::daemon
