// ust/lib/library.cpp — libtracery's entry points: its constructor, which
// chooses how this process is traced, its destructor, and the fork handlers.
//
// Run with TRACERY_OUTPUT=DIR, the program records its events into a CTF trace
// in DIR by itself (daemonless mode, ust/local/), from this constructor
// (before the program's own events register) to the destructor at exit.
// Without it, the program is traced on demand through the session daemon
// (ust/daemon_link/). This is the one place that knows both.
#include "ust/daemon_link/daemon_client.hpp"
#include "ust/local/daemonless_config.hpp"
#include "ust/local/local_tracer.hpp"
#include "ust/rcu.hpp"
#include "ust/registry.hpp"
#include "ust/runtime_event.hpp"
#include "ust/statedump.hpp"
#include "ust/thread_context.hpp"

#include "base/diagnostics.hpp"
#include "clock/trace_clock.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tracery::ust {
namespace {

LocalTracer *tracer = nullptr;

void before_fork()
{
	runtime_events_lock_for_fork(); // first: a definition holds it while it takes the others
	daemon_client_before_fork();
	if (tracer)
		tracer->before_fork();
	lock_for_fork();
}

void after_fork_parent()
{
	unlock_after_fork();
	if (tracer)
		tracer->after_fork_parent();
	daemon_client_after_fork_parent();
	runtime_events_unlock_after_fork();
}

void after_fork_child()
{
	unlock_after_fork();
	after_fork_in_child();
	reset_context_after_fork();
	daemon_client_after_fork_child(); // registers the child with the session daemon, if any
	runtime_events_unlock_after_fork();
	if (!tracer)
		return;
	try {
		tracer->after_fork_in_child();
		start_statedump_thread(); // the child's own, under its pid
	} catch (const std::exception &e) {
		base::diagnostic("the forked process %d is not traced: %s", getpid(), e.what());
	}
}

const char *read_env(const char *name) { return getenv(name); }

__attribute__((constructor(101))) void library_init()
{
	// The program's stderr is its own: the library's diagnostics go
	// where TRACERY_LOG says, or nowhere.
	base::diagnostics_only_when_asked();
	// Before any thread exists, where it costs nothing (rcu.hpp).
	rcu::init();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	register_statedump_events(); // before the hello that lists the program's events
	std::string error;
	auto config = read_daemonless_config(read_env, &error);
	if (!config) {
		if (!error.empty()) {
			// The first line says what is wrong (a filter's caret lines follow).
			const size_t eol = std::min(error.find('\n'), error.size());
			base::diagnostic("%s; this run is not traced%s", error.substr(0, eol).c_str(),
			                 error.substr(eol).c_str());
		} else {
			daemon_client_start(); // no TRACERY_OUTPUT: traced on demand through traceryd
		}
		return;
	}
	try {
		// Calibrated only here: a program traced by the daemon reads the
		// cycles or the vdso clock, and one not traced reads no clock.
		clock::init();
		tracer = new LocalTracer(std::move(*config));
		start_statedump_thread();
	} catch (const std::exception &e) {
		base::diagnostic("%s; this run is not traced", e.what());
	}
}

__attribute__((destructor(101))) void library_fini()
{
	daemon_client_stop();
	join_statedump_thread(); // before its session stops
	delete tracer;
	tracer = nullptr;
}

} // namespace
} // namespace tracery::ust
