// consumer/relay_link.cpp — see relay_link.hpp.
#include "consumer/relay_link.hpp"

#include "base/background_thread.hpp"
#include "base/cat.hpp"
#include "consumer/event_count.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace tracery::consumer {

namespace cr = control::relay;
using base::cat;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kSmallItem = 64; // what a beacon or a close counts against the queue
// Packet buffers kept for reuse: a new one is faulted in page by page by the
// consumer's copy (a 512 KiB sub-buffer: 128 faults), which slows the thread
// the programs' buffers wait for.
constexpr size_t kSpareBuffers = 32;
constexpr int kConnectTimeoutMs = 1000;
constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr auto kIdleWait = std::chrono::milliseconds(250);

// The relay as log lines name it: HOST:PORT, or the serial line's URL.
std::string destination(const RelayLinkConfig &c)
{
	return c.serial ? control::serial::to_url(*c.serial) : cat(c.host, ":", std::to_string(c.port));
}
} // namespace

RelayLink::RelayLink(RelayLinkConfig config) : config_(std::move(config))
{
	// Called on the sender thread, never with the lock held (every read of
	// conn_ is made without it): status shows the relay's disk at once, even
	// while a send waits on a relay that holds this sender.
	conn_.on_notice = [this](const cr::Notice &n) {
		log(cat("relay: ", n.text));
		const std::lock_guard lock(mutex_);
		if (n.kind == cr::NoticeKind::write_failed)
			counts_.relay_write_error = n.text.empty() ? "no reason given" : n.text;
		else if (n.kind == cr::NoticeKind::write_resumed)
			counts_.relay_write_error.clear();
	};
	// Read by the sender thread alone (check_replies), then used under the lock.
	conn_.on_sync_reply = [this](const cr::SyncReply &r) { replies_.push_back(r); };
}

RelayLink::~RelayLink()
{
	{
		const std::lock_guard lock(mutex_);
		stop_ = true;
	}
	work_.notify_all();
	if (thread_running_)
		pthread_join(thread_, nullptr);
}

void RelayLink::log(const std::string &line) const
{
	if (config_.log)
		config_.log(line);
}

size_t RelayLink::cost(const Item &item) { return item.kind == Kind::packet ? item.bytes.size : kSmallItem; }

std::string RelayLink::open(int timeout_ms)
{
	Lock lock(mutex_);
	if (!connect(lock, timeout_ms))
		return counts_.error;
	if (base::start_background_thread(thread_, &RelayLink::thread_main, this) != 0) {
		conn_.close();
		return "cannot start the thread that sends to the relay";
	}
	thread_running_ = true;
	return {};
}

void *RelayLink::thread_main(void *arg)
{
	// At the caller's nice, behind the consumer threads (nice -10 where
	// allowed): when CPUs are short, the programs' buffers (a few MiB) are
	// drained first, into the queue (64 MiB), which waits for this thread.
	pthread_setname_np(pthread_self(), "tracery-relay");
	static_cast<RelayLink *>(arg)->run();
	return nullptr;
}

uint32_t RelayLink::add_trace(const std::string &path)
{
	const std::lock_guard lock(mutex_);
	traces_.push_back({path, {}, 0, false, false, false, 0, 0, false, false});
	metadata_pending_ = true;
	work_.notify_one();
	return static_cast<uint32_t>(traces_.size()); // ids from 1
}

void RelayLink::append_metadata(uint32_t trace, std::string_view text)
{
	const std::lock_guard lock(mutex_);
	traces_.at(trace - 1).metadata += text;
	metadata_pending_ = true;
	work_.notify_one();
}

uint32_t RelayLink::add_stream(uint32_t trace, const std::string &name, uint64_t file_size, uint64_t file_count)
{
	const std::lock_guard lock(mutex_);
	streams_.push_back({trace, name, false, false, file_size, file_count});
	return static_cast<uint32_t>(streams_.size()); // ids from 1
}

