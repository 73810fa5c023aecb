// control/relay_connection.cpp — RelayConnection: TCP connect with a
// timeout, then TLS and authentication when asked, frames checked then sent
// whole (in clear, a packet as its head and its bytes in one sendmsg), the
// relay's frames (HELLO_REPLY, SYNC_REPLY, NOTICE, AUTH_*) read with the
// relay protocol's decoder.
#include "control/relay_connection.hpp"

#include "base/cat.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace tracery::control::relay {

namespace {

using base::cat;

// Sends the iovecs' bytes (blocking socket), advancing iov and count past
// what was sent: "" and *stalled false once all is sent, or *stalled true
// when the relay took nothing for kSendTimeoutMs; else why it failed.
std::string send_all(int fd, iovec *&iov, int &count, bool *stalled)
{
	*stalled = false;
	while (count > 0) {
		msghdr msg{};
		msg.msg_iov = iov;
		msg.msg_iovlen = static_cast<size_t>(count);
		ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				*stalled = true;
				return {};
			}
			return cat("send: ", std::strerror(errno));
		}
		while (count > 0 && static_cast<size_t>(n) >= iov->iov_len) {
			n -= static_cast<ssize_t>(iov->iov_len);
			++iov;
			--count;
		}
		if (count > 0) {
			iov->iov_base = static_cast<char *>(iov->iov_base) + n;
			iov->iov_len -= static_cast<size_t>(n);
		}
	}
	return {};
}

} // namespace

std::string RelayConnection::fail(std::string why)
{
	fd_.reset(); // a serial link's thread ends once its socket closes
	if (serial_)
		if (const std::string link = serial_->finish(); !link.empty())
			why = cat(why, " (", link, ")");
	close();
	return why;
}

void RelayConnection::close()
{
	tls_ = tls::Channel();
	fd_.reset();
	serial_.reset();
	in_ = Decoder();
	relay_behind_ = relay_refused_ = false;
}

std::string connect_tcp(const std::string &host, uint16_t port, int timeout_ms, base::Fd &out)
{
	out.reset();
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	addrinfo *res = nullptr;
	const std::string service = std::to_string(port);
	if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
		return cat(host, ": ", gai_strerror(rc));
	std::string why = cat(host, ":", service, ": no address");
	for (addrinfo *a = res; a; a = a->ai_next) {
		base::Fd fd(::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
		if (!fd)
			continue;
		if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
			if (errno != EINPROGRESS) {
				why = cat(host, ":", service, ": ", std::strerror(errno));
				continue;
			}
			pollfd p{fd.get(), POLLOUT, 0};
			int err = 0;
			socklen_t len = sizeof err;
			if (::poll(&p, 1, timeout_ms) != 1) {
				why = cat(host, ":", service, ": connection timed out");
				continue;
			}
			::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
			if (err != 0) {
				why = cat(host, ":", service, ": ", std::strerror(err));
				continue;
			}
		}
		// Blocking from here on.
		::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
		const int one = 1;
		::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		out = std::move(fd);
		why.clear();
		break;
	}
	::freeaddrinfo(res);
	return why;
}

std::string RelayConnection::connect(const std::string &host, uint16_t port, int timeout_ms,
                                     const ClientSecurity &security)
{
	close();
	if (std::string why = connect_tcp(host, port, timeout_ms, fd_); !why.empty())
		return why;
	// A relay that takes nothing for this long fails the send (the sender thread must not hang on it).
	const timeval send_timeout{kSendTimeoutMs / 1000, 0};
	::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
	if (security.tls) {
		// TLS waits with poll (tls.hpp): the socket is non-blocking.
		::fcntl(fd_.get(), F_SETFL, ::fcntl(fd_.get(), F_GETFL) | O_NONBLOCK);
		if (std::string why = tls::Channel::client(security.tls, fd_.get(), host, &tls_); !why.empty())
			return fail(std::move(why));
		if (std::string why = tls_.handshake_wait(timeout_ms); !why.empty())
			return fail(why == "TLS handshake: the peer closed the connection"
			                    ? cat(why, " (a relay without --tls-cert closes TLS connections)")
			                    : why);
	}
	if (security.key)
		return authenticate(*security.key, timeout_ms);
	return {};
}

std::string RelayConnection::connect_serial(const serial::LineSettings &line, int timeout_ms,
                                            const ClientSecurity &security)
{
	close();
	if (security.tls)
		return "TLS is not used over a serial line (a line joins two machines alone): authenticate with a key";
	if (std::string why = serial::SenderLink::open(line, timeout_ms, &serial_, &fd_); !why.empty())
		return why;
	const timeval send_timeout{kSendTimeoutMs / 1000, 0};
	::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
	if (security.key)
		return authenticate(*security.key, timeout_ms);
	return {};
}

