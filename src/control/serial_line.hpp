// control/serial_line.hpp — the relay protocol over a serial line
// (docs/relay-protocol.md, "Over a serial line"): the line's settings as
// `--set-url serial:///dev/ttyS1?baud=115200` and `tracery-relayd --serial`
// give them, the tty opened raw (termios: the baud rate, 8N1, flow control
// only when asked), one end of a link (frames queued for the line and
// decoded from it, without blocking) and the sender's end, SenderLink.
//
// A link session carries one relay connection: the sender says HELLO with a
// fresh link id, the relay's end ACCEPTs and connects to the relay; then
// DATA frames carry the relay protocol's bytes each way, numbered from 0.
// A frame lost or corrupted shows as a gap in the numbers: that session ends
// (RESET), the relay keeps the whole packets it wrote, and the sender
// connects again (a new HELLO, a new session directory), counting what the
// relay had not confirmed, as after a TCP connection lost.
#pragma once

#include "base/fd.hpp"
#include "control/serial_frame.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tracery::control::serial {

inline constexpr uint32_t kDefaultBaud = 115200;

struct LineSettings {
	std::string device; // an absolute path: /dev/ttyS1, /dev/ttyUSB0, /dev/pts/3
	uint32_t baud = kDefaultBaud;
	bool rtscts = false; // hardware flow control
	bool operator==(const LineSettings &) const = default;
};

// The baud rates a line may be set to.
bool supported_baud(uint32_t baud);
// A device path as a URL or option may give it: "" or why not.
std::string device_error(std::string_view device);
// "serial:///dev/ttyS1?baud=115200[&flow=rtscts]" (after "serial://": the
// path, then the options): nullopt and *why (what is wrong and the fix,
// for the caller to prefix with the option and the URL).
std::optional<LineSettings> parse_serial_url(std::string_view url, std::string *why);
std::string to_url(const LineSettings &line);

// Opens the device and sets it raw (8N1, no echo, no signals, the baud
// rate; RTS/CTS when asked, else none), non-blocking: "" or why not.
std::string open_line(const LineSettings &line, base::Fd *out);

// One end of a link over an open line: frames queued to be written as the
// line takes them, bytes read into a decoder. Never blocks.
class LineEnd {
public:
	// The queue a sender stops reading its relay connection at.
	static constexpr size_t kQueueLimit = 4 * kMaxFrame;

	// baud: the line's speed, which bounds how long a frame may take to come
	// whole (a line cut mid-frame is noticed by that).
	LineEnd(base::Fd tty, uint32_t baud);
	int fd() const { return tty_.get(); }
	void send(Kind kind, uint32_t link, uint32_t sequence, std::span<const uint8_t> payload = {});
	size_t queued() const { return out_.size() - out_start_; }
	// Writes what the line takes now: "" or why the line failed.
	std::string write_some();
	// Reads what the line has now into `in`: "" or why the line failed
	// (EIO: hung up or unplugged). A frame whose head came but whose rest has
	// not come within partial_limit() is given up (counted in `in`), so that
	// what follows a cut is read: the HELLO of a sender connecting again.
	std::string read_some();
	// A second, and what a whole frame takes at the line's speed.
	std::chrono::milliseconds partial_limit() const { return partial_limit_; }
	// Waits, at most timeout_ms, until everything queued is written: "" or why not.
	std::string drain(int timeout_ms);

	FrameDecoder in;

private:
	void give_up_stale_partial();

	base::Fd tty_;
	std::vector<uint8_t> out_;
	size_t out_start_ = 0;
	std::chrono::milliseconds partial_limit_;
	uint64_t partial_at_ = FrameDecoder::kNoPartial; // the waiting frame, since when
	std::chrono::steady_clock::time_point partial_since_;
};

// The sender's end of one link session: it opens the line, says HELLO and
// waits for the relay's ACCEPT, then a thread carries the bytes of a local
// socket (the relay connection's, which RelayConnection uses as it would a
// TCP socket) over the line both ways. When the session ends (frames lost
// either way, the relay's end closed it, the line failed) the thread closes
// the local socket: the relay connection sees its peer gone, and why_ended()
// says why. When the relay connection closes its end, what it sent is
// written to the line, then CLOSE, and the thread ends.
class SenderLink {
public:
	// A line that takes nothing this long while frames wait has failed.
	static constexpr int kStallMs = 5000;
	static constexpr int kHelloRepeatMs = 300;

	// "" and *link, *socket (the relay connection's end, blocking), or why not.
	static std::string open(const LineSettings &line, int timeout_ms, std::unique_ptr<SenderLink> *link,
	                        base::Fd *socket);
	~SenderLink(); // finish()
	SenderLink(const SenderLink &) = delete;
	SenderLink &operator=(const SenderLink &) = delete;

	// Waits for the thread to end (bounded by kStallMs once the relay
	// connection's socket is closed): why the session ended, or "" when the
	// relay connection closed it.
	std::string finish();

private:
	SenderLink(LineEnd line, base::Fd local, uint32_t id, std::string device);
	void run();
	void end(std::string why);

	LineEnd line_;
	base::Fd local_;
	uint32_t id_;
	std::string device_;
	uint32_t next_out_ = 0, next_in_ = 0;
	std::string ended_; // the thread's until it ends
	std::thread thread_;
};

} // namespace tracery::control::serial
