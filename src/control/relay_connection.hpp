// control/relay_connection.hpp — the sending end of the relay protocol
// (docs/relay-protocol.md): one TCP connection to tracery-relayd carrying
// one session. Blocking sends (a send on which the relay takes nothing for
// kSendTimeoutMs fails, unless the relay has said that it holds this sender:
// its writes behind or refused by its disk; then the send reads the relay's
// frames and waits on, up to kHeldSendLimitMs, in clear as through TLS);
// every frame is checked before it leaves, so the
// relay never sees a malformed one from us. The relay's frames are read when
// a reply is due (HELLO_REPLY, SYNC_REPLY) or asked for (poll_notices); its
// NOTICEs go to on_notice, and the replies to SYNCs sent without waiting
// (request_sync) to on_sync_reply. With a ClientSecurity, the connection
// is TLS from its first byte (the relay's certificate checked against the
// CAs and the host name) and/or authenticated before HELLO (AUTH_REQUEST ...
// AUTH_RESULT, the relay's proof checked too).
#pragma once

#include "base/fd.hpp"
#include "control/auth.hpp"
#include "control/relay_protocol.hpp"
#include "control/serial_line.hpp"
#include "control/tls.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tracery::control::relay {

// A blocking TCP connection to host:port (TCP_NODELAY), trying each address
// for timeout_ms: "" and out set, or why not (the lttng-live client uses it too).
std::string connect_tcp(const std::string &host, uint16_t port, int timeout_ms, base::Fd &out);

// How a sender protects its connection and proves who it is.
struct ClientSecurity {
	std::optional<auth::Key> key; // authenticate with it before HELLO
	tls::Context tls;             // set (a client's): TLS, the relay's certificate checked with its CAs
};

class RelayConnection {
public:
	static constexpr int kSendTimeoutMs = 5000;
	// How long a send may wait on a relay that holds this sender (its disk
	// full: it keeps what it has and reads again once it can write).
	static constexpr int kHeldSendLimitMs = 10 * 60 * 1000;

	// Each returns "" or why it failed; after a failure the connection is closed.
	// connect() makes the TLS handshake and authenticates as security says,
	// each within timeout_ms.
	std::string connect(const std::string &host, uint16_t port, int timeout_ms = 5000,
	                    const ClientSecurity &security = {});
	// The same over a serial line (serial_line.hpp): a link session opened
	// within timeout_ms, then the key's challenge-response as security says
	// (TLS is not used over a line).
	std::string connect_serial(const serial::LineSettings &line, int timeout_ms = 5000,
	                           const ClientSecurity &security = {});
	// Sends HELLO and waits (timeout_ms) for the reply; *relay_path: where the
	// relay writes the session (relative to its output directory).
	std::string hello(const Hello &h, std::string *relay_path = nullptr, int timeout_ms = 5000);
	std::string add_trace(uint32_t id, const std::string &path);
	std::string append_metadata(uint32_t trace_id, std::string_view text);
	std::string add_stream(uint32_t id, uint32_t trace_id, const std::string &file);
	std::string send_packet(uint32_t stream_id, const PacketIndex &index, std::span<const uint8_t> bytes);
	std::string beacon(uint32_t stream_id, uint64_t timestamp);
	std::string close_stream(uint32_t stream_id);
	// The stream (declared, no packet yet) written as a ring of files (StreamFiles).
	std::string stream_files(uint32_t stream_id, uint64_t size, uint64_t count);
	// Rotation: the trace (its streams closed) moved into the session's archives/ARCHIVE/.
	std::string archive_trace(uint32_t trace_id, const std::string &archive);
	// Sends SYNC and waits (timeout_ms) for the relay's answer: everything
	// sent before is written; *packets_written: the session's packets on the
	// relay's disk so far.
	std::string sync(uint64_t *packets_written = nullptr, int timeout_ms = 10000);
	// Sends DROP_UNWRITTEN and waits (timeout_ms) for the relay's final
	// answer: *packets_written, the session's packets on its disk, all it
	// will ever write of this connection (the relay then closes it).
	// Answers to earlier request_sync() calls go to on_sync_reply meanwhile:
	// token must be newer than theirs.
	std::string drop_unwritten(uint64_t token, uint64_t *packets_written, int timeout_ms);
	// Sends SYNC without waiting for the answer, which poll_notices()
	// passes to on_sync_reply.
	std::string request_sync(uint64_t token);
	// Reads what the relay sent unasked (NOTICEs, SYNC_REPLYs to
	// request_sync), waiting at most timeout_ms for the first bytes.
	std::string poll_notices(int timeout_ms = 0);
	// Each NOTICE the relay sends, when it is read.
	std::function<void(const Notice &)> on_notice;
	// Each SYNC_REPLY to a request_sync(), when it is read.
	std::function<void(const SyncReply &)> on_sync_reply;
	// Sends BYE and closes.
	std::string bye();
	void close();
	bool connected() const { return static_cast<bool>(fd_); }
	// Raw bytes, for tests that play a hostile sender.
	std::string send_raw(std::span<const uint8_t> bytes);

private:
	std::string send_frame(const Frame &f);
	// Sends `request` (SYNC or DROP_UNWRITTEN, `name`) and reads its SYNC_REPLY,
	// which must carry `token`; its packets_written into *packets_written.
	std::string exchange_for_sync_reply(const Frame &request, const char *name, uint64_t token,
	                                    uint64_t *packets_written, int timeout_ms);
	std::string fail(std::string why);
	// Reads the relay's frames until one of type `want` (into out), passing
	// NOTICEs to on_notice; without `want`, until none is waiting.
	std::string read_reply(std::optional<Type> want, Frame &out, int timeout_ms);
	// Sends every byte of the pieces, in clear or through TLS, waiting on a
	// relay that holds this sender.
	std::string send_pieces(std::initializer_list<std::span<const uint8_t>> pieces);
	// A send that began at `started` has had nothing taken for
	// kSendTimeoutMs: reads the relay's frames, then "" to wait on (it holds
	// this sender, for less than kHeldSendLimitMs), or why the send fails
	// (the connection closed).
	std::string still_held(std::chrono::steady_clock::time_point started);
	// The challenge-response of control/auth.hpp, before HELLO.
	std::string authenticate(const auth::Key &key, int timeout_ms);

	base::Fd fd_;
	tls::Channel tls_;                           // when the connection is TLS
	std::unique_ptr<serial::SenderLink> serial_; // when it goes over a serial line: fd_ is its socket
	Decoder in_;
	uint64_t sync_token_ = 0;
	// What the relay's NOTICEs said last: it does not read this sender while
	// either holds.
	bool relay_behind_ = false, relay_refused_ = false;
};

} // namespace tracery::control::relay
