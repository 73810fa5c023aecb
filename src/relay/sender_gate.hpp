// relay/sender_gate.hpp — who may send sessions to tracery-relayd, and how
// many (docs/relay-protocol.md, *Authentication* and *Who can do what*).
// A sender's connection passes its gate before HELLO: the TLS handshake
// when the relay has a certificate, then the challenge–response of
// control/auth.hpp (AUTH_REQUEST ... AUTH_RESULT) when it has keys. Only
// then is HELLO taken, and then only within the sender's limits: sessions
// open at once and session directories made per hour, counted per key name
// (per address for a sender that did not authenticate), never from what
// HELLO says (its host name and creation time are the sender's word).
#pragma once

#include "control/auth.hpp"
#include "control/relay_protocol.hpp"
#include "control/tls.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>

namespace tracery::relay {

// What the relay asks of its senders (tracery-relayd's options).
struct SenderPolicy {
	std::shared_ptr<const control::auth::Keyring> keys; // --auth-keys: senders authenticate
	control::tls::Context tls;                          // --tls-cert/--tls-key: senders use TLS
	bool allow_unauthenticated = false;                 // --allow-unauthenticated: senders without a key too
	size_t max_sessions_per_sender = 64;                // open at once
	size_t max_dirs_per_sender = 256;                   // session directories made per window
	std::chrono::seconds dir_window{3600};              // that window
};

// "" or why the relay must not start so: listening beyond loopback with no
// keys, unless unauthenticated senders are allowed outright.
std::string check_policy(const std::string &listen, const SenderPolicy &policy);
// Whether an address (as --listen takes it) is on loopback only.
bool is_loopback(const std::string &address);

// One sender connection's way in: TLS, authentication, then HELLO.
class SenderGate {
public:
	// fd: the connection's socket (non-blocking, not owned); peer: "ADDRESS:PORT".
	SenderGate(const SenderPolicy &policy, int fd, const std::string &peer);

	// As recv(2) on the socket, through TLS when it is on: bytes read (> 0),
	// 0 when the sender closed, -1 with errno (EAGAIN: nothing yet; EPROTO:
	// TLS failed, error() says why). With TLS it fills buf with whole records
	// while the socket has them, leaving nothing decrypted unread.
	ssize_t recv(void *buf, size_t n);
	// Sends bytes whole, or false (the sender does not read what it is sent).
	bool send(std::span<const uint8_t> bytes);
	const std::string &error() const { return error_; }

	// A frame read before the session's HELLO was taken: AUTH_* frames are
	// the gate's (*taken set, answered here); HELLO is let through once the
	// sender is admitted (*taken unset). "" or why the connection closes
	// (the refusal already sent); *log_line: a line for the log, if any.
	std::string on_frame(const control::relay::Frame &f, bool *taken, std::string *log_line);
	// Whom the limits count: "key NAME" or "address ADDRESS".
	const std::string &sender() const { return sender_; }
	// The key name it authenticated with, or "" (live viewers of that key see its sessions).
	const std::string &key_name() const { return key_name_; }
	// A session of this connection is counted in SenderLimits.
	bool counted = false;

private:
	bool reply(const control::relay::Frame &f);
	std::string refuse_hello(const std::string &why, const std::string &text);
	ssize_t handshake();

	const SenderPolicy &policy_;
	int fd_;
	std::string address_, sender_, key_name_, error_;
	control::tls::Channel tls_;
	std::unique_ptr<control::auth::ServerExchange> exchange_;
	bool admitted_ = false;
	bool handshake_started_ = false;
};

// The per-sender limits, one for the relay.
class SenderLimits {
public:
	using Clock = std::chrono::steady_clock;
	static constexpr size_t kMaxSenders = 65536; // senders remembered at once

	// At a HELLO: "" and the session counted (gate.counted set), or why it is refused.
	std::string open_session(SenderGate &gate, const SenderPolicy &policy, Clock::time_point now);
	// The connection of a counted session closed.
	void close_session(SenderGate &gate);
	// Sessions open by that sender now (tests).
	size_t open_sessions(const std::string &sender) const;

private:
	struct Counts {
		size_t open = 0;
		std::deque<Clock::time_point> made; // directories made within the window, oldest first
	};
	void forget_expired(const SenderPolicy &policy, Clock::time_point now);

	std::map<std::string, Counts> by_sender_;
};

} // namespace tracery::relay