void RelayLink::count_dropped(size_t bytes, uint64_t events)
{
	counts_.packets_dropped++;
	counts_.bytes_dropped += bytes;
	if (events != ctf::kEventsUnknown) {
		counts_.packets_dropped_counted++;
		counts_.events_dropped += events;
	}
}

RelayLink::Sent RelayLink::send_packet(uint32_t stream, const cr::PacketIndex &index, std::span<const uint8_t> head,
                                       std::span<const uint8_t> events, uint64_t event_count)
{
	const size_t size = head.size() + events.size();
	Bytes bytes;
	{
		const std::lock_guard lock(mutex_);
		if (stop_ || size > config_.queue_bytes) {
			count_dropped(size, event_count);
			return Sent::dropped;
		}
		if (counts_.bytes_queued + unconfirmed_bytes_ + size > config_.queue_bytes)
			return Sent::full;
		counts_.bytes_queued += size; // reserved: the copy below is made without the lock
		counts_.bytes_taken += size;
		counts_.packets_queued++;
		for (auto it = spare_.begin(); it != spare_.end(); ++it) {
			if (it->capacity >= size) {
				bytes = std::move(*it);
				spare_.erase(it);
				break;
			}
		}
	}
	if (bytes.capacity < size) {
		bytes.data.reset(new uint8_t[size]); // not zeroed: filled below
		bytes.capacity = size;
	}
	std::memcpy(bytes.data.get(), head.data(), head.size());
	if (!events.empty())
		std::memcpy(bytes.data.get() + head.size(), events.data(), events.size());
	bytes.size = size;
	{
		const std::lock_guard lock(mutex_);
		queue_.push_back({Kind::packet, stream, index, 0, event_count, std::move(bytes), {}});
		if (stream >= 1 && stream <= streams_.size() && !std::exchange(streams_[stream - 1].started, true))
			streams_started_.fetch_add(1, std::memory_order_release);
	}
	work_.notify_one();
	return Sent::queued;
}

void RelayLink::beacon(uint32_t stream, uint64_t timestamp)
{
	{
		const std::lock_guard lock(mutex_);
		if (stop_ || counts_.bytes_queued + kSmallItem > config_.queue_bytes)
			return; // the next packet or beacon says more
		counts_.bytes_queued += kSmallItem;
		queue_.push_back({Kind::beacon, stream, {}, timestamp, 0, {}, {}});
	}
	work_.notify_one();
}

void RelayLink::close_stream(uint32_t stream)
{
	{
		const std::lock_guard lock(mutex_);
		if (stop_)
			return;
		counts_.bytes_queued += kSmallItem; // always queued: one per stream
		queue_.push_back({Kind::close, stream, {}, 0, 0, {}, {}});
	}
	work_.notify_one();
}

uint32_t RelayLink::continue_trace(uint32_t trace, const std::string &path)
{
	const std::lock_guard lock(mutex_);
	const std::string metadata = traces_.at(trace - 1).metadata;
	traces_.push_back({path, metadata, 0, false, false, false, 0, 0, true, false});
	const auto id = static_cast<uint32_t>(traces_.size());
	traces_[trace - 1].successor = id;
	traces_[trace - 1].successor_from = metadata.size();
	return id;
}

uint32_t RelayLink::discontinue(uint32_t successor)
{
	const std::lock_guard lock(mutex_);
	TraceState &next = traces_.at(successor - 1);
	const auto it = std::find_if(traces_.begin(), traces_.end(),
	                             [&](const TraceState &t) { return t.successor == successor; });
	if (it == traces_.end())
		throw std::logic_error("RelayLink::discontinue of a trace that continues none");
	if (next.metadata.size() > it->successor_from) {
		it->metadata += next.metadata.substr(it->successor_from);
		metadata_pending_ = true;
		work_.notify_one();
	}
	it->successor = 0;
	it->successor_from = 0;
	next.archived = next.archive_queued = true; // never declared from now on
	return static_cast<uint32_t>(it - traces_.begin()) + 1;
}

