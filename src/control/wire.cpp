// Control protocol framing: see wire.hpp.
#include "control/wire.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace tracery::control {

namespace {

struct Header {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved;
	uint32_t length;
};
static_assert(sizeof(Header) == 12);

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

// Reads exactly n bytes, collecting any descriptors that come along.
RecvStatus read_full(int sock, void *buf, size_t n, std::vector<base::Fd> &fds, bool eof_ok)
{
	size_t done = 0;
	while (done < n) {
		iovec iov{static_cast<char *>(buf) + done, n - done};
		alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
		msghdr msg{};
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control;
		msg.msg_controllen = sizeof control;
		ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return RecvStatus::error;
		}
		for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < count; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
				fds.emplace_back(fd);
			}
		}
		if (r == 0) {
			if (done == 0 && eof_ok)
				return RecvStatus::eof;
			errno = ECONNRESET;
			return RecvStatus::error;
		}
		done += static_cast<size_t>(r);
	}
	return RecvStatus::ok;
}

} // namespace

bool send_message(int sock, const json &body, std::span<const int> fds)
{
	const std::string text = body.dump();
	if (text.size() > kMaxBody || fds.size() > kMaxFds) {
		errno = EMSGSIZE;
		return false;
	}
	Header h{kMagic, kProtocolVersion, 0, static_cast<uint32_t>(text.size())};
	iovec iov[2] = {{&h, sizeof h}, {const_cast<char *>(text.data()), text.size()}};
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
	msghdr msg{};
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	if (!fds.empty()) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
		memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
	}
	size_t total = sizeof h + text.size(), sent = 0;
	while (sent < total) {
		ssize_t r = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		sent += static_cast<size_t>(r);
		// Descriptors went with the first bytes; advance the iovecs.
		msg.msg_control = nullptr;
		msg.msg_controllen = 0;
		size_t skip = static_cast<size_t>(r);
		while (msg.msg_iovlen && skip >= msg.msg_iov->iov_len) {
			skip -= msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen) {
			msg.msg_iov->iov_base = static_cast<char *>(msg.msg_iov->iov_base) + skip;
			msg.msg_iov->iov_len -= skip;
		}
	}
	return true;
}

RecvStatus recv_message(int sock, Message &out, std::string *why)
{
	out.fds.clear();
	Header h{};
	RecvStatus st = read_full(sock, &h, sizeof h, out.fds, true);
	if (st != RecvStatus::ok) {
		if (st == RecvStatus::error && why)
			*why = strerror(errno);
		return st;
	}
	if (h.magic != kMagic) {
		if (why)
			*why = "not a tracery control message (bad magic)";
		return RecvStatus::error;
	}
	if (h.version != kProtocolVersion) {
		if (why)
			*why = "protocol version " + std::to_string(h.version) + ", expected " +
			       std::to_string(kProtocolVersion) +
			       ": traceryd, tracery and libtracery must come from the same release";
		return RecvStatus::error;
	}
	if (h.length > kMaxBody) {
		if (why)
			*why = "message of " + std::to_string(h.length) + " bytes is too large";
		return RecvStatus::error;
	}
	std::string text(h.length, '\0');
	if (read_full(sock, text.data(), text.size(), out.fds, false) != RecvStatus::ok) {
		if (why)
			*why = std::string("truncated message: ") + strerror(errno);
		return RecvStatus::error;
	}
	out.body = json::parse(text, nullptr, false);
	if (out.body.is_discarded() || !out.body.is_object()) {
		if (why)
			*why = "malformed message body";
		return RecvStatus::error;
	}
	return RecvStatus::ok;
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
	if (chmod(tmp.c_str(), mode) != 0 || listen(s.get(), 128) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
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
