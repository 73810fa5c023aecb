// consumer/channel_consumer.cpp — sub-buffers to CTF packets. See channel_consumer.hpp.
#include "consumer/channel_consumer.hpp"

#include "base/background_thread.hpp"
#include "base/diagnostics.hpp"
#include "clock/trace_clock.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tracery::consumer {

namespace {
constexpr int kConsumerNice = -10;
// The longest wait for data (the thread's clock resync and live ticks come sooner when due).
constexpr uint64_t kMaxWaitNs = 100'000'000;
} // namespace

ChannelConsumer::ChannelConsumer(ringbuf::Channel &channel, std::unique_ptr<PacketSink> sink, clock::TickSource ticks,
                                 ProblemReport report)
	: channel_(channel), sink_(std::move(sink)), ticks_(ticks), report_(std::move(report))
{
	const uint32_t n = channel_.config().num_cpus;
	last_lost_.assign(n, 0);
	last_ts_.assign(n, 0);
	next_seq_.assign(n, 0);
	wrote_.assign(n, false);
	seq_shift_.assign(n, 0);
	streams_seen_.assign(n, 0);
	// Before any program has the buffer: no record is older.
	created_ts_ = clock::ticks(ticks_);
}

ChannelConsumer::~ChannelConsumer() { stop_thread(); }

void ChannelConsumer::start_thread()
{
	// A live viewer learns of every stream at once, each with a first
	// (empty) packet, so that beacons can say it is idle: babeltrace2 2.0.4
	// notices a stream that appears later only once another has data, and
	// then refuses its older events.
	if (live_period_ns_ > 0 && !announced_)
		announce_streams();
	stop_.store(false);
	if (base::start_background_thread(thread_, &ChannelConsumer::thread_main, this) == 0) {
		thread_running_ = true;
		started_.acquire();
	}
}

void ChannelConsumer::stop_thread()
{
	if (!thread_running_)
		return;
	stop_.store(true);
	channel_.wake_consumer(); // else it would notice only at the end of its wait, up to kMaxWaitNs
	pthread_join(thread_, nullptr);
	thread_running_ = false;
}

void ChannelConsumer::before_fork() { busy_.lock(); }

void ChannelConsumer::after_fork_parent() { busy_.unlock(); }

