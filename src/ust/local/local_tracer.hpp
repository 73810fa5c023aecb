// ust/local/local_tracer.hpp — daemonless mode: the session, channel and
// consumer of a program run with TRACERY_OUTPUT=DIR, which records its
// events into a CTF trace in DIR by itself. A child made by fork() gets its
// own channel, consumer thread and stream files in the same trace. See
// docs/instrumenting.md for the variables.
#pragma once

#include "consumer/channel_consumer.hpp"
#include "ust/local/daemonless_config.hpp"
#include "ust/local/local_trace.hpp"
#include "ust/session.hpp"

#include <memory>

namespace tracery::ust {

class LocalTracer {
public:
	// Starts recording; throws std::exception naming what failed.
	explicit LocalTracer(DaemonlessConfig config);
	// Stops recording and writes out what the channel holds.
	~LocalTracer();
	LocalTracer(const LocalTracer &) = delete;
	LocalTracer &operator=(const LocalTracer &) = delete;

	// Fork handlers (see ChannelConsumer::before_fork).
	void before_fork() { consumer_->before_fork(); }
	void after_fork_parent() { consumer_->after_fork_parent(); }
	// In the child: a channel, consumer thread and stream files of its own.
	void after_fork_in_child();

private:
	std::unique_ptr<ringbuf::Channel> make_channel();
	void start_consumer();

	DaemonlessConfig config_;
	LocalTrace trace_;
	std::unique_ptr<Session> session_;
	std::unique_ptr<consumer::ChannelConsumer> consumer_;
};

} // namespace tracery::ust
