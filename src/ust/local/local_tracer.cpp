// ust/local/local_tracer.cpp — daemonless mode: see local_tracer.hpp.
#include "ust/local/local_tracer.hpp"

#include "clock/trace_clock.hpp"
#include "consumer/file_sink.hpp"
#include "consumer/ring_config.hpp"

#include <unistd.h>

#include <string>

namespace tracery::ust {

LocalTracer::LocalTracer(DaemonlessConfig config) : config_(std::move(config)), trace_(config_)
{
	session_ = std::make_unique<Session>(make_channel(), config_.context, clock::tick_source(trace_.tick_unit()),
	                                     config_.patterns, trace_);
	start_consumer();
	session_->start();
}

LocalTracer::~LocalTracer()
{
	session_->stop(); // no thread writes into the channel after this
	consumer_->finish();
}

void LocalTracer::after_fork_in_child()
{
	consumer_->abandon_after_fork();
	consumer_.reset();
	session_->replace_channel_after_fork(make_channel()); // the parent's mapping goes away here
	start_consumer();
}

std::unique_ptr<ringbuf::Channel> LocalTracer::make_channel()
{
	return consumer::create_ring(config_.num_subbuf, config_.subbuf_size, config_.mode, "tracery-channel0");
}

void LocalTracer::start_consumer()
{
	const uint32_t index = trace_.claim_process_index();
	const consumer::StreamNames sink_names{"channel0_" + std::to_string(getpid()), 0,
	                                       static_cast<uint64_t>(index) << 16, trace_.uuid()};
	auto sink =
		std::make_unique<consumer::FileSink>(trace_.dir(), sink_names, session_->channel().config().num_cpus);
	consumer_ = std::make_unique<consumer::ChannelConsumer>(session_->channel(), std::move(sink),
	                                                        clock::tick_source(trace_.tick_unit()));
	consumer_->set_event_counter(consumer::event_counter(trace_.own_metadata(), sink_names));
	if (config_.mode == ringbuf::Mode::discard)
		consumer_->start_thread();
}

} // namespace tracery::ust