std::string RelayConnection::authenticate(const auth::Key &key, int timeout_ms)
{
	auth::ClientExchange exchange(auth::Service::relay_sender, key, tls_ ? tls_.binding() : std::vector<uint8_t>{});
	AuthRequest request;
	if (std::string why = exchange.request(&request.request); !why.empty())
		return fail(std::move(why));
	if (std::string why = send_frame(request); !why.empty())
		return fail(std::move(why));
	Frame f;
	if (std::string why = read_reply(Type::auth_challenge, f, timeout_ms); !why.empty())
		return why;
	if (const auto *refused = std::get_if<AuthResult>(&f))
		return fail(cat("the relay refused to authenticate the key ", key.name, ": ", refused->text));
	if (const auto *refused = std::get_if<HelloReply>(&f))
		return fail(cat("the relay refused the connection: ", refused->text));
	AuthResponse response;
	if (std::string why = exchange.respond(std::get<AuthChallenge>(f).challenge, &response.response); !why.empty())
		return fail(std::move(why));
	if (std::string why = send_frame(response); !why.empty())
		return fail(std::move(why));
	if (std::string why = read_reply(Type::auth_result, f, timeout_ms); !why.empty())
		return why;
	const auto &result = std::get<AuthResult>(f);
	if (std::string why = exchange.check(result.result); !why.empty())
		return fail(result.text.empty() ? why : cat(why, ": ", result.text));
	return {};
}

std::string RelayConnection::still_held(std::chrono::steady_clock::time_point started)
{
	// What the relay said meanwhile tells whether it holds this sender (then
	// it reads again once its disk takes the writes) or is stuck.
	if (std::string why = poll_notices(0); !why.empty())
		return why;
	if (!relay_behind_ && !relay_refused_)
		return fail(cat("send: the relay took nothing for ", std::to_string(kSendTimeoutMs / 1000), " s"));
	if (std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(kHeldSendLimitMs))
		return fail(
			cat("send: the relay held this sender for ", std::to_string(kHeldSendLimitMs / 1000), " s"));
	return {};
}

std::string RelayConnection::send_pieces(std::initializer_list<std::span<const uint8_t>> pieces)
{
	if (!fd_)
		return "not connected";
	const auto started = std::chrono::steady_clock::now();
	if (tls_) {
		for (const auto piece : pieces) {
			for (;;) {
				const tls::Io io = tls_.write_wait(piece, kSendTimeoutMs);
				if (io == tls::Io::done)
					break;
				if (io == tls::Io::closed)
					return fail("send: the relay closed the connection");
				if (io == tls::Io::error)
					return fail(tls_.error());
				// The same bytes are written again once the relay reads.
				if (std::string why = still_held(started); !why.empty())
					return why;
			}
		}
		return {};
	}
	iovec iov[2];
	int count = 0;
	for (const auto piece : pieces)
		iov[count++] = {const_cast<uint8_t *>(piece.data()), piece.size()};
	iovec *next = iov;
	for (;;) {
		bool stalled = false;
		if (std::string why = send_all(fd_.get(), next, count, &stalled); !why.empty())
			return fail(std::move(why));
		if (!stalled)
			return {};
		if (std::string why = still_held(started); !why.empty())
			return why;
	}
}

std::string RelayConnection::send_raw(std::span<const uint8_t> bytes) { return send_pieces({bytes}); }

std::string RelayConnection::send_frame(const Frame &f)
{
	if (std::string why = frame_error(f); !why.empty())
		return why; // ours: the connection stays as it was
	return send_raw(encode(f));
}

std::string RelayConnection::hello(const Hello &h, std::string *relay_path, int timeout_ms)
{
	if (std::string why = send_frame(h); !why.empty())
		return why;
	Frame f;
	if (std::string why = read_reply(Type::hello_reply, f, timeout_ms); !why.empty())
		return why;
	const auto &r = std::get<HelloReply>(f);
	if (!r.accepted)
		return fail(cat("the relay refused the session: ", r.text));
	if (relay_path)
		*relay_path = r.text;
	return {};
}

std::string RelayConnection::sync(uint64_t *packets_written, int timeout_ms)
{
	const uint64_t token = ++sync_token_;
	return exchange_for_sync_reply(Sync{token}, "SYNC", token, packets_written, timeout_ms);
}

std::string RelayConnection::drop_unwritten(uint64_t token, uint64_t *packets_written, int timeout_ms)
{
	sync_token_ = token; // its answer is the one read_reply waits for
	return exchange_for_sync_reply(DropUnwritten{token}, "DROP_UNWRITTEN", token, packets_written, timeout_ms);
}

std::string RelayConnection::exchange_for_sync_reply(const Frame &request, const char *name, uint64_t token,
                                                     uint64_t *packets_written, int timeout_ms)
{
	if (std::string why = send_frame(request); !why.empty())
		return why;
	Frame f;
	if (std::string why = read_reply(Type::sync_reply, f, timeout_ms); !why.empty())
		return why;
	const auto &r = std::get<SyncReply>(f);
	if (r.token != token)
		return fail(cat("the relay answered ", name, " ", std::to_string(token), " with the token ",
		                std::to_string(r.token)));
	if (packets_written)
		*packets_written = r.packets_written;
	return {};
}

