// relay/write_queue.cpp — the writer thread of one session: frames in order,
// one at a time, outside the lock; the loop is woken only when the results
// it has not taken go from none to some.
#include "relay/write_queue.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tracery::relay {

namespace cr = control::relay;

WriteQueue::WriteQueue(SessionWriter writer, MemoryBudget &budget, std::function<void()> before_write)
	: writer_(std::move(writer)), budget_(budget), before_write_(std::move(before_write)),
	  event_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC))
{
	if (!event_)
		throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
	thread_ = std::thread([this] { run(); });
}

WriteQueue::~WriteQueue()
{
	{
		std::lock_guard lock(mu_);
		stopping_ = true;
	}
	cv_.notify_one();
	thread_.join();
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

void WriteQueue::run()
{
	std::unique_lock lock(mu_);
	for (;;) {
		cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
		if (queue_.empty())
			return; // stopping, everything written
		cr::Frame f = std::move(queue_.front().frame);
		const size_t c = queue_.front().charge;
		queue_.pop_front();
		busy_ = true;
		lock.unlock();

		if (before_write_)
			before_write_();
		Written w;
		const std::string why = writer_.apply(f, nullptr);
		if (auto *p = std::get_if<cr::Packet>(&f)) {
			w.offset = writer_.last_packet_offset();
			w.size = p->bytes.size();
			p->bytes = {};
		} else if (auto *m = std::get_if<cr::Metadata>(&f)) {
			w.size = m->text.size();
			m->text = {};
		}
		w.frame = std::move(f);
		w.packets = writer_.packets();

		lock.lock();
		busy_ = false;
		queued_bytes_ -= c;
		budget_.release(c);
		const bool wake = results_.written.empty() && results_.error.empty();
		if (why.empty()) {
			results_.written.push_back(std::move(w));
		} else {
			results_.error = why;
			failed_ = true;
			queue_.clear();
			budget_.release(queued_bytes_);
			queued_bytes_ = 0;
		}
		if (wake) {
			const uint64_t one = 1;
			[[maybe_unused]] const ssize_t n = ::write(event_.get(), &one, sizeof one);
		}
	}
}

} // namespace tracery::relay
