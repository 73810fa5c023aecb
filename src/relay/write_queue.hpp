// relay/write_queue.hpp — one session's writer thread: the event loop queues
// each decoded frame and goes back to its sockets; this thread applies them
// in order to the session's SessionWriter (the disk writes) and hands back,
// through an eventfd the loop polls, what it wrote (for the SYNC replies,
// the live index and the log) or why it stopped. Each frame comes with what
// the loop charged the relay's memory budget for it, released once the frame
// is written or dropped. The loop bounds what is queued (queued_bytes) by not
// reading a sender whose writes are behind, so a slow disk slows only the
// senders of the sessions on it, and says so.
#pragma once

#include "base/fd.hpp"
#include "control/relay_protocol.hpp"
#include "relay/memory_budget.hpp"
#include "relay/session_writer.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tracery::relay {

// What the writer did with one frame. A PACKET's bytes and METADATA's text
// are not kept (their sizes are).
struct Written {
	control::relay::Frame frame;
	uint64_t offset = 0;  // PACKET: where it went in its stream file
	uint64_t size = 0;    // PACKET, METADATA: bytes written
	uint64_t packets = 0; // the session's packets written so far
};

class WriteQueue {
public:
	// Starts the thread; `writer` has accepted HELLO; `budget` outlives the
	// queue. before_write (tests: a slow disk) runs on the thread before each
	// frame is applied.
	WriteQueue(SessionWriter writer, MemoryBudget &budget, std::function<void()> before_write = {});
	// Writes what is still queued, then stops the thread.
	~WriteQueue();
	WriteQueue(const WriteQueue &) = delete;
	WriteQueue &operator=(const WriteQueue &) = delete;

	// `charge`: what the frame was charged to the budget (released here).
	void push(control::relay::Frame f, size_t charge);
	// What the frames pushed and not yet written were charged.
	size_t queued_bytes() const;
	// Readable while results wait to be taken.
	int event_fd() const { return event_.get(); }

	struct Results {
		std::vector<Written> written; // in the order the frames came
		std::string error;            // why the writer stopped (it drops what followed), or ""
		bool idle = false;            // nothing queued or being written after these
	};
	// What the writer did since the last call (clears the eventfd).
	Results take();

private:
	void run();

	SessionWriter writer_;
	MemoryBudget &budget_;
	std::function<void()> before_write_;
	base::Fd event_;
	mutable std::mutex mu_;
	std::condition_variable cv_;
	struct Queued {
		control::relay::Frame frame;
		size_t charge = 0;
	};
	std::deque<Queued> queue_;
	size_t queued_bytes_ = 0;
	bool busy_ = false, stopping_ = false, failed_ = false;
	Results results_;
	std::thread thread_;
};

} // namespace tracery::relay
