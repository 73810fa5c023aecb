// libtracery's link to the session daemon (when TRACERY_OUTPUT is not set).
//
// A control thread finds traceryd through its socket (client_dirs()), at
// start or whenever it appears later (inotify on the run directories: no
// cost on the tracepoint path), registers the program (pid, procname, event
// schemas), receives the buffers and event ids of the sessions that want its
// events and attaches the probes; on EOF (the daemon died or restarted) it
// detaches everything and goes back to waiting. Events that appear later
// (dlopen) are announced synchronously, so they are traced as soon as their
// library's constructor has returned.
#pragma once

namespace tracery::ust {

// From libtracery's constructor: starts the control thread and, if a daemon
// answers, waits until registration is complete (at most
// TRACERY_REGISTER_TIMEOUT_MS, default 3000). With no daemon it returns at once.
void daemon_client_start();
// At exit: stops the control thread; the buffers stay attached until the
// process is gone (the daemon drains them when the connection closes).
void daemon_client_stop();
// Fork handlers; the child registers again as a program of its own.
void daemon_client_before_fork();
void daemon_client_after_fork_parent();
void daemon_client_after_fork_child();

} // namespace tracery::ust