std::string RelayConnection::request_sync(uint64_t token) { return send_frame(Sync{token}); }

std::string RelayConnection::poll_notices(int timeout_ms)
{
	Frame f;
	return read_reply(std::nullopt, f, timeout_ms);
}

std::string RelayConnection::read_reply(std::optional<Type> want, Frame &out, int timeout_ms)
{
	if (!fd_)
		return "not connected";
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	uint8_t buf[4096];
	for (;;) {
		const Decoder::Status st = in_.next(out);
		if (st == Decoder::Status::error)
			return fail(cat("the relay's reply: ", in_.error()));
		if (st == Decoder::Status::frame) {
			if (const auto *n = std::get_if<Notice>(&out)) {
				if (n->kind == NoticeKind::writes_behind || n->kind == NoticeKind::caught_up)
					relay_behind_ = n->kind == NoticeKind::writes_behind;
				else
					relay_refused_ = n->kind == NoticeKind::write_failed;
				if (on_notice)
					on_notice(*n);
				continue;
			}
			// The answer to a SYNC sent without waiting (request_sync).
			if (const auto *r = std::get_if<SyncReply>(&out);
			    r && on_sync_reply && (!want || r->token != sync_token_)) {
				on_sync_reply(*r);
				continue;
			}
			// A relay that will not authenticate answers the request with its refusal.
			const bool refused_auth =
				want == Type::auth_challenge &&
				(std::holds_alternative<AuthResult>(out) || std::holds_alternative<HelloReply>(out));
			if (!refused_auth && (!want || type_of(out) != *want))
				return fail(
					cat("the relay sent ", type_name(static_cast<uint16_t>(type_of(out))),
				            want ? cat(" where ", type_name(static_cast<uint16_t>(*want)), " was due")
				                 : std::string(" unasked")));
			return {};
		}
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now());
		const int wait_ms = static_cast<int>(std::max<int64_t>(left.count(), 0));
		ssize_t n = 0;
		if (tls_) {
			size_t got = 0;
			const tls::Io io = tls_.read_wait(buf, sizeof buf, &got, wait_ms);
			if (io == tls::Io::error)
				return fail(tls_.error());
			n = io == tls::Io::done ? static_cast<ssize_t>(got) : io == tls::Io::closed ? 0 : -1;
		} else {
			pollfd p{fd_.get(), POLLIN, 0};
			const int ready = ::poll(&p, 1, wait_ms);
			if (ready < 0 && errno == EINTR)
				continue;
			n = ready == 1 ? ::recv(fd_.get(), buf, sizeof buf, 0) : -1;
			if (ready == 1 && n < 0 && errno == EINTR)
				continue;
			if (ready == 1 && n < 0)
				n = 0; // a failed read ends the connection as a close does
		}
		if (n < 0) { // nothing in time
			if (!want)
				return {}; // nothing more waiting
			return fail(cat("no ", type_name(static_cast<uint16_t>(*want)), " from the relay in time"));
		}
		if (n == 0)
			return fail(want ? cat("the relay closed the connection before its ",
			                       type_name(static_cast<uint16_t>(*want)))
			                 : std::string("the relay closed the connection"));
		in_.feed({buf, static_cast<size_t>(n)});
		if (!want) // what arrived is read; no more waiting
			deadline = std::chrono::steady_clock::now();
	}
}

std::string RelayConnection::add_trace(uint32_t id, const std::string &path) { return send_frame(Trace{id, path}); }

std::string RelayConnection::append_metadata(uint32_t trace_id, std::string_view text)
{
	return send_frame(Metadata{trace_id, std::string(text)});
}

std::string RelayConnection::add_stream(uint32_t id, uint32_t trace_id, const std::string &file)
{
	return send_frame(Stream{id, trace_id, file});
}

std::string RelayConnection::send_packet(uint32_t stream_id, const PacketIndex &index, std::span<const uint8_t> bytes)
{
	if (!fd_)
		return "not connected";
	if (std::string why = packet_error(index, bytes.size()); !why.empty())
		return why;
	if (bytes.size() > kMaxBody - kPacketFixed)
		return "PACKET: larger than a frame may be";
	std::vector<uint8_t> head;
	append_packet_head(head, stream_id, index, bytes.size());
	return send_pieces({head, bytes});
}

std::string RelayConnection::beacon(uint32_t stream_id, uint64_t timestamp)
{
	return send_frame(Beacon{stream_id, timestamp});
}

std::string RelayConnection::close_stream(uint32_t stream_id) { return send_frame(CloseStream{stream_id}); }

std::string RelayConnection::stream_files(uint32_t stream_id, uint64_t size, uint64_t count)
{
	return send_frame(StreamFiles{stream_id, size, count});
}

std::string RelayConnection::archive_trace(uint32_t trace_id, const std::string &archive)
{
	return send_frame(ArchiveTrace{trace_id, archive});
}

std::string RelayConnection::bye()
{
	std::string why = send_frame(Bye{});
	if (tls_)
		tls_.shutdown();
	close();
	return why;
}

} // namespace tracery::control::relay
