// relay/viewer_gate.cpp — a viewer's way into the authenticated viewer port
// (see viewer_gate.hpp): the TLS handshake on the non-blocking socket, the
// server's side of the challenge–response for the live viewer service, and
// then the connection's bytes through TLS or as they are.
#include "relay/viewer_gate.hpp"

#include "base/cat.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace tracery::relay {

namespace cr = control::relay;
namespace auth = control::auth;
namespace tls = control::tls;
using base::cat;

ViewerGate::ViewerGate(std::shared_ptr<const auth::Keyring> keys, const tls::Context &tls, int fd)
	: keys_(std::move(keys)), fd_(fd)
{
	if (tls)
		why_ = tls::Channel::server(tls, fd_, &tls_); // advance() fails with it
}

ViewerGate::Step ViewerGate::fail(std::string why)
{
	why_ = std::move(why);
	return Step::closed;
}

std::string ViewerGate::over() const { return tls_ ? cat(" over ", tls_.description()) : std::string(); }

bool ViewerGate::reply(const cr::Frame &f)
{
	const std::vector<uint8_t> bytes = cr::encode(f);
	if (tls_)
		return tls_.write(bytes.data(), bytes.size()) == tls::Io::done;
	return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

ViewerGate::Step ViewerGate::advance()
{
	if (admitted_)
		return Step::admitted;
	if (!why_.empty())
		return Step::closed;
	if (tls_ && !tls_.handshake_done()) {
		switch (tls_.handshake()) {
		case tls::Io::done:
			break;
		case tls::Io::want_read:
			return Step::waiting;
		case tls::Io::want_write: // a few KiB, which an empty socket takes
			return fail("TLS handshake: the viewer does not read what it is sent");
		case tls::Io::closed:
			return fail("closed during the TLS handshake");
		case tls::Io::error:
			return fail(cat(tls_.error(), " (a viewer without the relay's CA, or not TLS: this port "
			                              "takes `tracery view --live --relay-key FILE --relay-ca FILE`)"));
		}
	}
	uint8_t buf[tls::kMaxRecord];
	for (;;) { // bounded: kMaxAuthBytes in all
		const ssize_t got = recv(buf, sizeof buf);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return Step::waiting;
		if (got < 0)
			return fail(errno == EPROTO ? why_ : cat("recv: ", std::strerror(errno)));
		if (got == 0)
			return fail("closed before it was authenticated");
		received_ += static_cast<size_t>(got);
		if (received_ > kMaxAuthBytes)
			return fail(cat("more than ", std::to_string(kMaxAuthBytes),
			                " bytes before it was authenticated (this port takes AUTH_REQUEST first)"));
		decoder_.feed({buf, static_cast<size_t>(got)});
		cr::Frame f;
		cr::Decoder::Status st;
		while ((st = decoder_.next(f)) == cr::Decoder::Status::frame)
			if (const Step step = on_frame(f); step != Step::waiting)
				return step;
		if (st == cr::Decoder::Status::error)
			return fail(cat("not an authenticated viewer (", decoder_.error(),
			                "): this port takes `tracery view --live --relay-key FILE`; babeltrace2 reads "
			                "the sessions marked public on the plain lttng-live port"));
	}
}

ViewerGate::Step ViewerGate::on_frame(const cr::Frame &f)
{
	if (const auto *r = std::get_if<cr::AuthRequest>(&f)) {
		if (exchange_)
			return fail("a second AUTH_REQUEST");
		exchange_ = std::make_unique<auth::ServerExchange>(auth::Service::live_viewer, *keys_,
		                                                   tls_ ? tls_.binding() : std::vector<uint8_t>{});
		cr::AuthChallenge challenge;
		if (std::string why = exchange_->challenge(r->request, &challenge.challenge); !why.empty())
			return fail(std::move(why));
		if (!reply(challenge))
			return fail("could not send AUTH_CHALLENGE");
		return Step::waiting;
	}
	if (const auto *r = std::get_if<cr::AuthResponse>(&f)) {
		if (!exchange_)
			return fail("AUTH_RESPONSE before AUTH_REQUEST");
		cr::AuthResult result;
		if (std::string why = exchange_->answer(r->response, &result.result); !why.empty()) {
			result.text = "authentication refused"; // the same whatever was wrong
			reply(result);
			return fail(why);
		}
		if (decoder_.buffered() > 0)
			return fail("bytes after AUTH_RESPONSE before AUTH_RESULT was read");
		if (!reply(result))
			return fail("could not send AUTH_RESULT");
		identity_ = exchange_->key_name();
		exchange_.reset();
		admitted_ = true;
		return Step::admitted;
	}
	return fail(cat(cr::type_name(static_cast<uint16_t>(cr::type_of(f))),
	                exchange_ ? " where AUTH_RESPONSE was due" : " where AUTH_REQUEST was due"));
}

ssize_t ViewerGate::recv(void *buf, size_t n)
{
	if (!tls_)
		return ::recv(fd_, buf, n, 0);
	size_t got = 0;
	switch (tls_.read(buf, std::min(n, tls::kMaxRecord), &got)) {
	case tls::Io::done:
		return static_cast<ssize_t>(got);
	case tls::Io::closed:
		return 0;
	case tls::Io::want_read:
	case tls::Io::want_write:
		errno = EAGAIN;
		return -1;
	case tls::Io::error:
		break;
	}
	why_ = tls_.error();
	errno = EPROTO;
	return -1;
}

ssize_t ViewerGate::send(const void *buf, size_t n)
{
	if (!tls_)
		return ::send(fd_, buf, n, MSG_NOSIGNAL);
	const size_t one = std::min(n, tls::kMaxRecord);
	switch (tls_.write(buf, one)) {
	case tls::Io::done:
		return static_cast<ssize_t>(one);
	case tls::Io::want_read:
	case tls::Io::want_write:
		errno = EAGAIN;
		return -1;
	case tls::Io::closed:
		errno = EPIPE;
		return -1;
	case tls::Io::error:
		break;
	}
	why_ = tls_.error();
	errno = EPROTO;
	return -1;
}

} // namespace tracery::relay
