// Daemonless mode: an instrumented program run with TRACERY_OUTPUT=DIR records
// its events into a CTF trace in DIR, from libtracery's constructor (before the
// program's own events register) to its destructor at exit. A child made by
// fork() gets its own channel, consumer thread and stream files in the same
// trace. See docs/instrumenting.md for the variables. Without TRACERY_OUTPUT
// the program is traced on demand through the session daemon (daemon_client).
#define _LGPL_SOURCE
#include "runtime/channel_consumer.hpp"
#include "runtime/daemon_client.hpp"
#include "runtime/daemonless_config.hpp"
#include "runtime/local_trace.hpp"
#include "runtime/registry.hpp"
#include "runtime/session.hpp"
#include "runtime/thread_context.hpp"
#include "runtime/trace_channel.hpp"

#include "clock/trace_clock.hpp"

#include <pthread.h>
#include <unistd.h>
#include <urcu-bp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace tracery::runtime {
namespace {

class DaemonlessTracer {
public:
	explicit DaemonlessTracer(DaemonlessConfig config)
		: config_(std::move(config)), trace_(config_)
	{
		session_ = std::make_unique<Session>(make_channel(), config_.context, clock::tick_source(trace_.tick_unit()),
		                                     config_.patterns, trace_);
		start_consumer();
		session_->start();
	}

	~DaemonlessTracer()
	{
		session_->stop(); // no thread writes into the channel after this
		consumer_->finish();
	}

	void before_fork() { consumer_->before_fork(); }
	void after_fork_parent() { consumer_->after_fork_parent(); }

	void after_fork_in_child()
	{
		consumer_->abandon_after_fork();
		consumer_.reset();
		session_->replace_channel_after_fork(make_channel()); // the parent's mapping goes away here
		start_consumer();
	}

private:
	std::unique_ptr<ringbuf::Channel> make_channel()
	{
		return create_trace_channel(config_.num_subbuf, config_.subbuf_size, config_.mode, "tracery-channel0");
	}

	void start_consumer()
	{
		const uint32_t index = trace_.claim_process_index();
		ConsumerTarget target{trace_.dir(), "channel0_" + std::to_string(getpid()), 0,
		                      static_cast<uint64_t>(index) << 16, trace_.uuid(),
		                      clock::tick_source(trace_.tick_unit())};
		consumer_ = std::make_unique<ChannelConsumer>(session_->channel(), std::move(target));
		if (config_.mode == ringbuf::Mode::discard)
			consumer_->start_thread();
	}

	DaemonlessConfig config_;
	LocalTrace trace_;
	std::unique_ptr<Session> session_;
	std::unique_ptr<ChannelConsumer> consumer_;
};

DaemonlessTracer *tracer = nullptr;

void before_fork()
{
	daemon_client_before_fork();
	if (tracer)
		tracer->before_fork();
	lock_for_fork();
	urcu_bp_before_fork();
}

void after_fork_parent()
{
	urcu_bp_after_fork_parent();
	unlock_after_fork();
	if (tracer)
		tracer->after_fork_parent();
	daemon_client_after_fork_parent();
}

void after_fork_child()
{
	urcu_bp_after_fork_child();
	unlock_after_fork();
	reset_context_after_fork();
	daemon_client_after_fork_child(); // registers the child with the session daemon, if any
	if (!tracer)
		return;
	try {
		tracer->after_fork_in_child();
	} catch (const std::exception &e) {
		fprintf(stderr, "tracery: the forked process %d is not traced: %s\n", getpid(), e.what());
	}
}

const char *read_env(const char *name) { return getenv(name); }

__attribute__((constructor(101))) void daemonless_init()
{
	clock::init();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	std::string error;
	auto config = read_daemonless_config(read_env, &error);
	if (!config) {
		if (!error.empty()) {
			// The first line says what is wrong (a filter's caret lines follow).
			const size_t eol = std::min(error.find('\n'), error.size());
			fprintf(stderr, "tracery: %s; this run is not traced%s\n", error.substr(0, eol).c_str(),
			        error.substr(eol).c_str());
		} else {
			daemon_client_start(); // no TRACERY_OUTPUT: traced on demand through traceryd
		}
		return;
	}
	try {
		tracer = new DaemonlessTracer(std::move(*config));
	} catch (const std::exception &e) {
		fprintf(stderr, "tracery: %s; this run is not traced\n", e.what());
	}
}

__attribute__((destructor(101))) void daemonless_fini()
{
	daemon_client_stop();
	delete tracer;
	tracer = nullptr;
}

} // namespace
} // namespace tracery::runtime
