// relay/write_queue.cpp — the writer thread of one session: frames in order,
// one at a time, outside the lock; the loop is woken only when the results
// it has not taken go from none to some. A frame the disk refuses stays the
// thread's until it is written or the queue finishes.
#include "relay/write_queue.hpp"

#include "base/cat.hpp"
#include "base/sizes.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace tracery::relay {

namespace cr = control::relay;

WriteQueue::WriteQueue(SessionWriter writer, MemoryBudget &budget, std::function<void()> before_write,
                       std::unique_ptr<SessionFeed> feed)
	: writer_(std::move(writer)), budget_(budget), before_write_(std::move(before_write)), feed_(std::move(feed)),
	  event_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
{
	if (!event_)
		throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
	thread_ = std::thread([this] { run(); });
}

WriteQueue::~WriteQueue() { finish(); }

std::string WriteQueue::finish()
{
	if (thread_.joinable()) {
		{
			std::lock_guard lock(mu_);
			stopping_ = true;
		}
		cv_.notify_one();
		thread_.join();
	}
	feed_.reset(); // the session is over for it
	return unwritten_;
}

void WriteQueue::push(cr::Frame f, size_t charge)
{
	{
		std::lock_guard lock(mu_);
		if (failed_) {
			budget_.release(charge);
			return;
		}
		queued_bytes_ += charge;
		queue_.push_back({std::move(f), charge});
	}
	cv_.notify_one();
}

size_t WriteQueue::queued_bytes() const
{
	std::lock_guard lock(mu_);
	return queued_bytes_;
}

WriteQueue::Results WriteQueue::take()
{
	uint64_t count = 0;
	[[maybe_unused]] const ssize_t n = ::read(event_.get(), &count, sizeof count);
	std::lock_guard lock(mu_);
	Results out = std::move(results_);
	results_ = {};
	out.idle = queue_.empty() && !busy_;
	return out;
}

template <typename Add>
void WriteQueue::report(Add add)
{
	const bool had_none =
		results_.written.empty() && results_.disk.empty() && results_.error.empty() && !results_.dropped;
	add();
	if (had_none) {
		const uint64_t one = 1;
		[[maybe_unused]] const ssize_t n = ::write(event_.get(), &one, sizeof one);
	}
}

std::string WriteQueue::give_up(const std::string &lead)
{
	struct Count {
		uint64_t packets = 0, bytes = 0;
	};
	std::map<uint32_t, std::string> traces, streams; // declared by frames not written
	std::map<uint32_t, Count> packets;               // by stream
	std::map<uint32_t, uint64_t> metadata;           // bytes, by trace
	size_t others = 0;
	auto trace_name = [&](uint32_t id) {
		const std::string known = writer_.trace_path(id);
		return !known.empty() ? known : traces.count(id) ? traces[id] : base::cat("trace ", std::to_string(id));
	};
	for (const Queued &q : queue_) {
		if (const auto *p = std::get_if<cr::Packet>(&q.frame)) {
			packets[p->stream_id].packets++;
			packets[p->stream_id].bytes += p->bytes.size();
		} else if (const auto *m = std::get_if<cr::Metadata>(&q.frame)) {
			metadata[m->trace_id] += m->text.size();
		} else if (const auto *t = std::get_if<cr::Trace>(&q.frame)) {
			traces[t->id] = t->path;
			others++;
		} else if (const auto *s = std::get_if<cr::Stream>(&q.frame)) {
			streams[s->id] = base::cat(trace_name(s->trace_id), "/", s->file);
			others++;
		} else {
			others++;
		}
	}
	std::string sum = queue_.empty() ? std::string() : base::cat(lead, ", not written:");
	for (const auto &[id, c] : packets) {
		const std::string known = writer_.stream_path(id);
		sum += base::cat(" ", std::to_string(c.packets), " packets (", base::format_size(c.bytes), ") of ",
		                 !known.empty()      ? known
		                 : streams.count(id) ? streams[id]
		                                     : base::cat("stream ", std::to_string(id)),
		                 ";");
	}
	for (const auto &[id, bytes] : metadata)
		sum += base::cat(" ", base::format_size(bytes), " of metadata of ", trace_name(id), ";");
	if (!sum.empty())
		sum += base::cat(" other frames: ", std::to_string(others));
	failed_ = true;
	for (const Queued &q : queue_)
		budget_.release(q.charge);
	queue_.clear();
	queued_bytes_ = 0;
	return sum;
}

void WriteQueue::stop_here(std::optional<Queued> current, const std::string &why)
{
	if (current)
		queue_.push_front(std::move(*current));
	busy_ = false;
	const std::string refused = why.empty() ? std::string() : base::cat(" (the disk refusing: ", why, ")");
	if (dropping_) {
		const std::string sum = give_up(base::cat("dropped at the sender's request", refused));
		report([&] {
			results_.dropped = true;
			results_.unwritten = sum;
		});
	} else {
		unwritten_ = give_up(base::cat("the disk still refusing (", why, ") as the relay stops"));
	}
}

void WriteQueue::drop_unwritten()
{
	{
		std::lock_guard lock(mu_);
		dropping_ = true;
	}
	cv_.notify_one();
}

void WriteQueue::run()
{
	std::unique_lock lock(mu_);
	for (;;) {
		cv_.wait(lock, [this] { return stopping_ || dropping_ || !queue_.empty(); });
		if (dropping_)
			return stop_here(std::nullopt, {});
		if (queue_.empty())
			return; // stopping, everything written
		Queued q = std::move(queue_.front());
		queue_.pop_front();
		busy_ = true;
		lock.unlock();

		std::string why;
		for (;;) {
			if (before_write_)
				before_write_();
			why = writer_.apply(q.frame, nullptr);
			if (why.empty() || !writer_.disk_refused())
				break;
			// Refused by the disk: nothing of it was kept; it is tried again.
			lock.lock();
			if (!refusing_) {
				refusing_ = true;
				report([&] {
					results_.disk.push_back(
						{.refused = true, .why = why, .at = results_.written.size()});
				});
			}
			if (cv_.wait_for(lock, kRetryEvery, [this] { return stopping_ || dropping_; }))
				return stop_here(std::move(q), why);
			lock.unlock();
		}
		cr::Frame &f = q.frame;
		const size_t c = q.charge;
		Written w;
		if (auto *p = std::get_if<cr::Packet>(&f)) {
			w.offset = writer_.last_packet_offset();
			w.size = p->bytes.size();
		} else if (auto *m = std::get_if<cr::Metadata>(&f)) {
			w.size = m->text.size();
		}
		if (feed_ && why.empty())
			feed_->written(f);
		if (auto *p = std::get_if<cr::Packet>(&f))
			p->bytes = {};
		else if (auto *m = std::get_if<cr::Metadata>(&f))
			m->text = {};
		w.frame = std::move(f);
		w.packets = writer_.packets();

		lock.lock();
		busy_ = false;
		queued_bytes_ -= c;
		budget_.release(c);
		report([&] {
			if (refusing_ && why.empty()) {
				refusing_ = false;
				results_.disk.push_back({.refused = false, .why = {}, .at = results_.written.size()});
			}
			if (why.empty()) {
				results_.written.push_back(std::move(w));
			} else {
				results_.error = why;
				failed_ = true;
				queue_.clear();
				budget_.release(queued_bytes_);
				queued_bytes_ = 0;
			}
		});
	}
}

} // namespace tracery::relay
