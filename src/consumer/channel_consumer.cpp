// consumer/channel_consumer.cpp — sub-buffers to CTF packets. See channel_consumer.hpp.
#include "consumer/channel_consumer.hpp"

#include "base/background_thread.hpp"
#include "base/diagnostics.hpp"
#include "clock/trace_clock.hpp"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tracery::consumer {

namespace {
constexpr int kConsumerNice = -10;
// The longest wait for data (the thread's clock resync and live ticks come sooner when due).
constexpr uint64_t kMaxWaitNs = 100'000'000;
// A stream whose sink refused a packet offers it again this often; the
// thread looks at the other streams meanwhile every kHeldPollNs (it cannot
// wait for data: the held sub-buffer is data ready all along).
constexpr uint64_t kRetryNs = 250'000'000;
constexpr uint64_t kHeldPollNs = 20'000'000;

std::string plural(uint64_t n, const char *what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }
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
	held_.assign(n, false);
	begun_.assign(n, false);
	retry_at_.assign(n, 0);
	shown_lost_.assign(n, 0);
	lost_at_hold_.assign(n, 0);
	hold_lost_.assign(n, 0);
	unwritten_.assign(n, 0);
	// Before any program has the buffer: no record is older.
	created_ts_ = clock::ticks(ticks_);
}

