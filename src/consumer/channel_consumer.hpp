// consumer/channel_consumer.hpp — turns the sub-buffers of one channel into
// CTF packets and hands them to a sink (sink.hpp: stream files today).
// Discard mode streams complete sub-buffers as they fill, from a thread that
// blocks until the commit completing a sub-buffer wakes it (ring_buffer.hpp,
// Channel::wait_for_data); overwrite mode keeps the newest data in memory and
// writes it on finish().
//
// The ring buffer may be written by a hostile or broken program: the ring
// buffer quarantines a channel it finds inconsistent, and the consumer adds
// what only a reader of successive sub-buffers sees (a stream's timestamps,
// lost counts or sequence numbers running backwards, a sub-buffer ending
// before it begins): then it writes nothing more of the channel, its thread
// ends, and the problem is reported once.
#pragma once

#include "clock/trace_clock.hpp"
#include "consumer/sink.hpp"
#include "ringbuf/ring_buffer.hpp"

#include <pthread.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <vector>

namespace tracery::consumer {

class ChannelConsumer {
public:
	// Told, once each, that writing the trace failed or that the channel is
	// quarantined (one line, without a trailing newline). Called from the
	// consumer thread or from finish().
	using ProblemReport = std::function<void(const std::string &)>;
	// ticks: what the trace's timestamps count, for the packets the
	// consumer closes itself (flush at the end, lost-events packets).
	// Problems go to `report`; by default to base::diagnostic ("tracery: ...").
	ChannelConsumer(ringbuf::Channel &channel, std::unique_ptr<PacketSink> sink, clock::TickSource ticks,
	                ProblemReport report = {});
	~ChannelConsumer();
	ChannelConsumer(const ChannelConsumer &) = delete;
	ChannelConsumer &operator=(const ChannelConsumer &) = delete;

	// Live sessions, before start_thread(): start_thread() writes an empty
	// packet on every stream (dated when the consumer was made, before any
	// program had the buffer), then every period_ns the thread closes the
	// partial sub-buffers and writes them, and tells the sink of each stream
	// that got nothing new since the previous period that it is idle up to
	// then (PacketSink::idle), or, when a stream of the session started since
	// that stream's last packet, writes it an empty packet dated then
	// (PacketSink::streams_started).
	void set_live_period(uint64_t period_ns) { live_period_ns_ = period_ns; }
	// Returns once the thread runs (its start-up, the C library's and any
	// sanitizer's, is over).
	void start_thread();
	// Stops the thread, closes the partial sub-buffers and writes everything
	// left (discard) or the newest data (overwrite), then a last empty
	// packet per stream if events were lost after its last packet.
	void finish();
	// Around fork(): before_fork waits until the thread is between two
	// pieces of work (waiting for data), so that it holds no lock of the C
	// library or of a sanitizer's allocator that the child would inherit
	// locked; after_fork_parent lets it go on. In the child (after
	// before_fork): abandon_after_fork, as the thread and the files belong to
	// the parent.
	void before_fork();
	void after_fork_parent();
	void abandon_after_fork();

	// Writes the complete sub-buffers, at most one buffer's worth per CPU
	// (so that a program filling its buffer as fast as it is written cannot
	// keep a caller here); returns the packets written.
	size_t drain();

private:
	static void *thread_main(void *arg);
	// Wakes the thread from its wait and joins it, if it runs.
	void stop_thread();
	void write(const ringbuf::Channel::SubbufView &v);
	// An empty packet on the stream of `cpu` carrying a lost count.
	void write_empty(uint32_t cpu, uint64_t timestamp, uint64_t lost_before);
	// Live sessions: packet 0 of every stream, empty, dated created_ts_.
	void announce_streams();
	// An empty packet of the stream of `cpu` between two of the ring buffer's
	// sub-buffers (those after it are numbered one more).
	void write_between(uint32_t cpu, uint64_t timestamp);
	// What makes `v` unfit to follow the stream's last packet; "" if nothing.
	std::string out_of_order(const ringbuf::Channel::SubbufView &v) const;
	void report_quarantine();
	void write_final_lost_packets();
	void live_tick(); // see set_live_period
	void report_error(const std::exception &e);
	void report(const std::string &line);

	ringbuf::Channel &channel_;
	std::unique_ptr<PacketSink> sink_;
	clock::TickSource ticks_;
	ProblemReport report_;
	bool quarantine_reported_ = false;
	std::vector<uint64_t> last_lost_; // lost count carried by each stream's last packet
	std::vector<uint64_t> last_ts_;   // timestamp_end of each stream's last packet
	std::vector<uint64_t> next_seq_;
	std::vector<bool> wrote_; // a packet of the stream since the last live tick
	uint64_t live_period_ns_ = 0;
	uint64_t created_ts_ = 0; // the trace clock when the consumer was made
	// Per stream: packet_seq_num - the ring buffer's sub-buffer number (the
	// empty packets written between sub-buffers), and the sink's
	// streams_started() when its last packet was written.
	std::vector<uint64_t> seq_shift_, streams_seen_;
	bool announced_ = false;
	pthread_t thread_{};
	bool thread_running_ = false;
	std::atomic<bool> stop_{false};
	std::mutex busy_;                  // held by the thread except while it waits for data
	std::binary_semaphore started_{0}; // released by the thread once it runs
	bool failed_ = false;
};

} // namespace tracery::consumer