void RelayLink::queue_archive(uint32_t trace, const std::string &archive)
{
	TraceState &t = traces_.at(trace - 1);
	if (t.archive_queued)
		return;
	t.archive_queued = true;
	if (t.deferred && !t.needed) { // a chunk without packets of it: archived all the same, as locally
		t.needed = true;
		metadata_pending_ = true;
	}
	if (t.successor) { // what was added to the trace after the move: event classes its last packets may use
		const std::string &later = traces_.at(t.successor - 1).metadata;
		if (later.size() > t.successor_from) {
			t.metadata += later.substr(t.successor_from);
			metadata_pending_ = true;
		}
	}
	if (stop_)
		return;
	counts_.bytes_queued += kSmallItem; // one per trace and chunk
	queue_.push_back({Kind::archive, trace, {}, 0, 0, {}, archive});
}

void RelayLink::archive_chunk(const std::string &chunk, const std::string &archive)
{
	{
		const std::lock_guard lock(mutex_);
		for (uint32_t id = 1; id <= traces_.size(); ++id) {
			const std::string &path = traces_[id - 1].path;
			const size_t slash = path.find('/');
			if ((slash == std::string::npos ? std::string() : path.substr(0, slash)) == chunk)
				queue_archive(id, archive);
		}
	}
	work_.notify_one();
}

RelayLink::Counts RelayLink::counts() const
{
	const std::lock_guard lock(mutex_);
	return counts_;
}

std::string RelayLink::flush(int timeout_ms)
{
	Lock lock(mutex_);
	if (!thread_running_)
		return "not connected to the relay";
	if (wait_for_packets_ && queue_.empty())
		return {}; // the end of the last connection was counted; nothing since
	const uint64_t generation = ++flush_asked_;
	work_.notify_one();
	const auto started = Clock::now();
	const auto deadline = started + std::chrono::milliseconds(timeout_ms);
	const auto confirmed = [&] { return flush_confirmed_ >= generation || stop_; };
	bool done = progress_.wait_until(
		lock, std::min(deadline, started + std::chrono::milliseconds(kRefusedFlushWaitMs)), confirmed);
	if (!done && counts_.relay_write_error.empty())
		done = progress_.wait_until(lock, deadline, confirmed);
	if (done && flush_confirmed_ >= generation)
		return {};
	const Counts &c = counts_;
	if (!c.relay_write_error.empty() && c.connected && !stop_) {
		// The relay's disk still refuses: what it has not written is dropped
		// on both ends, and counted.
		const std::string refusal = c.relay_write_error;
		const Counts before = c;
		const uint64_t drop = ++drops_asked_;
		work_.notify_one();
		// Bounded: the sender thread may be in a send the relay holds.
		progress_.wait_for(lock, std::chrono::milliseconds(2 * kDropReplyTimeoutMs),
		                   [&] { return drops_done_ >= drop || stop_; });
		if (drops_done_ >= drop && last_drop_answered_) {
			const uint64_t not_written = c.packets_not_written - before.packets_not_written;
			const uint64_t uncounted =
				c.packets_not_written_uncounted - before.packets_not_written_uncounted;
			return cat("the relay's disk refused writes (", refusal,
			           ") as the session ended: ", std::to_string(not_written), " packets sent holding ",
			           std::to_string(c.events_not_written - before.events_not_written), " events",
			           uncounted ? cat(" (and ", std::to_string(uncounted),
			                           " packets whose events could not be counted)")
			                     : std::string(),
			           " were not written, and ",
			           std::to_string(c.packets_dropped - before.packets_dropped),
			           " packets queued holding ", std::to_string(c.events_dropped - before.events_dropped),
			           " events were not sent");
		}
	}
	std::string why =
		!c.relay_write_error.empty() ? cat("the relay's disk refuses writes (", c.relay_write_error, ")")
		: c.connected                ? cat("the relay did not confirm in ", std::to_string(timeout_ms), " ms")
			      : cat("the relay at ", destination(config_), " is not connected (", c.error, ")");
	uint64_t events = 0, uncounted = 0;
	for (const Item &item : queue_) {
		if (item.kind != Kind::packet)
			continue;
		const uint64_t n = events_of(item.stream, item.events, item.bytes);
		(n == ctf::kEventsUnknown ? uncounted : events) += n == ctf::kEventsUnknown ? 1 : n;
	}
	return cat(why, ": ", std::to_string(c.packets_queued), " packets (", std::to_string(c.bytes_queued),
	           " bytes, ", std::to_string(events), " events",
	           uncounted ? cat(" and ", std::to_string(uncounted), " packets whose events could not be counted")
	                     : std::string(),
	           ") still queued, ",
	           std::to_string(c.packets_sent - c.packets_confirmed - c.packets_unconfirmed - c.packets_not_written),
	           " sent and not confirmed");
}

