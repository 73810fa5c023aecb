// Control protocol framing: see wire.hpp.
#include "control/wire.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace tracery::control {

namespace {

struct Header {
	uint32_t magic;
	uint16_t version;
	uint16_t kind;
	uint32_t length;
};
static_assert(sizeof(Header) == kHeaderSize);

bool make_address(const std::string &path, sockaddr_un &addr)
{
	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	if (path.size() >= sizeof addr.sun_path) {
		errno = ENAMETOOLONG;
		return false;
	}
	memcpy(addr.sun_path, path.c_str(), path.size() + 1);
	return true;
}

} // namespace

const char *kind_name(Kind kind) { return kind == Kind::command ? "command" : "program"; }

std::string encode_frame(Kind kind, std::string_view body)
{
	const Header h{kMagic, kProtocolVersion, static_cast<uint16_t>(kind), static_cast<uint32_t>(body.size())};
	std::string frame(reinterpret_cast<const char *>(&h), sizeof h);
	frame += body;
	return frame;
}

ssize_t send_some(int sock, std::string_view bytes, std::span<const int> fds, int flags)
{
	if (fds.size() > kMaxFds) {
		errno = EMSGSIZE;
		return -1;
	}
	iovec iov{const_cast<char *>(bytes.data()), bytes.size()};
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (!fds.empty()) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
		memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
	}
	ssize_t r;
	do
		r = sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
	while (r < 0 && errno == EINTR);
	return r;
}

bool send_message(int sock, Kind kind, const json &body, std::span<const int> fds)
{
	const std::string text = body.dump();
	if (text.size() > kPeerLimits.max_body(kind)) {
		errno = EMSGSIZE;
		return false;
	}
	const std::string frame = encode_frame(kind, text);
	for (size_t sent = 0; sent < frame.size();) {
		// Descriptors go with the first bytes.
		const ssize_t r =
			send_some(sock, std::string_view(frame).substr(sent), sent ? std::span<const int>() : fds);
		if (r < 0)
			return false;
		sent += static_cast<size_t>(r);
	}
	return true;
}

void FrameDecoder::expect(Kind kind)
{
	expect_set_ = true;
	expected_ = kind;
}

FrameDecoder::State FrameDecoder::fail(std::string why)
{
	error_ = std::move(why);
	state_ = State::error;
	body_ = std::string();
	fds_.clear();
	return state_;
}

std::span<char> FrameDecoder::space()
{
	if (state_ == State::header)
		return {header_.data() + got_, kHeaderSize - got_};
	if (state_ != State::body)
		return {};
	// Grow with what arrives (at most doubling it), not with what the
	// header claims: a peer that claims 16 MiB and sends nothing costs 64 KiB.
	if (got_ == body_.size())
		body_.resize(std::min<size_t>(length_, std::max<size_t>(got_ * 2, 64 * 1024)));
	return {body_.data() + got_, body_.size() - got_};
}

std::optional<Kind> header_kind(const char *header)
{
	Header h;
	memcpy(&h, header, sizeof h);
	if (h.magic != kMagic || h.version != kProtocolVersion ||
	    (h.kind != static_cast<uint16_t>(Kind::command) && h.kind != static_cast<uint16_t>(Kind::program)))
		return std::nullopt;
	return static_cast<Kind>(h.kind);
}

void FrameDecoder::check_header()
{
	Header h;
	memcpy(&h, header_.data(), sizeof h);
	if (h.magic != kMagic) {
		fail("not a tracery control message (bad magic)");
		return;
	}
	if (h.version != kProtocolVersion) {
		fail("protocol version " + std::to_string(h.version) + ", expected " +
		     std::to_string(kProtocolVersion) +
		     ": traceryd, tracery and libtracery must come from the same release");
		return;
	}
	if (h.kind != static_cast<uint16_t>(Kind::command) && h.kind != static_cast<uint16_t>(Kind::program)) {
		fail("unknown connection kind " + std::to_string(h.kind) + " (1: a command, 2: a program)");
		return;
	}
	kind_ = static_cast<Kind>(h.kind);
	if (expect_set_ && kind_ != expected_) {
		fail(std::string("a ") + kind_name(kind_) + " message on a " + kind_name(expected_) + " connection");
		return;
	}
	if (h.length > limits_.max_body(kind_)) {
		fail(std::string("a ") + kind_name(kind_) + " message of " + std::to_string(h.length) +
		     " bytes is over the limit of " + std::to_string(limits_.max_body(kind_)) + " bytes");
		return;
	}
	length_ = h.length;
	got_ = 0;
	state_ = length_ ? State::body : State::complete;
}

FrameDecoder::State FrameDecoder::received(size_t n, std::vector<base::Fd> fds, bool fds_truncated)
{
	if (state_ != State::header && state_ != State::body)
		return state_;
	if (!fds.empty() || fds_truncated) {
		if (!at_boundary())
			return fail("descriptors in the middle of a message");
		if (fds.size() > limits_.fds || fds_truncated)
			return fail(limits_.fds
			                    ? "more than " + std::to_string(limits_.fds) + " descriptors with a message"
			                    : std::string("descriptors are not accepted here"));
		fds_ = std::move(fds);
	}
	got_ += n;
	if (state_ == State::header) {
		if (got_ == kHeaderSize)
			check_header();
	} else if (got_ == length_) {
		state_ = State::complete;
	}
	return state_;
}

