// relay/sender_gate.cpp — a sender's way into tracery-relayd (see
// sender_gate.hpp): the TLS handshake on the non-blocking socket, the
// server's side of the challenge–response, HELLO refused to a sender that
// has not authenticated where the relay requires it, and the per-sender
// counts of open sessions and of directories made.
#include "relay/sender_gate.hpp"

#include "base/byte_order.hpp"
#include "base/cat.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace tracery::relay {

namespace cr = control::relay;
namespace auth = control::auth;
namespace tls = control::tls;
using base::cat;

namespace {

// "1.2.3.4:5" → "1.2.3.4", "::1:5" → "::1".
std::string address_of(const std::string &peer)
{
	const size_t colon = peer.rfind(':');
	return colon == std::string::npos ? peer : peer.substr(0, colon);
}

const char kAuthRefused[] = "authentication refused";

} // namespace

bool is_loopback(const std::string &address)
{
	in_addr v4{};
	in6_addr v6{};
	if (inet_pton(AF_INET, address.c_str(), &v4) == 1)
		return (ntohl(v4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, address.c_str(), &v6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&v6) ||
		       (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127); // ::ffff:127.x.x.x
	return false;
}

std::string check_policy(const std::string &listen, const SenderPolicy &policy)
{
	if (policy.keys || policy.allow_unauthenticated || is_loopback(listen))
		return {};
	return cat("--listen ", listen,
	           " reaches beyond loopback, and without --auth-keys anyone who reaches it could send sessions: "
	           "give --auth-keys FILE (lines `NAME SECRET`, the secret from `openssl rand -hex 32`, the same "
	           "key given to each sender with `tracery create --relay-key`), or --allow-unauthenticated to "
	           "take any sender on purpose");
}

SenderGate::SenderGate(const SenderPolicy &policy, int fd, const std::string &peer)
	: policy_(policy), fd_(fd), address_(address_of(peer)), sender_(cat("address ", address_))
{
	if (policy_.tls && !(error_ = tls::Channel::server(policy_.tls, fd_, &tls_)).empty())
		tls_ = tls::Channel(); // recv() then fails with error_
}

ssize_t SenderGate::handshake()
{
	if (!tls_) {
		errno = EPROTO;
		return -1;
	}
	// A sender speaking the protocol in clear to a TLS relay: told so, in
	// clear (its first bytes, looked at before TLS reads any).
	uint8_t magic[4];
	const ssize_t peeked = handshake_started_ ? -1 : ::recv(fd_, magic, sizeof magic, MSG_PEEK);
	if (peeked == static_cast<ssize_t>(sizeof magic) && base::load_le<uint32_t>(magic) == cr::kMagic) {
		const auto bytes = cr::encode(cr::HelloReply{
			.accepted = false,
			.text = "this relay takes TLS connections only: give the sender the CA of the relay's "
				"certificate (tracery create --relay-ca FILE)"});
		[[maybe_unused]] const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
		error_ = "refused: a sender in clear where TLS is required (--tls-cert)";
		errno = EPROTO;
		return -1;
	}
	if (peeked == 0)
		return 0;
	if (!handshake_started_ && peeked < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		errno = EAGAIN; // nothing yet
		return -1;
	}
	handshake_started_ = true;
	switch (tls_.handshake()) {
	case tls::Io::done:
		return 1;
	case tls::Io::want_read:
		errno = EAGAIN;
		return -1;
	case tls::Io::want_write:
		// The handshake's replies are a few KiB, which an empty socket takes:
		// a sender whose socket is full reads nothing.
		error_ = "TLS handshake: the sender does not read what it is sent";
		errno = EPROTO;
		return -1;
	case tls::Io::closed:
		return 0;
	case tls::Io::error:
		break;
	}
	error_ = cat(tls_.error(), " (a sender without the relay's CA, tracery create --relay-ca, or not TLS)");
	errno = EPROTO;
	return -1;
}

ssize_t SenderGate::recv(void *buf, size_t n)
{
	if (!policy_.tls)
		return ::recv(fd_, buf, n, 0);
	if (!tls_.handshake_done()) {
		const ssize_t r = handshake();
		if (r <= 0)
			return r;
	}
	// Whole records while they fit, so that nothing decrypted waits unseen by epoll.
	auto *out = static_cast<uint8_t *>(buf);
	size_t got = 0;
	while (n - got >= tls::kMaxRecord || (got == 0 && n > 0)) {
		size_t one = 0;
		const tls::Io io = tls_.read(out + got, n - got, &one);
		if (io == tls::Io::done) {
			got += one;
			continue;
		}
		if (got > 0)
			return static_cast<ssize_t>(got); // the rest at the next call
		if (io == tls::Io::closed)
			return 0;
		if (io == tls::Io::error) {
			error_ = tls_.error();
			errno = EPROTO;
			return -1;
		}
		errno = EAGAIN;
		return -1;
	}
	return static_cast<ssize_t>(got);
}

bool SenderGate::send(std::span<const uint8_t> bytes)
{
	if (!policy_.tls)
		return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
	return tls_.handshake_done() && tls_.write(bytes.data(), bytes.size()) == tls::Io::done;
}

bool SenderGate::reply(const cr::Frame &f) { return send(cr::encode(f)); }

std::string SenderGate::refuse_hello(const std::string &why, const std::string &text)
{
	reply(cr::HelloReply{.accepted = false, .text = text});
	return why;
}

std::string SenderGate::on_frame(const cr::Frame &f, bool *taken, std::string *log_line)
{
	*taken = true;
	if (const auto *r = std::get_if<cr::AuthRequest>(&f)) {
		if (admitted_ || exchange_)
			return "a second AUTH_REQUEST";
		if (!policy_.keys) {
			reply(cr::AuthResult{.result = {},
			                     .text = "this relay has no keys (tracery-relayd --auth-keys): send HELLO "
			                             "without authenticating"});
			return "refused: AUTH_REQUEST to a relay without --auth-keys";
		}
		exchange_ = std::make_unique<auth::ServerExchange>(auth::Service::relay_sender, *policy_.keys,
		                                                   tls_ ? tls_.binding() : std::vector<uint8_t>{});
		cr::AuthChallenge challenge;
		if (std::string why = exchange_->challenge(r->request, &challenge.challenge); !why.empty())
			return why;
		if (!reply(challenge))
			return "could not send AUTH_CHALLENGE";
		return {};
	}
	if (const auto *r = std::get_if<cr::AuthResponse>(&f)) {
		if (!exchange_ || admitted_)
			return "AUTH_RESPONSE out of turn";
		cr::AuthResult result;
		const std::string why = exchange_->answer(r->response, &result.result);
		if (!why.empty()) {
			result.text = kAuthRefused; // the same whatever was wrong
			reply(result);
			return why;
		}
		if (!reply(result))
			return "could not send AUTH_RESULT";
		admitted_ = true;
		key_name_ = exchange_->key_name();
		sender_ = cat("key ", key_name_);
		*log_line = cat("authenticated as key ", exchange_->key_name(),
		                tls_ ? cat(" over ", tls_.description()) : "");
		exchange_.reset();
		return {};
	}
	if (std::holds_alternative<cr::Hello>(f)) {
		*taken = false;
		if (admitted_)
			return {};
		if (exchange_)
			return refuse_hello("refused: HELLO in the middle of authentication", kAuthRefused);
		if (policy_.keys && !policy_.allow_unauthenticated)
			return refuse_hello("refused: HELLO without authentication (this relay has --auth-keys)",
			                    "this relay takes authenticated senders only: give the sender a key the "
			                    "relay knows (tracery create --relay-key FILE)");
		admitted_ = true; // counted by its address
		return {};
	}
	*taken = false;
	return {}; // anything else before HELLO: the session's writer refuses it
}

std::string SenderLimits::open_session(SenderGate &gate, const SenderPolicy &policy, Clock::time_point now)
{
	forget_expired(policy, now);
	auto it = by_sender_.find(gate.sender());
	if (it == by_sender_.end()) {
		if (by_sender_.size() >= kMaxSenders)
			return cat("refused: already ", std::to_string(kMaxSenders),
			           " senders with sessions open or made within the hour");
		it = by_sender_.emplace(gate.sender(), Counts{}).first;
	}
	Counts &c = it->second;
	if (c.open >= policy.max_sessions_per_sender)
		return cat("refused: ", gate.sender(), " already has ", std::to_string(c.open),
		           " sessions open, the most a sender may (--max-sessions-per-sender)");
	if (c.made.size() >= policy.max_dirs_per_sender)
		return cat("refused: ", gate.sender(), " made ", std::to_string(c.made.size()),
		           " session directories within ", std::to_string(policy.dir_window.count()),
		           " s, the most a sender may (--max-dirs-per-sender)");
	c.open++;
	c.made.push_back(now);
	gate.counted = true;
	return {};
}

void SenderLimits::close_session(SenderGate &gate)
{
	if (!gate.counted)
		return;
	gate.counted = false;
	const auto it = by_sender_.find(gate.sender());
	if (it != by_sender_.end() && it->second.open > 0)
		it->second.open--;
}

size_t SenderLimits::open_sessions(const std::string &sender) const
{
	const auto it = by_sender_.find(sender);
	return it == by_sender_.end() ? 0 : it->second.open;
}

void SenderLimits::forget_expired(const SenderPolicy &policy, Clock::time_point now)
{
	for (auto it = by_sender_.begin(); it != by_sender_.end();) {
		auto &made = it->second.made;
		while (!made.empty() && now - made.front() >= policy.dir_window)
			made.pop_front();
		if (it->second.open == 0 && made.empty())
			it = by_sender_.erase(it);
		else
			++it;
	}
}

} // namespace tracery::relay
