// analysis/output/text_writer.cpp — the writer thread (see text_writer.hpp).
#include "analysis/output/text_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tracery::analysis {

TextWriter::TextWriter(int fd) : fd_(fd)
{
	front_.reserve(kFlushAt + 4096);
	back_.reserve(kFlushAt + 4096);
}

TextWriter::~TextWriter()
{
	if (!writer_.joinable())
		return;
	{
		std::unique_lock lock(mu_);
		idle_.wait(lock, [&] { return !busy_; });
		stop_ = true;
	}
	work_.notify_one();
	writer_.join();
}

void TextWriter::flush()
{
	hand_off();
	std::unique_lock lock(mu_);
	idle_.wait(lock, [&] { return !busy_; });
	throw_error();
}

// The front buffer to the thread (once it is done with the other).
void TextWriter::hand_off()
{
	if (front_.size() == 0)
		return;
	if (!writer_.joinable())
		writer_ = std::thread([this] { write_loop(); });
	{
		std::unique_lock lock(mu_);
		idle_.wait(lock, [&] { return !busy_; });
		throw_error();
		front_.swap(back_);
		busy_ = true;
	}
	work_.notify_one();
	front_.clear();
}

void TextWriter::throw_error() const
{
	if (error_)
		throw std::runtime_error(std::string("cannot write the output: ") + strerror(error_));
}

void TextWriter::write_loop()
{
	std::unique_lock lock(mu_);
	while (true) {
		work_.wait(lock, [&] { return busy_ || stop_; });
		if (!busy_)
			return;
		lock.unlock();
		const int error = write_all(back_);
		lock.lock();
		if (error)
			error_ = error;
		busy_ = false;
		idle_.notify_one();
	}
}

int TextWriter::write_all(const TextBuffer &b)
{
	size_t done = 0;
	while (!closed() && done < b.size()) {
		const ssize_t n = ::write(fd_, b.data() + done, b.size() - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) {
				closed_.store(true, std::memory_order_relaxed);
				break;
			}
			return errno;
		}
		done += static_cast<size_t>(n);
	}
	return 0;
}

} // namespace tracery::analysis
