// relay/frame_receiver.hpp — one sender's frames as their bytes arrive, held
// in memory that grows only with the bytes that came: a frame's header is
// checked as soon as it is whole (by control's decoder), a body that is not
// whole within one read goes into an anonymous mapping of its declared size,
// whose pages the kernel provides only as bytes land in them, so a sender
// that declares 16 MiB and sends one byte holds one page, not 16 MiB. What it
// holds (held()) is what the loop charges to the relay's memory budget; when
// the frame began (frame_started()) is what its deadline counts from.
#pragma once

#include "control/relay_protocol.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tracery::relay {

// The longest body a HELLO can have (two fixed fields, two u64, two names):
// before HELLO, a frame declaring more is refused at its header.
inline constexpr uint32_t kMaxHelloBody = 2 + 2 + 8 + 8 + 2 * (2 + control::relay::kMaxName);

class FrameReceiver {
public:
	using Clock = std::chrono::steady_clock;

	// A whole frame and the bytes it came in (header and body).
	struct Received {
		control::relay::Frame frame;
		size_t size = 0;
	};

	FrameReceiver() = default;
	~FrameReceiver();
	FrameReceiver(FrameReceiver &&) = delete;
	FrameReceiver &operator=(FrameReceiver &&) = delete;

	// From the accepted HELLO on: frames up to the protocol's maximum.
	void allow_full_frames() { hello_only_ = false; }

	// Takes bytes read from the connection: each frame made whole goes to
	// out; the bytes of a frame not yet whole are kept. Returns how many
	// bytes were used: all of them, but before HELLO is accepted it stops
	// after the first whole frame (the rest are the caller's to give again).
	// *error says why the connection must close (a bad header or body), ""
	// otherwise; the frames already in out were whole and good.
	size_t take(std::span<const uint8_t> bytes, std::vector<Received> &out, Clock::time_point now,
	            std::string *error);

	// Bytes held of a frame not yet whole.
	size_t held() const { return header_have_ + body_have_; }
	// A frame's header came, not yet all of its body.
	bool in_frame() const { return header_have_ == control::relay::kHeaderSize; }
	// The body bytes that frame still lacks, and all it has (for the log).
	size_t missing() const { return body_size_ - body_have_; }
	size_t body_size() const { return body_size_; }
	// When its header came, moved later by the time the relay held it unread
	// (postpone): what its deadline counts from.
	Clock::time_point frame_started() const { return started_; }
	void postpone(Clock::duration held) { started_ += held; }
	// Forgets the frame being received (its sender is gone).
	void drop();

private:
	std::string start_frame(std::vector<Received> &out, Clock::time_point now);
	std::string finish(std::span<const uint8_t> body, std::vector<Received> &out);
	void unmap();

	uint8_t header_[control::relay::kHeaderSize] = {};
	size_t header_have_ = 0;
	uint32_t body_size_ = 0;
	size_t body_have_ = 0;
	uint8_t *body_ = nullptr; // mapped, body_size_ bytes (once a body spans reads)
	bool hello_only_ = true;
	Clock::time_point started_{};
};

} // namespace tracery::relay