void *ChannelConsumer::thread_main(void *arg)
{
	auto *self = static_cast<ChannelConsumer *>(arg);
	std::unique_lock busy(self->busy_);
	self->started_.release();
	pthread_setname_np(pthread_self(), "tracery-consume");
	// Emitting threads that keep every CPU busy must not starve the thread
	// that empties their buffers: where allowed (root, CAP_SYS_NICE or
	// RLIMIT_NICE), run ahead of them. Otherwise it stays at the caller's nice.
	setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kConsumerNice);
	// This thread also keeps the trace clock on CLOCK_MONOTONIC (slope
	// corrections; several consumers calling resync() is harmless).
	uint64_t next_resync = clock::detail::now_vdso() + clock::resync_interval_ns();
	uint64_t next_live = clock::detail::now_vdso() + self->live_period_ns_;
	while (!self->stop_.load(std::memory_order_relaxed) && !self->channel_.quarantined()) {
		// Block until a sub-buffer completes (its commit wakes this thread,
		// and costs the producer a FUTEX_WAKE only while this thread waits)
		// or the next resync or live period is due.
		uint64_t until = next_resync;
		if (self->live_period_ns_)
			until = std::min(until, next_live);
		const uint64_t now = clock::detail::now_vdso();
		const uint64_t wait_ns = until > now ? std::min(until - now, kMaxWaitNs) : 0;
		busy.unlock();
		self->channel_.wait_for_data(static_cast<int>((wait_ns + 999'999) / 1'000'000));
		busy.lock();
		self->drain();
		if (const uint64_t mono = clock::detail::now_vdso(); mono >= next_resync) {
			clock::resync();
			next_resync = mono + clock::resync_interval_ns();
		}
		if (const uint64_t mono = clock::detail::now_vdso(); self->live_period_ns_ && mono >= next_live) {
			self->live_tick();
			next_live = mono + self->live_period_ns_;
		}
	}
	return nullptr;
}

void ChannelConsumer::abandon_after_fork()
{
	busy_.unlock(); // taken by before_fork in the parent, before the fork
	thread_running_ = false;
	sink_->abandon_after_fork();
}

void ChannelConsumer::report(const std::string &line)
{
	if (report_)
		report_(line);
	else
		base::diagnostic("%s", line.c_str());
}

void ChannelConsumer::report_error(const std::exception &e)
{
	if (!failed_)
		report(std::string("writing the trace failed, tracing goes on without it: ") + e.what());
	failed_ = true;
}

void ChannelConsumer::report_quarantine()
{
	if (quarantine_reported_ || !channel_.quarantined())
		return;
	quarantine_reported_ = true;
	report("the ring buffer is inconsistent (" + channel_.fault() +
	       "): its program wrote over it; nothing more of it is read, and the events still in it or written to "
	       "it later are lost");
}

std::string ChannelConsumer::out_of_order(const ringbuf::Channel::SubbufView &v) const
{
	const auto n = [](uint64_t x) { return std::to_string(x); };
	if (v.timestamp_begin > v.timestamp_end)
		return "sub-buffer " + n(v.seq) + " begins at " + n(v.timestamp_begin) + " after its end " +
		       n(v.timestamp_end);
	if (v.timestamp_begin < last_ts_[v.cpu])
		return "sub-buffer " + n(v.seq) + " begins at " + n(v.timestamp_begin) +
		       ", before the end of the previous one " + n(last_ts_[v.cpu]);
	if (v.lost_before < last_lost_[v.cpu])
		return "sub-buffer " + n(v.seq) + " counts " + n(v.lost_before) + " events lost, fewer than " +
		       n(last_lost_[v.cpu]) + " before it";
	if (v.seq < next_seq_[v.cpu])
		return "sub-buffer " + n(v.seq) + " comes after sub-buffer " + n(next_seq_[v.cpu] - 1);
	return {};
}

void ChannelConsumer::write(const ringbuf::Channel::SubbufView &v)
{
	if (failed_ || channel_.quarantined())
		return;
	// The stream's packets must follow each other (CTF readers refuse a
	// stream whose clock runs backwards): a program that wrote over its
	// buffer must not cost the reader the rest of the trace.
	if (const std::string why = out_of_order(v); !why.empty()) {
		channel_.quarantine("cpu " + std::to_string(v.cpu) + ": " + why);
		return;
	}
	try {
		ctf::PacketInfo info{};
		info.timestamp_begin = v.timestamp_begin;
		info.timestamp_end = v.timestamp_end;
		info.events_discarded = v.lost_before;
		info.seq = v.seq + seq_shift_[v.cpu];
		info.cpu_id = v.cpu;
		info.events = v.content_size == 0 ? 0 : ctf::kEventsUnknown; // records are not counted
		streams_seen_[v.cpu] = sink_->streams_started();
		sink_->write_packet(v.cpu, info, v.data, v.content_size);
		last_lost_[v.cpu] = v.lost_before;
		last_ts_[v.cpu] = v.timestamp_end;
		next_seq_[v.cpu] = v.seq + 1;
		wrote_[v.cpu] = true;
	} catch (const std::exception &e) {
		report_error(e);
	}
}

size_t ChannelConsumer::drain()
{
	size_t packets = 0;
	const uint32_t n = channel_.config().num_cpus;
	const uint32_t per_cpu = channel_.config().num_subbuf;
	for (uint32_t cpu = 0; cpu < n; cpu++) {
		ringbuf::Channel::SubbufView v;
		for (uint32_t taken = 0; taken < per_cpu && channel_.get_subbuf(cpu, v); taken++) {
			write(v);
			channel_.put_subbuf(cpu, v);
			packets++;
		}
	}
	report_quarantine();
	return packets;
}

void ChannelConsumer::live_tick()
{
	const uint32_t n = channel_.config().num_cpus;
	const uint64_t now = clock::ticks(ticks_);
	for (uint32_t cpu = 0; cpu < n; cpu++)
		channel_.flush(cpu, now);
	drain();
	if (failed_ || channel_.quarantined())
		return;
	const uint64_t started = sink_->streams_started();
	for (uint32_t cpu = 0; cpu < n; cpu++) {
		// Each stream's beacon a tick apart (a weaker promise than `now`):
		// babeltrace2 warns about streams whose next messages are the same.
		const uint64_t ts = std::max(now - std::min<uint64_t>(now, cpu), last_ts_[cpu]);
		if (wrote_[cpu])
			wrote_[cpu] = false;
		else if (started > streams_seen_[cpu]) // a stream started since its last packet: see
			write_between(cpu, ts);        // PacketSink::streams_started
		else
			sink_->idle(cpu, ts);
	}
}

void ChannelConsumer::write_final_lost_packets()
{
	const uint32_t n = channel_.config().num_cpus;
	for (uint32_t cpu = 0; cpu < n; cpu++) {
		const uint64_t lost = channel_.lost(cpu);
		if (lost <= last_lost_[cpu] || failed_ || channel_.quarantined())
			continue;
		// Events dropped after the last packet: an empty packet carries the count.
		write_empty(cpu, std::max(last_ts_[cpu], clock::ticks(ticks_)), lost);
	}
}

void ChannelConsumer::announce_streams()
{
	if (failed_ || channel_.quarantined())
		return;
	announced_ = true;
	for (uint32_t cpu = 0; cpu < channel_.config().num_cpus; cpu++)
		write_between(cpu, created_ts_);
}

void ChannelConsumer::write_between(uint32_t cpu, uint64_t timestamp)
{
	try {
		ctf::PacketInfo info{};
		info.timestamp_begin = info.timestamp_end = timestamp;
		info.events_discarded = last_lost_[cpu];
		info.seq = next_seq_[cpu] + seq_shift_[cpu];
		info.cpu_id = cpu;
		info.events = 0;
		streams_seen_[cpu] = sink_->streams_started();
		sink_->write_packet(cpu, info, nullptr, 0);
		seq_shift_[cpu]++; // the ring buffer's next sub-buffer comes after it
		last_ts_[cpu] = timestamp;
	} catch (const std::exception &e) {
		report_error(e);
	}
}

void ChannelConsumer::write_empty(uint32_t cpu, uint64_t timestamp, uint64_t lost_before)
{
	ringbuf::Channel::SubbufView v{};
	v.data = nullptr;
	v.content_size = 0;
	v.timestamp_begin = v.timestamp_end = timestamp;
	v.lost_before = lost_before;
	v.seq = next_seq_[cpu];
	v.cpu = cpu;
	write(v);
}

void ChannelConsumer::finish()
{
	stop_thread();
	const uint32_t n = channel_.config().num_cpus;
	const uint64_t now = clock::ticks(ticks_);
	for (uint32_t cpu = 0; cpu < n; cpu++)
		channel_.flush(cpu, now);
	if (channel_.config().mode == ringbuf::Mode::overwrite) {
		for (uint32_t cpu = 0; cpu < n; cpu++) {
			for (const auto &sb : channel_.snapshot(cpu)) {
				ringbuf::Channel::SubbufView v = sb.view();
				write(v);
			}
		}
	} else {
		drain();
	}
	write_final_lost_packets();
	report_quarantine();
	try {
		sink_->close();
	} catch (const std::exception &e) {
		report_error(e);
	}
}

} // namespace tracery::consumer
