// relay/write_queue.hpp — one session's writer thread: the event loop queues
// each decoded frame and goes back to its sockets; this thread applies them
// in order to the session's SessionWriter (the disk writes) and hands back,
// through an eventfd the loop polls, what it wrote (for the SYNC replies,
// the live index and the log) or why it stopped. Each frame comes with what
// the loop charged the relay's memory budget for it, released once the frame
// is written or dropped. The loop bounds what is queued (queued_bytes) by not
// reading a sender whose writes are behind, so a slow disk slows only the
// senders of the sessions on it, and says so. A frame the disk refuses
// (full, over quota, an I/O error) is kept and tried again every
// kRetryEvery; the loop is told when the disk starts refusing and when it
// takes the writes again, once each. At the end (finish) what the disk still
// refuses is dropped and summed up (packets and bytes per stream); the same
// when the sender asks for it (drop_unwritten), at once. Each frame written
// is also given to the session's feed, if it has one (session_feed.hpp).
#pragma once

#include "base/fd.hpp"
#include "control/relay_protocol.hpp"
#include "relay/memory_budget.hpp"
#include "relay/session_feed.hpp"
#include "relay/session_writer.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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
	static constexpr auto kRetryEvery = std::chrono::milliseconds(500);

	// Starts the thread; `writer` has accepted HELLO; `budget` outlives the
	// queue. before_write (tests: a slow disk) runs on the thread before each
	// frame is applied. feed: null, or where the frames go once written.
	WriteQueue(SessionWriter writer, MemoryBudget &budget, std::function<void()> before_write = {},
	           std::unique_ptr<SessionFeed> feed = nullptr);
	// Writes what is still queued, then stops the thread (finish()).
	~WriteQueue();
	WriteQueue(const WriteQueue &) = delete;
	WriteQueue &operator=(const WriteQueue &) = delete;

	// `charge`: what the frame was charged to the budget (released here).
	void push(control::relay::Frame f, size_t charge);
	// What the frames pushed and not yet written were charged.
	size_t queued_bytes() const;
	// Readable while results wait to be taken.
	int event_fd() const { return event_.get(); }

	// The disk's answer changed: it refuses the session's writes (why: the
	// file and the error), or it takes them again (why: "").
	struct DiskChange {
		bool refused = false;
		std::string why;
		size_t at = 0; // it came before Results::written[at] (after all of them when at == their count)
	};
	struct Results {
		std::vector<Written> written; // in the order the frames came
		std::vector<DiskChange> disk; // in the order they came
		std::string error;            // why the writer stopped (it drops what followed), or ""
		// drop_unwritten() was done: the thread wrote what came before and
		// stopped; what it dropped, summed up ("" if nothing).
		bool dropped = false;
		std::string unwritten;
		bool idle = false; // nothing queued or being written after these
	};
	// What the writer did since the last call (clears the eventfd).
	Results take();
	// Drops what is not written yet (the frame the disk refuses included)
	// and stops the thread: Results::dropped says when it is done.
	void drop_unwritten();
	// Writes what is queued (once more only, what the disk refuses), stops
	// the thread and says what could not be written: "" when all was.
	std::string finish();

private:
	struct Queued {
		control::relay::Frame frame;
		size_t charge = 0;
	};
	void run();
	// With mu_ held: a result added by `add`, the loop woken if it had none waiting.
	template <typename Add>
	void report(Add add);
	// With mu_ held: the frames left as the thread stops (queue_), their
	// charges released; their sum, after `lead`, or "" when there were none.
	std::string give_up(const std::string &lead);
	// With mu_ held: the thread stops, asked to (finish or drop_unwritten),
	// what is queued (after `current`, if any) dropped; `why` the disk refused it.
	void stop_here(std::optional<Queued> current, const std::string &why);

	SessionWriter writer_;
	MemoryBudget &budget_;
	std::function<void()> before_write_;
	std::unique_ptr<SessionFeed> feed_; // the thread's
	base::Fd event_;
	mutable std::mutex mu_;
	std::condition_variable cv_;
	std::deque<Queued> queue_;
	size_t queued_bytes_ = 0;
	bool busy_ = false, stopping_ = false, failed_ = false;
	bool dropping_ = false; // drop_unwritten() asked
	bool refusing_ = false; // the disk refuses the frame being tried
	Results results_;
	std::string unwritten_;
	std::thread thread_;
};

} // namespace tracery::relay
