// analysis/output/text_writer.hpp — text written to a file descriptor by a
// thread of its own: the caller fills one TextBuffer while the thread
// writes the other (about 1 MiB each) with write(2), so that copying into
// the page cache overlaps the formatting. EPIPE (the reader went away) ends
// the output quietly (closed()); another error is thrown by the next flush.
//
//   TextWriter out(STDOUT_FILENO);
//   for (...) { out.buf().put(...); out.maybe_flush(); if (out.closed()) break; }
//   out.flush();                    // everything written (before a line on stderr, and at the end)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

#include "analysis/output/text_buffer.hpp"

namespace tracery::analysis {

class TextWriter {
public:
	explicit TextWriter(int fd);
	~TextWriter();
	TextWriter(const TextWriter &) = delete;
	TextWriter &operator=(const TextWriter &) = delete;

	// Where to put text.
	TextBuffer &buf() { return front_; }
	// Whether the reader of the output went away (EPIPE).
	bool closed() const { return closed_.load(std::memory_order_relaxed); }
	// Hands the buffer to the thread once it holds kFlushAt bytes.
	void maybe_flush()
	{
		if (front_.size() >= kFlushAt)
			hand_off();
	}
	// Writes out everything so far. Throws std::runtime_error if writing failed.
	void flush();

private:
	static constexpr size_t kFlushAt = size_t{1} << 20;

	void hand_off();
	void throw_error() const;
	void write_loop();
	int write_all(const TextBuffer &b);

	int fd_;
	TextBuffer front_, back_; // the caller fills front_; the thread writes back_ while busy_
	std::atomic<bool> closed_{false};
	std::mutex mu_;
	std::condition_variable work_, idle_;
	bool busy_ = false, stop_ = false;
	int error_ = 0;
	std::thread writer_;
};

} // namespace tracery::analysis