uint64_t RelayLink::events_of(uint32_t stream, uint64_t events, const Bytes &bytes) const
{
	if (events != ctf::kEventsUnknown)
		return events;
	try {
		const StreamState &s = streams_.at(stream - 1);
		return count_events(traces_.at(s.trace - 1).metadata, {bytes.data.get(), bytes.size});
	} catch (const std::exception &) {
		return ctf::kEventsUnknown;
	}
}

void RelayLink::drop_queued()
{
	for (const Item &item : queue_)
		if (item.kind == Kind::packet)
			count_dropped(item.bytes.size, events_of(item.stream, item.events, item.bytes));
	queue_.clear();
	counts_.packets_queued = counts_.bytes_queued = 0;
}

void RelayLink::recycle(Bytes bytes)
{
	if (bytes.data && spare_.size() < kSpareBuffers)
		spare_.push_back(std::move(bytes));
}

void RelayLink::confirm(uint64_t written, bool all)
{
	while (!unconfirmed_.empty() && (all || unconfirmed_.front().ordinal <= written)) {
		Unconfirmed u = std::move(unconfirmed_.front());
		unconfirmed_.pop_front();
		if (u.ordinal > written) {
			counts_.packets_not_written++;
			const uint64_t events = events_of(u.stream, u.events, u.bytes);
			if (events == ctf::kEventsUnknown)
				counts_.packets_not_written_uncounted++;
			else
				counts_.events_not_written += events;
		}
		unconfirmed_bytes_ -= u.bytes.size;
		recycle(std::move(u.bytes));
	}
}

std::string RelayLink::bye(int timeout_ms)
{
	std::string why = flush(timeout_ms);
	{
		const std::lock_guard lock(mutex_);
		stop_ = true;
		say_bye_ = true;
	}
	work_.notify_all();
	if (thread_running_)
		pthread_join(thread_, nullptr);
	const std::lock_guard lock(mutex_);
	thread_running_ = false;
	drop_queued(); // decoded: their events are counted
	return why;
}

// ---- the sender thread

void RelayLink::disconnected(const std::string &why, bool reconnect)
{
	conn_.close();
	for (Unconfirmed &u : unconfirmed_)
		recycle(std::move(u.bytes));
	unconfirmed_.clear();
	unconfirmed_bytes_ = 0;
	sent_here_ = 0;
	wait_for_packets_ = !reconnect;
	replies_.clear();                  // the old connection's
	counts_.relay_write_error.clear(); // a new connection is a new session of the relay
	const bool was = counts_.connected;
	counts_.connected = false;
	counts_.error = why;
	// What the relay did not confirm may or may not be on its disk.
	counts_.packets_unconfirmed += counts_.packets_sent - counts_.packets_confirmed - counts_.packets_unconfirmed -
	                               counts_.packets_not_written;
	syncs_.clear();
	flush_synced_ = flush_confirmed_; // a flush waiting asks again on the next connection
	for (TraceState &t : traces_) {
		t.declared = false;
		t.metadata_sent = 0;
	}
	for (StreamState &s : streams_)
		s.declared = false;
	if (was && reconnect)
		log(cat("lost the relay at ", destination(config_), ": ", why,
		        "; connecting again, packets are queued meanwhile (then dropped and counted)"));
}