bool FrameDecoder::ended()
{
	if (at_boundary())
		return false;
	if (state_ == State::header || state_ == State::body)
		fail(state_ == State::header ? "the connection closed in the middle of a message header"
		                             : "the connection closed after " + std::to_string(got_) + " of the " +
		                                       std::to_string(length_) + " bytes of a message");
	return true;
}

Frame FrameDecoder::take()
{
	Frame out{std::move(body_), std::move(fds_)};
	body_ = std::string();
	fds_.clear();
	got_ = 0;
	length_ = 0;
	state_ = State::header;
	return out;
}

bool parse_frame(Frame &&frame, Message &out, std::string *why)
{
	out.body = json::parse(frame.body, nullptr, false);
	frame.body = std::string();
	if (out.body.is_discarded() || !out.body.is_object()) {
		if (why)
			*why = "malformed message body (not a JSON object)";
		return false;
	}
	out.fds = std::move(frame.fds);
	return true;
}

ssize_t receive(int sock, FrameDecoder &decoder, int flags)
{
	const std::span<char> space = decoder.space();
	iovec iov{space.data(), space.size()};
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (decoder.max_fds()) { // else the kernel discards descriptors sent along (MSG_CTRUNC)
		msg.msg_control = control;
		msg.msg_controllen = sizeof control;
	}
	ssize_t r;
	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return r;
	std::vector<base::Fd> fds;
	for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			fds.emplace_back(fd);
		}
	}
	if (r > 0 || !fds.empty() || (msg.msg_flags & MSG_CTRUNC))
		decoder.received(static_cast<size_t>(r), std::move(fds), msg.msg_flags & MSG_CTRUNC);
	return r;
}

RecvStatus recv_message(int sock, Kind kind, Message &out, std::string *why)
{
	out.fds.clear();
	FrameDecoder decoder(kPeerLimits);
	decoder.expect(kind);
	while (decoder.state() == FrameDecoder::State::header || decoder.state() == FrameDecoder::State::body) {
		const ssize_t r = receive(sock, decoder);
		if (r < 0) {
			if (why)
				*why = strerror(errno);
			return RecvStatus::error;
		}
		if (r == 0 && decoder.state() != FrameDecoder::State::error) {
			if (!decoder.ended())
				return RecvStatus::eof;
			break;
		}
	}
	if (decoder.state() != FrameDecoder::State::complete) {
		if (why)
			*why = decoder.error();
		return RecvStatus::error;
	}
	return parse_frame(decoder.take(), out, why) ? RecvStatus::ok : RecvStatus::error;
}

base::Fd connect_unix(const std::string &path)
{
	sockaddr_un addr;
	if (!make_address(path, addr))
		return base::Fd();
	base::Fd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!s)
		return s;
	while (connect(s.get(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
		if (errno != EINTR)
			return base::Fd();
	}
	return s;
}

base::Fd listen_unix(const std::string &path, mode_t mode)
{
	sockaddr_un addr;
	if (!make_address(path, addr))
		throw std::system_error(errno, std::generic_category(), path);
	base::Fd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!s)
		throw std::system_error(errno, std::generic_category(), "socket");
	// Bind under a temporary name and rename it into place once listening, so
	// a program watching the directory never connects to a socket that
	// refuses connections.
	const std::string tmp = path + ".tmp" + std::to_string(getpid());
	if (!make_address(tmp, addr))
		throw std::system_error(errno, std::generic_category(), tmp);
	unlink(tmp.c_str());
	if (bind(s.get(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
		throw std::system_error(errno, std::generic_category(), "bind " + tmp);
	if (chmod(tmp.c_str(), mode) != 0 || listen(s.get(), SOMAXCONN) != 0 ||
	    rename(tmp.c_str(), path.c_str()) != 0) {
		int err = errno;
		unlink(tmp.c_str());
		throw std::system_error(err, std::generic_category(), "listen on " + path);
	}
	return s;
}

bool peer_cred(int sock, PeerCred &out)
{
	ucred c{};
	socklen_t len = sizeof c;
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0)
		return false;
	out.pid = c.pid;
	out.uid = c.uid;
	out.gid = c.gid;
	return true;
}

std::string to_hex(std::string_view bytes)
{
	static const char digits[] = "0123456789abcdef";
	std::string out;
	out.reserve(bytes.size() * 2);
	for (unsigned char c : bytes) {
		out += digits[c >> 4];
		out += digits[c & 15];
	}
	return out;
}

bool from_hex(std::string_view hex, std::string &bytes)
{
	auto value = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
	if (hex.size() % 2)
		return false;
	bytes.clear();
	for (size_t i = 0; i < hex.size(); i += 2) {
		const int hi = value(hex[i]), lo = value(hex[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		bytes += static_cast<char>(hi << 4 | lo);
	}
	return true;
}

} // namespace tracery::control
