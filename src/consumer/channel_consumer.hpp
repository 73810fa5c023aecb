// consumer/channel_consumer.hpp — turns the sub-buffers of one channel into
// CTF packets and hands them to a sink (sink.hpp: stream files today).
// Discard mode streams complete sub-buffers as they fill, from a thread that
// blocks until the commit completing a sub-buffer wakes it (ring_buffer.hpp,
// Channel::wait_for_data); overwrite mode keeps the newest data in memory and
// writes it on finish().
//
// A packet its sink does not take (sink.hpp: WriteRefused, a full disk, say)
// is not dropped: the sub-buffer stays in the ring buffer, unreleased, and is
// offered again every 250 ms (the stream waits: its later sub-buffers after
// it). Meanwhile the buffer fills and its writers drop records and count
// them exactly (ringbuf::Channel::lost), so the stream's next packet carries
// them as discarded events; writing resumes by itself once the sink takes
// packets again. What finish() still cannot write is decoded and counted
// (set_event_counter) and carried by a last empty packet when it can be
// written. write_losses() says, from any thread, how many events the refused
// writes cost and why.
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
#include <optional>
#include <semaphore>
#include <string>
#include <vector>

namespace tracery::consumer {

// What refused writes cost a consumer's trace so far (ChannelConsumer::write_losses).
struct WriteLosses {
	// Events lost because the sink refused packets: dropped by the writers
	// while a stream waited, and in sub-buffers finish() could not write.
	uint64_t events = 0;
	// Of these, in sub-buffers finish() could not write, by count: their
	// events were decoded and counted (unwritten_events), or could not be
	// (unwritten_uncounted sub-buffers, whose events are not in `events`).
	uint64_t unwritten_events = 0;
	uint64_t unwritten_uncounted = 0;
	// After finish(): events lost (for any reason) that the trace does not
	// count as discarded, because no packet after them could be written.
	uint64_t not_in_trace = 0;
	bool refusing = false; // a stream waits for its sink to take a packet now
	std::string reason;    // the last refusal ("" if none)
	bool operator==(const WriteLosses &) const = default;
};

class ChannelConsumer {
public:
	// Told, once each, that the channel is quarantined, and when writes are
	// refused and resume (one line, without a trailing newline). Called from
	// the consumer thread or from finish().
	using ProblemReport = std::function<void(const std::string &)>;
	// Counts the events of a packet of the stream of `cpu` that could not be
	// written (its header and context fields, its event bytes) by decoding
	// it; throws std::exception when it cannot.
	using EventCounter =
		std::function<uint64_t(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size)>;
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
	// Before finish(): how it counts the events of sub-buffers it cannot
	// write. Without one they are reported as sub-buffers, not counted.
	void set_event_counter(EventCounter counter) { counter_ = std::move(counter); }
	// Returns once the thread runs (its start-up, the C library's and any
	// sanitizer's, is over).
	void start_thread();
	// Stops the thread, closes the partial sub-buffers and writes everything
	// left (discard) or the newest data (overwrite), then a last empty
	// packet per stream if events were lost after its last packet. A stream
	// whose sink still refuses gets one more try; what it cannot take is
	// counted (set_event_counter) and released, and the last empty packet
	// carries it too.
	void finish();
	// Before finish() of an overwrite channel (`snapshot record --max-size`):
	// only the newest `subbufs` complete sub-buffers of each CPU are written
	// (0: every one); the older ones are left in the buffer, not lost.
	void keep_newest(size_t subbufs) { keep_newest_ = subbufs; }
	// What refused writes cost so far; any thread.
	WriteLosses write_losses() const;
	// Rotation (the trace goes on in another directory): from a packet
	// boundary on, the packets go to `next`. The thread (or finish(), if it
	// comes first; or at once, without a running thread) closes the partial
	// sub-buffers, writes everything complete into the current sink, closes
	// it and writes into `next` from then on; `done` is called once (from
	// whichever did it, or from the destructor if nothing did), never with
	// the caller's locks. Events lost after the old sink's last packet are
	// carried by the first packets of `next` (each stream there begins with
	// an empty packet that counts those shown before). Any thread; a second
	// call before the first is done replaces its sink (the first's `done`
	// is called).
	void rotate(std::unique_ptr<PacketSink> next, std::function<void()> done);
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
	// keep a caller here), a waiting stream's first; returns the packets
	// written.
	size_t drain() { return drain_streams(true); }

private:
	enum class Written { yes, refused, dropped }; // dropped: the channel is quarantined
	static void *thread_main(void *arg);
	// Wakes the thread from its wait and joins it, if it runs.
	void stop_thread();
	// all_now: also the streams that wait, whatever their next try's time.
	size_t drain_streams(bool all_now);
	Written write(const ringbuf::Channel::SubbufView &v);
	// The sink refused the oldest sub-buffer of `cpu` (or took it again).
	void hold(uint32_t cpu, const std::string &reason, uint64_t now);
	void release(uint32_t cpu);
	bool holding() const;
	// finish(): the sub-buffers of a stream that still cannot be written,
	// counted and released.
	void count_unwritten(uint32_t cpu);
	void account_unwritten(const ringbuf::Channel::SubbufView &v);
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
	void report(const std::string &line);
	// With busy_ held: a rotation asked for, carried out (see rotate).
	void rotate_pending();

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
	EventCounter counter_;
	// Per stream: whether a packet of it was written; when to offer its
	// waiting sub-buffer again (CLOCK_MONOTONIC ns); the events_discarded its
	// last packet carried.
	std::vector<bool> begun_;
	std::vector<uint64_t> retry_at_, shown_lost_;
	// Guards what write_losses() reads (written by the consumer's thread
	// under it, read there without it): per stream, whether its oldest
	// sub-buffer was refused and waits, the lost count when it began to wait, the events lost to refusals in waits that ended, the
	// events counted in sub-buffers never written; and the totals.
	mutable std::mutex losses_mutex_;
	std::vector<bool> held_;
	size_t keep_newest_ = 0; // keep_newest()
	std::vector<uint64_t> lost_at_hold_, hold_lost_, unwritten_;
	uint64_t unwritten_uncounted_ = 0;
	uint32_t streams_held_ = 0;
	std::string reason_;
	std::optional<uint64_t> not_in_trace_; // set by finish()
	pthread_t thread_{};
	bool thread_running_ = false;
	std::atomic<bool> stop_{false};
	std::mutex busy_;                  // held by the thread except while it waits for data
	std::binary_semaphore started_{0}; // released by the thread once it runs
	bool close_reported_ = false;
	// A rotation asked for and not carried out yet (rotate).
	std::mutex rotation_mutex_;
	std::atomic<bool> rotation_pending_{false};
	std::unique_ptr<PacketSink> next_sink_;
	std::function<void()> rotated_;
};

} // namespace tracery::consumer