ChannelConsumer::~ChannelConsumer()
{
	stop_thread();
	std::function<void()> done;
	{
		std::lock_guard lock(rotation_mutex_);
		done = std::move(rotated_);
	}
	if (done)
		done();
}

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
		const bool holding = self->holding();
		const uint64_t wait_ns = until > now ? std::min(until - now, holding ? kHeldPollNs : kMaxWaitNs) : 0;
		busy.unlock();
		if (holding) {
			const timespec pause{0, static_cast<long>(wait_ns)};
			nanosleep(&pause, nullptr);
		} else {
			self->channel_.wait_for_data(static_cast<int>((wait_ns + 999'999) / 1'000'000));
		}
		// Not under busy_: a fork's prepare handlers take the clock's lock
		// before busy_ (before_fork), so resync() waiting for the clock's
		// lock while holding busy_ would deadlock with a forking thread.
		if (const uint64_t mono = clock::detail::now_vdso(); mono >= next_resync) {
			clock::resync();
			next_resync = mono + clock::resync_interval_ns();
		}
		busy.lock();
		if (self->rotation_pending_.load(std::memory_order_acquire))
			self->rotate_pending();
		self->drain_streams(false);
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

bool ChannelConsumer::holding() const { return std::find(held_.begin(), held_.end(), true) != held_.end(); }

void ChannelConsumer::hold(uint32_t cpu, const std::string &reason, uint64_t now)
{
	retry_at_[cpu] = now + kRetryNs;
	if (held_[cpu])
		return;
	bool first;
	{
		std::lock_guard lock(losses_mutex_);
		held_[cpu] = true;
		lost_at_hold_[cpu] = channel_.lost(cpu);
		first = streams_held_++ == 0;
		reason_ = reason;
	}
	if (first)
		report("writing the trace is refused (" + reason +
		       "): its events are counted as lost until writes succeed again");
}

void ChannelConsumer::release(uint32_t cpu)
{
	if (!held_[cpu])
		return;
	bool last;
	uint64_t lost;
	{
		std::lock_guard lock(losses_mutex_);
		held_[cpu] = false;
		hold_lost_[cpu] += channel_.lost(cpu) - lost_at_hold_[cpu];
		last = --streams_held_ == 0;
		lost = 0;
		for (const uint64_t n : hold_lost_)
			lost += n;
	}
	if (last)
		report("writing the trace resumed; " + plural(lost, "event") + " lost while writes were refused");
}

WriteLosses ChannelConsumer::write_losses() const
{
	std::lock_guard lock(losses_mutex_);
	WriteLosses out;
	for (uint32_t cpu = 0; cpu < hold_lost_.size(); cpu++) {
		out.events += hold_lost_[cpu] + unwritten_[cpu];
		out.unwritten_events += unwritten_[cpu];
		if (held_[cpu])
			out.events += channel_.lost(cpu) - lost_at_hold_[cpu];
	}
	out.unwritten_uncounted = unwritten_uncounted_;
	out.not_in_trace = not_in_trace_.value_or(0);
	out.refusing = streams_held_ > 0;
	out.reason = reason_;
	return out;
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

ChannelConsumer::Written ChannelConsumer::write(const ringbuf::Channel::SubbufView &v)
{
	if (channel_.quarantined())
		return Written::dropped;
	// The stream's packets must follow each other (CTF readers refuse a
	// stream whose clock runs backwards): a program that wrote over its
	// buffer must not cost the reader the rest of the trace.
	if (const std::string why = out_of_order(v); !why.empty()) {
		channel_.quarantine("cpu " + std::to_string(v.cpu) + ": " + why);
		return Written::dropped;
	}
	ctf::PacketInfo info{};
	info.timestamp_begin = v.timestamp_begin;
	info.timestamp_end = v.timestamp_end;
	// The events of sub-buffers finish() could not write count as discarded
	// in the packet after them (the last, empty one).
	info.events_discarded = v.lost_before + unwritten_[v.cpu];
	// Readers count a stream's discarded events from one packet to the
	// next: a stream that begins with some begins with an empty packet
	// (babeltrace2 would only say that events may have been discarded).
	// Tried once: a sink that refuses it would refuse what follows too.
	if (!begun_[v.cpu] && info.events_discarded > 0) {
		// After a rotation, dated at the end of the stream's previous packet.
		write_between(v.cpu, std::min(std::max(created_ts_, last_ts_[v.cpu]), v.timestamp_begin));
		begun_[v.cpu] = true;
	}
	info.seq = v.seq + seq_shift_[v.cpu];
	info.cpu_id = v.cpu;
	info.events = v.content_size == 0 ? 0 : ctf::kEventsUnknown; // records are not counted
	streams_seen_[v.cpu] = sink_->streams_started();
	try {
		sink_->write_packet(v.cpu, info, v.data, v.content_size);
	} catch (const std::exception &e) {
		hold(v.cpu, e.what(), clock::detail::now_vdso());
		return Written::refused;
	}
	release(v.cpu);
	begun_[v.cpu] = true;
	last_lost_[v.cpu] = v.lost_before;
	shown_lost_[v.cpu] = info.events_discarded;
	last_ts_[v.cpu] = v.timestamp_end;
	next_seq_[v.cpu] = v.seq + 1;
	wrote_[v.cpu] = true;
	return Written::yes;
}

size_t ChannelConsumer::drain_streams(bool all_now)
{
	size_t packets = 0;
	const uint32_t n = channel_.config().num_cpus;
	const uint32_t per_cpu = channel_.config().num_subbuf;
	const uint64_t now = clock::detail::now_vdso();
	for (uint32_t cpu = 0; cpu < n; cpu++) {
		if (held_[cpu] && !all_now && now < retry_at_[cpu])
			continue;
		ringbuf::Channel::SubbufView v;
		for (uint32_t taken = 0; taken < per_cpu && channel_.get_subbuf(cpu, v); taken++) {
			const Written w = write(v);
			if (w == Written::refused)
				break; // kept: offered again at the stream's next try
			channel_.put_subbuf(cpu, v);
			if (w == Written::yes)
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
	drain_streams(false);
	if (channel_.quarantined())
		return;
	const uint64_t started = sink_->streams_started();
	for (uint32_t cpu = 0; cpu < n; cpu++) {
		if (held_[cpu]) // nothing goes before the packet that waits
			continue;
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
		if (lost + unwritten_[cpu] <= shown_lost_[cpu] || channel_.quarantined())
			continue;
		// Events dropped after the last packet (or in sub-buffers that could
		// not be written): an empty packet carries the count.
		write_empty(cpu, std::max(last_ts_[cpu], clock::ticks(ticks_)), lost);
	}
}

void ChannelConsumer::announce_streams()
{
	if (channel_.quarantined())
		return;
	announced_ = true;
	for (uint32_t cpu = 0; cpu < channel_.config().num_cpus; cpu++)
		write_between(cpu, created_ts_);
}

void ChannelConsumer::write_between(uint32_t cpu, uint64_t timestamp)
{
	ctf::PacketInfo info{};
	info.timestamp_begin = info.timestamp_end = timestamp;
	info.events_discarded = shown_lost_[cpu];
	info.seq = next_seq_[cpu] + seq_shift_[cpu];
	info.cpu_id = cpu;
	info.events = 0;
	streams_seen_[cpu] = sink_->streams_started();
	try {
		sink_->write_packet(cpu, info, nullptr, 0);
		last_ts_[cpu] = timestamp;
		begun_[cpu] = true;
	} catch (const std::exception &) {
		// It carries no event: not offered again. Numbered all the same (a
		// TeeSink's other sink may have taken it): a reader sees a packet
		// missing, without events.
	}
	seq_shift_[cpu]++; // the ring buffer's next sub-buffer comes after it
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

void ChannelConsumer::account_unwritten(const ringbuf::Channel::SubbufView &v)
{
	uint64_t events = 0;
	bool counted = false;
	if (counter_ && v.content_size > 0) {
		ctf::PacketInfo info{};
		info.timestamp_begin = v.timestamp_begin;
		info.timestamp_end = v.timestamp_end;
		info.events_discarded = v.lost_before;
		info.seq = v.seq + seq_shift_[v.cpu];
		info.cpu_id = v.cpu;
		info.events = ctf::kEventsUnknown;
		try {
			events = counter_(v.cpu, info, v.data, v.content_size);
			counted = true;
		} catch (const std::exception &e) {
			report("the events of an unwritten sub-buffer of cpu " + std::to_string(v.cpu) +
			       " cannot be counted: " + e.what());
		}
	} else if (v.content_size == 0) {
		counted = true;
	}
	std::lock_guard lock(losses_mutex_);
	if (counted)
		unwritten_[v.cpu] += events;
	else
		unwritten_uncounted_++;
}

void ChannelConsumer::count_unwritten(uint32_t cpu)
{
	if (!held_[cpu])
		return;
	ringbuf::Channel::SubbufView v;
	for (uint32_t taken = 0; taken <= channel_.config().num_subbuf && channel_.get_subbuf(cpu, v); taken++) {
		account_unwritten(v);
		// After them: the last empty packet, which must not go back in time.
		last_ts_[cpu] = std::max(last_ts_[cpu], v.timestamp_end);
		next_seq_[cpu] = v.seq + 1;
		channel_.put_subbuf(cpu, v);
	}
	// The stream stops waiting: what the writers dropped meanwhile counts.
	std::lock_guard lock(losses_mutex_);
	hold_lost_[cpu] += channel_.lost(cpu) - lost_at_hold_[cpu];
	lost_at_hold_[cpu] = channel_.lost(cpu);
}

void ChannelConsumer::rotate(std::unique_ptr<PacketSink> next, std::function<void()> done)
{
	std::function<void()> replaced;
	{
		std::lock_guard lock(rotation_mutex_);
		replaced = std::move(rotated_);
		next_sink_ = std::move(next);
		rotated_ = std::move(done);
		rotation_pending_.store(true, std::memory_order_release);
	}
	if (replaced)
		replaced();
	// A thread that runs takes it at its next turn; a quarantined one may
	// have ended, and writes nothing more anyway.
	if (thread_running_ && !channel_.quarantined()) {
		channel_.wake_consumer();
		return;
	}
	std::lock_guard busy(busy_);
	rotate_pending();
}

void ChannelConsumer::rotate_pending()
{
	std::unique_ptr<PacketSink> next;
	std::function<void()> done;
	{
		std::lock_guard lock(rotation_mutex_);
		if (!next_sink_)
			return;
		next = std::move(next_sink_);
		done = std::move(rotated_);
		rotation_pending_.store(false, std::memory_order_relaxed);
	}
	if (channel_.config().mode == ringbuf::Mode::discard) {
		const uint64_t now = clock::ticks(ticks_);
		for (uint32_t cpu = 0; cpu < channel_.config().num_cpus; cpu++)
			channel_.flush(cpu, now);
		drain_streams(true);
	}
	try {
		sink_->close();
	} catch (const std::exception &e) {
		report(std::string("ending the streams of the previous trace chunk failed: ") + e.what());
	}
	sink_ = std::move(next);
	std::fill(begun_.begin(), begun_.end(), false);
	if (done)
		done();
}

void ChannelConsumer::finish()
{
	stop_thread();
	{
		std::lock_guard busy(busy_);
		rotate_pending();
	}
	const uint32_t n = channel_.config().num_cpus;
	const uint64_t now = clock::ticks(ticks_);
	for (uint32_t cpu = 0; cpu < n; cpu++)
		channel_.flush(cpu, now);
	if (channel_.config().mode == ringbuf::Mode::overwrite) {
		for (uint32_t cpu = 0; cpu < n; cpu++) {
			const auto subbufs = channel_.snapshot(cpu);
			const size_t first =
				keep_newest_ && subbufs.size() > keep_newest_ ? subbufs.size() - keep_newest_ : 0;
			for (size_t i = first; i < subbufs.size(); i++) {
				const ringbuf::Channel::SubbufView v = subbufs[i].view();
				if (held_[cpu] || write(v) == Written::refused) {
					account_unwritten(v);
					last_ts_[cpu] = std::max(last_ts_[cpu], v.timestamp_end);
					next_seq_[cpu] = v.seq + 1;
				}
			}
		}
	} else {
		drain_streams(true);
		for (uint32_t cpu = 0; cpu < n; cpu++)
			count_unwritten(cpu);
	}
	write_final_lost_packets();
	report_quarantine();
	uint64_t not_in_trace = 0;
	for (uint32_t cpu = 0; cpu < n; cpu++)
		not_in_trace += channel_.lost(cpu) + unwritten_[cpu] - shown_lost_[cpu];
	{
		std::lock_guard lock(losses_mutex_);
		not_in_trace_ = channel_.quarantined() ? 0 : not_in_trace;
		streams_held_ = 0;
		std::fill(held_.begin(), held_.end(), false);
	}
	if (const WriteLosses w = write_losses(); w.events > 0 || w.unwritten_uncounted > 0) {
		std::string line = plural(w.events, "event") + " lost because writes were refused (" + w.reason + ")";
		if (w.unwritten_uncounted > 0)
			line += ", and " + plural(w.unwritten_uncounted, "sub-buffer") +
			        " not written whose events are unknown";
		if (w.not_in_trace > 0)
			line += "; the trace does not count " + std::to_string(w.not_in_trace) + " of them";
		report(line);
	}
	try {
		sink_->close();
	} catch (const std::exception &e) {
		if (!close_reported_)
			report(std::string("ending the trace's streams failed: ") + e.what());
		close_reported_ = true;
	}
}

} // namespace tracery::consumer