bool RelayLink::connect(Lock &lock, int timeout_ms)
{
	lock.unlock();
	std::string path;
	std::string why = config_.serial ? conn_.connect_serial(*config_.serial, timeout_ms, config_.security)
	                                 : conn_.connect(config_.host, config_.port, timeout_ms, config_.security);
	if (why.empty())
		why = conn_.hello(config_.hello, &path, timeout_ms);
	lock.lock();
	if (!why.empty()) {
		conn_.close();
		counts_.error = why;
		return false;
	}
	counts_.connected = true;
	counts_.connections++;
	counts_.relay_path = path;
	metadata_pending_ = true; // every trace declared again, with its whole metadata
	if (counts_.connections > 1)
		log(cat("connected to the relay at ", destination(config_),
		        " again: the session goes on in its directory ", path));
	return true;
}

bool RelayLink::send_metadata(Lock &lock)
{
	metadata_pending_ = false;
	for (uint32_t id = 1; id <= traces_.size(); ++id) {
		TraceState &t = traces_[id - 1];
		if (t.archived || (t.deferred && !t.needed))
			continue;
		const bool declare = !t.declared;
		const std::string path = t.path;
		const std::string text = t.metadata.substr(t.metadata_sent);
		if (!declare && text.empty())
			continue;
		t.declared = true;
		t.metadata_sent = t.metadata.size();
		lock.unlock();
		std::string why = declare ? conn_.add_trace(id, path) : std::string();
		// One METADATA frame holds at most a frame's body.
		for (size_t at = 0; why.empty() && at < text.size(); at += cr::kMaxBody - 8)
			why = conn_.append_metadata(id, std::string_view(text).substr(at, cr::kMaxBody - 8));
		lock.lock();
		if (!why.empty()) {
			disconnected(why);
			return false;
		}
	}
	return true;
}

bool RelayLink::send_next(Lock &lock)
{
	Item item = std::move(queue_.front());
	queue_.pop_front();
	if (item.kind == Kind::archive)
		return send_archive(lock, std::move(item));
	StreamState &s = streams_.at(item.stream - 1);
	TraceState &t = traces_.at(s.trace - 1);
	if (item.kind == Kind::packet && t.archived) { // dropped (its rotation failed), or a packet too late
		counts_.bytes_queued -= cost(item);
		counts_.packets_queued--;
		count_dropped(item.bytes.size, events_of(item.stream, item.events, item.bytes));
		recycle(std::move(item.bytes));
		return true;
	}
	if (item.kind == Kind::packet && !t.declared) { // a chunk's trace, declared (with its metadata) first
		t.needed = true;
		metadata_pending_ = true;
		queue_.push_front(std::move(item));
		return true;
	}
	// A stream is declared by its first packet on this connection: a beacon or a close before
	// that says nothing the relay needs, and would leave it an empty stream.
	const bool declare = !s.declared && item.kind == Kind::packet;
	const bool skip = !s.declared && item.kind != Kind::packet;
	s.declared = s.declared || declare;
	const uint32_t trace = s.trace;
	const std::string name = s.name;
	const uint64_t file_size = s.file_size, file_count = s.file_count;
	lock.unlock();
	std::string why;
	if (declare)
		why = conn_.add_stream(item.stream, trace, name);
	if (declare && why.empty() && file_size)
		why = conn_.stream_files(item.stream, file_size, file_count);
	if (why.empty() && !skip) {
		switch (item.kind) {
		case Kind::packet:
			why = conn_.send_packet(item.stream, item.index, {item.bytes.data.get(), item.bytes.size});
			break;
		case Kind::beacon:
			why = conn_.beacon(item.stream, item.timestamp);
			break;
		case Kind::close:
			why = conn_.close_stream(item.stream);
			break;
		case Kind::archive: // send_archive's
			break;
		}
	}
	lock.lock();
	counts_.bytes_queued -= cost(item);
	if (item.kind == Kind::packet) {
		counts_.packets_queued--;
		if (why.empty()) {
			counts_.packets_sent++;
			// Kept until the relay confirms it: its events, or its bytes to count them.
			Unconfirmed u{++sent_here_, item.stream, item.events, {}};
			if (item.events == ctf::kEventsUnknown) {
				unconfirmed_bytes_ += item.bytes.size;
				u.bytes = std::move(item.bytes);
			}
			unconfirmed_.push_back(std::move(u));
		} else {
			count_dropped(item.bytes.size,
			              item.events); // cut in the middle: the relay throws its part away
		}
		recycle(std::move(item.bytes));
	}
	if (!why.empty()) {
		disconnected(why);
		return false;
	}
	return true;
}

