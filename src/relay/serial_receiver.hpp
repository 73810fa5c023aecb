// relay/serial_receiver.hpp — tracery-relayd's end of a serial line
// (`--serial DEVICE`, docs/relay-protocol.md "Over a serial line"): a thread
// that keeps the line open (opened again after it fails: a cable pulled,
// a USB adapter replugged), answers each link session's HELLO with a
// connection of its own to the relay's sender port, and carries the bytes of
// the two over the line (control/serial_line.hpp). A gap in a session's
// frame numbers ends it (RESET to the sender, which connects again); the
// relay keeps what it wrote, as for any sender gone. DATA of a session
// this end does not hold (the relay or its line restarted) is answered
// with RESET too, so that its sender connects again. Every session's frames
// lost, frames corrupted and bytes of noise are logged when it ends.
#pragma once

#include "base/fd.hpp"
#include "control/serial_line.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace tracery::relay {

class SerialReceiver {
public:
	static constexpr int kReopenMs = 500;
	// A relay connection that takes nothing of a session's bytes this long ends it.
	static constexpr int kRelayStallMs = 5000;

	// What the line has seen so far (read by tests and the log).
	struct Counts {
		std::atomic<uint64_t> sessions{0};      // link sessions accepted
		std::atomic<uint64_t> sessions_lost{0}; // ended by frames lost
		std::atomic<uint64_t> frames_lost{0};   // the gaps' sizes, both ways as the relay's end saw them
		std::atomic<uint64_t> frames_bad{0};    // began with a marker, failed their CRC or checks
		std::atomic<uint64_t> bytes_skipped{0}; // noise between frames
	};

	// Starts the thread; relay_host and relay_port: the relay's sender port.
	SerialReceiver(control::serial::LineSettings line, std::string relay_host, uint16_t relay_port,
	               std::function<void(const std::string &)> log);
	~SerialReceiver(); // stops and waits for the thread
	SerialReceiver(const SerialReceiver &) = delete;
	SerialReceiver &operator=(const SerialReceiver &) = delete;

	const Counts &counts() const { return counts_; }

private:
	void run();
	// Serves the open line until it fails or the receiver stops: why it ended.
	std::string serve(control::serial::LineEnd &line);

	control::serial::LineSettings line_;
	std::string relay_host_;
	uint16_t relay_port_;
	std::function<void(const std::string &)> log_;
	base::Fd stop_; // an eventfd
	Counts counts_;
	std::thread thread_;
};

} // namespace tracery::relay
