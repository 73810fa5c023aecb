// traceryd under systemd: see systemd.hpp.
#include "daemon/systemd.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tracery::daemon {

namespace {
constexpr int kFirstPassedFd = 3; // SD_LISTEN_FDS_START

bool socket_option_is(int fd, int option, int expected)
{
	int value = 0;
	socklen_t len = sizeof value;
	return getsockopt(fd, SOL_SOCKET, option, &value, &len) == 0 && value == expected;
}
} // namespace

base::Fd socket_from_systemd()
{
	const char *pid = getenv("LISTEN_PID");
	const char *fds = getenv("LISTEN_FDS");
	if (!pid || !fds)
		return base::Fd();
	// Meant for this process (not a parent that left them set)?
	const bool ours = std::strtol(pid, nullptr, 10) == getpid();
	const std::string count = fds;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (!ours)
		return base::Fd();
	if (count != "1")
		throw std::runtime_error("systemd passed LISTEN_FDS=" + count +
		                         " descriptors: traceryd.socket must listen on one UNIX stream socket");
	const int fd = kFirstPassedFd;
	if (!socket_option_is(fd, SO_DOMAIN, AF_UNIX) || !socket_option_is(fd, SO_TYPE, SOCK_STREAM) ||
	    !socket_option_is(fd, SO_ACCEPTCONN, 1))
		throw std::runtime_error("the descriptor systemd passed is not a listening UNIX stream socket: "
		                         "traceryd.socket must have ListenStream=PATH");
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return base::Fd(fd);
}

bool notify_systemd(const std::string &state)
{
	const char *where = getenv("NOTIFY_SOCKET");
	if (!where || !*where)
		return true;
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	const size_t len = strlen(where);
	if ((where[0] != '/' && where[0] != '@') || len >= sizeof addr.sun_path)
		return false;
	memcpy(addr.sun_path, where, len);
	if (where[0] == '@')
		addr.sun_path[0] = '\0'; // the abstract namespace
	const base::Fd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (!fd)
		return false;
	const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
	return sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr *>(&addr),
	              addr_len) == static_cast<ssize_t>(state.size());
}

bool stderr_is_journal()
{
	const char *stream = getenv("JOURNAL_STREAM");
	struct stat st;
	if (!stream || fstat(STDERR_FILENO, &st) != 0)
		return false;
	unsigned long long dev = 0, ino = 0;
	if (sscanf(stream, "%llu:%llu", &dev, &ino) != 2)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

} // namespace tracery::daemon
