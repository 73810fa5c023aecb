// relay/viewer_gate.hpp — the way into tracery-relayd's authenticated viewer
// port (--viewer-port; docs/relay-protocol.md, *Live viewers*). A viewer's
// connection passes its gate before it may speak lttng-live: the TLS
// handshake when the relay has a certificate, then the challenge–response of
// control/auth.hpp for the live viewer service, with the senders' keys,
// carried in the relay protocol's AUTH_REQUEST ... AUTH_RESULT frames. Once
// admitted, its key name is its identity (it sees the live sessions sent
// under that name) and the gate is its transport: TLS, or the socket as is.
// Everything before admission is bounded: at most kMaxAuthBytes of frames,
// and nothing may follow AUTH_RESPONSE before the viewer has read
// AUTH_RESULT.
#pragma once

#include "control/auth.hpp"
#include "control/relay_protocol.hpp"
#include "control/tls.hpp"

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

namespace tracery::relay {

class ViewerGate {
public:
	// The most bytes a viewer may send before it is admitted (its two frames
	// take some 150).
	static constexpr size_t kMaxAuthBytes = 4096;

	// fd: the connection's socket (non-blocking, not owned); tls: the
	// relay's (a server's) or none.
	ViewerGate(std::shared_ptr<const control::auth::Keyring> keys, const control::tls::Context &tls, int fd);

	enum class Step {
		waiting,  // for more bytes from the viewer
		admitted, // identity() is its key name
		closed,   // why() says why, for the log (a refusal was sent when there was one)
	};
	// Reads what the socket has and answers it.
	Step advance();
	const std::string &identity() const { return identity_; }
	const std::string &why() const { return why_; }
	// "" or " over TLSv1.3 ..." (for the log).
	std::string over() const;

	// Once admitted, as recv(2) and send(2) on the non-blocking socket:
	// bytes (> 0), 0 when the viewer closed (recv), -1 with errno (EAGAIN:
	// not now; EPROTO: TLS failed, why() says how). With TLS, recv needs
	// room for a whole record (control::tls::kMaxRecord) so that nothing
	// decrypted waits unseen by epoll, and send takes at most one record's
	// bytes at a time; after EAGAIN, send is called again with the same
	// bytes.
	ssize_t recv(void *buf, size_t n);
	ssize_t send(const void *buf, size_t n);
	bool tls() const { return static_cast<bool>(tls_); }

private:
	Step fail(std::string why);
	// Sends a frame whole during the exchange (small: the socket takes it).
	bool reply(const control::relay::Frame &f);
	Step on_frame(const control::relay::Frame &f);

	std::shared_ptr<const control::auth::Keyring> keys_;
	int fd_;
	control::tls::Channel tls_;
	control::relay::Decoder decoder_;
	size_t received_ = 0; // bytes before admission
	std::unique_ptr<control::auth::ServerExchange> exchange_;
	std::string identity_, why_;
	bool admitted_ = false;
};

} // namespace tracery::relay
