// control/relay_connection.hpp — the sending end of the relay protocol
// (docs/relay-protocol.md): one TCP connection to tracery-relayd carrying
// one session. Blocking sends; every frame is checked before it leaves, so
// the relay never sees a malformed one from us. traceryd's relay sink will
// use it (not wired yet).
#pragma once

#include "base/fd.hpp"
#include "control/relay_protocol.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tracery::control::relay {

class RelayConnection {
public:
	// Each returns "" or why it failed; after a failure the connection is closed.
	std::string connect(const std::string &host, uint16_t port, int timeout_ms = 5000);
	// Sends HELLO and waits (timeout_ms) for the reply; *relay_path: where the
	// relay writes the session (relative to its output directory).
	std::string hello(const Hello &h, std::string *relay_path = nullptr, int timeout_ms = 5000);
	std::string add_trace(uint32_t id, const std::string &path);
	std::string append_metadata(uint32_t trace_id, std::string_view text);
	std::string add_stream(uint32_t id, uint32_t trace_id, const std::string &file);
	std::string send_packet(uint32_t stream_id, const PacketIndex &index, std::span<const uint8_t> bytes);
	std::string beacon(uint32_t stream_id, uint64_t timestamp);
	std::string close_stream(uint32_t stream_id);
	// Sends BYE and closes.
	std::string bye();
	void close() { fd_.reset(); }
	bool connected() const { return static_cast<bool>(fd_); }
	// Raw bytes, for tests that play a hostile sender.
	std::string send_raw(std::span<const uint8_t> bytes);

private:
	std::string send_frame(const Frame &f);
	std::string fail(std::string why);

	base::Fd fd_;
};

} // namespace tracery::control::relay