bool RelayLink::send_archive(Lock &lock, Item item)
{
	counts_.bytes_queued -= cost(item);
	TraceState &t = traces_.at(item.stream - 1);
	// A trace declared on this connection (all are, with their metadata,
	// before any item is sent): it moves into the archive on the relay.
	const bool declared = t.declared;
	t.archived = true;
	if (!declared)
		return true;
	lock.unlock();
	const std::string why = conn_.archive_trace(item.stream, item.archive);
	lock.lock();
	if (!why.empty()) {
		disconnected(why);
		return false;
	}
	return true;
}

bool RelayLink::sync(Lock &lock, uint64_t flush_generation)
{
	const uint64_t token = ++next_token_;
	syncs_.push_back({token, counts_.packets_sent, flush_generation});
	sent_at_last_sync_ = counts_.packets_sent;
	last_sync_ = Clock::now();
	lock.unlock();
	const std::string why = conn_.request_sync(token);
	lock.lock();
	if (!why.empty()) {
		disconnected(why);
		return false;
	}
	return true;
}

bool RelayLink::check_replies(Lock &lock, int timeout_ms)
{
	last_poll_ = Clock::now();
	lock.unlock();
	// Adds to replies_, after those read while a send waited on the relay.
	const std::string why = conn_.poll_notices(timeout_ms);
	lock.lock();
	for (const cr::SyncReply &r : replies_) {
		while (!syncs_.empty() && syncs_.front().token <= r.token) {
			if (syncs_.front().token == r.token) {
				counts_.packets_confirmed = syncs_.front().packets_sent - counts_.packets_unconfirmed -
				                            counts_.packets_not_written;
				confirm(r.packets_written, false);
				flush_confirmed_ = std::max(flush_confirmed_, syncs_.front().flush_generation);
			}
			syncs_.pop_front();
		}
	}
	if (!replies_.empty())
		progress_.notify_all();
	replies_.clear();
	if (!why.empty()) {
		disconnected(why);
		return false;
	}
	return true;
}

bool RelayLink::drop_unwritten(Lock &lock)
{
	const uint64_t asked = drops_asked_;
	drop_queued(); // not sent: counted, their events decoded
	const uint64_t token = ++next_token_;
	lock.unlock();
	uint64_t written = 0;
	std::string why = conn_.drop_unwritten(token, &written, kDropReplyTimeoutMs);
	lock.lock();
	if (why.empty() && written > sent_here_)
		why = cat("the relay says it wrote ", std::to_string(written), " packets of the ",
		          std::to_string(sent_here_), " sent");
	last_drop_answered_ = why.empty();
	if (why.empty()) {
		confirm(written, true);
		counts_.packets_confirmed =
			counts_.packets_sent - counts_.packets_unconfirmed - counts_.packets_not_written;
		log(cat("the relay dropped what its disk refused as the session ended: ",
		        std::to_string(counts_.packets_not_written), " packets not written in all"));
		disconnected("the relay dropped what its disk refused as the session ended", false);
	} else {
		disconnected(why);
	}
	drops_done_ = asked;
	progress_.notify_all();
	return false;
}

void RelayLink::run()
{
	Lock lock(mutex_);
	auto retry_at = Clock::now();
	auto connected_at = Clock::now(); // open() connected
	int retry_ms = kMinRetryMs;
	bool was_connected = counts_.connected;
	while (!stop_) {
		if (drops_asked_ > drops_done_ && !counts_.connected) { // nothing to drop on the relay
			drops_done_ = drops_asked_;
			last_drop_answered_ = false;
			progress_.notify_all();
		}
		if (!counts_.connected && wait_for_packets_) {
			if (queue_.empty()) {
				work_.wait(lock,
				           [&] { return stop_ || !queue_.empty() || drops_asked_ > drops_done_; });
				continue;
			}
			wait_for_packets_ = false;
		}
		if (!counts_.connected) {
			if (was_connected) {
				// The delay starts small again only after a connection that
				// lasted: one that fails at once (a relay that accepts and
				// closes) waits longer each time.
				was_connected = false;
				if (Clock::now() - connected_at >= std::chrono::milliseconds(kStableMs))
					retry_ms = kMinRetryMs;
				retry_at = Clock::now() + std::chrono::milliseconds(retry_ms);
				retry_ms = std::min(retry_ms * kRetryGrowth, kMaxRetryMs);
			}
			if (Clock::now() < retry_at) {
				work_.wait_until(lock, retry_at, [&] { return stop_; });
				continue;
			}
			if (connect(lock, kConnectTimeoutMs)) {
				was_connected = true;
				connected_at = Clock::now();
			} else {
				retry_at = Clock::now() + std::chrono::milliseconds(retry_ms);
				retry_ms = std::min(retry_ms * kRetryGrowth, kMaxRetryMs);
			}
			continue;
		}
		const auto now = Clock::now();
		if (now - last_poll_ >= kPollInterval && !check_replies(lock, 0))
			continue;
		if (drops_asked_ > drops_done_) {
			drop_unwritten(lock);
			continue;
		}
		if (metadata_pending_ && !send_metadata(lock))
			continue;
		// While the relay's disk refuses, packets wait here (counted if it
		// still refuses at the end) and the relay is read for its notices.
		const bool refused = !counts_.relay_write_error.empty();
		// A SYNC every kSyncIntervalMs while packets flow, sooner while what
		// is kept unconfirmed fills the queue.
		if (counts_.packets_sent > sent_at_last_sync_ && syncs_.size() < kMaxPendingSyncs &&
		    (now - last_sync_ >= std::chrono::milliseconds(kSyncIntervalMs) ||
		     unconfirmed_bytes_ >= config_.queue_bytes / (2 * kMaxPendingSyncs)) &&
		    !sync(lock, 0))
			continue;
		if (!queue_.empty() && !refused) {
			if (!metadata_pending_) // metadata given before an item goes before it
				send_next(lock);
			continue;
		}
		if (flush_asked_ > flush_synced_) {
			flush_synced_ = flush_asked_;
			sync(lock, flush_asked_);
			continue;
		}
		if (!syncs_.empty() || !queue_.empty()) { // answers or notices due: wait for them on the socket
			check_replies(lock, static_cast<int>(kPollInterval.count()));
			continue;
		}
		if (!work_.wait_for(lock, kIdleWait, [&] {
			    return stop_ || !queue_.empty() || metadata_pending_ || flush_asked_ > flush_synced_ ||
			           drops_asked_ > drops_done_;
		    }))
			check_replies(lock, 0); // a relay that went away is noticed while idle too
	}
	if (say_bye_ && counts_.connected) {
		lock.unlock();
		const std::string why = conn_.bye();
		lock.lock();
		counts_.connected = false;
		if (!why.empty())
			counts_.error = why;
	}
	conn_.close();
	progress_.notify_all();
}

} // namespace tracery::consumer
