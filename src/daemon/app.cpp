// A registered program: see app.hpp.
#include "daemon/app.hpp"

#include "control/messages.hpp"
#include "daemon/log.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace tracery::daemon {

namespace {

// Whether the process is in the daemon's namespace of this kind ("pid",
// "user"); true when it cannot be told (its claims are then not believed).
bool in_own_namespace(pid_t pid, const char *kind)
{
	struct stat mine, its;
	const std::string self = std::string("/proc/self/ns/") + kind;
	const std::string other = "/proc/" + std::to_string(pid) + "/ns/" + kind;
	if (stat(self.c_str(), &mine) != 0 || stat(other.c_str(), &its) != 0)
		return true;
	return mine.st_ino == its.st_ino && mine.st_dev == its.st_dev;
}

} // namespace

void App::registered_ids(const control::Hello &hello)
{
	ids = {static_cast<uint64_t>(cred.pid),
	       static_cast<uint64_t>(cred.pid),
	       cred.uid,
	       cred.uid,
	       cred.gid,
	       cred.gid};
	if (hello.vpid && !in_own_namespace(cred.pid, "pid"))
		ids.vpid = *hello.vpid;
	if (!in_own_namespace(cred.pid, "user")) {
		ids.vuid = hello.vuid.value_or(ids.vuid);
		ids.vgid = hello.vgid.value_or(ids.vgid);
	}
}

bool App::drop(const char *what)
{
	log(Level::warn, "program %d (%s): cannot send %s: %s; dropping it", cred.pid, procname.c_str(), what,
	    strerror(errno));
	queue_.clear();
	queued_ = 0;
	shutdown_link();
	return false;
}

void App::shutdown_link() { shutdown(sock.get(), SHUT_RDWR); }

bool App::send(const nlohmann::json &msg, std::span<const int> fds)
{
	const std::string type = control::type_of(msg);
	std::lock_guard lock(send_mutex_);
	const std::string text = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
	if (text.size() > control::kPeerLimits.program) {
		errno = EMSGSIZE;
		return drop(type.c_str());
	}
	Out out{control::encode_frame(control::Kind::program, text), {}, 0};
	if (queue_.empty()) {
		const ssize_t r = control::send_some(sock.get(), out.frame, fds, MSG_DONTWAIT);
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return drop(type.c_str());
		if (r > 0 && static_cast<size_t>(r) == out.frame.size())
			return true;
		out.sent = r > 0 ? static_cast<size_t>(r) : 0;
	}
	if (out.sent == 0) // the descriptors still have to go: keep them open until then
		for (int fd : fds) {
			base::Fd copy(fcntl(fd, F_DUPFD_CLOEXEC, 0));
			if (!copy)
				return drop(type.c_str());
			out.fds.push_back(std::move(copy));
		}
	queued_ += out.frame.size() - out.sent;
	queue_.push_back(std::move(out));
	if (queued_ > kMaxQueued) {
		errno = ENOBUFS;
		return drop(type.c_str());
	}
	if (on_blocked)
		on_blocked();
	return true;
}

bool App::flush()
{
	std::lock_guard lock(send_mutex_);
	while (!queue_.empty()) {
		Out &out = queue_.front();
		std::vector<int> fds;
		if (out.sent == 0)
			for (const auto &fd : out.fds)
				fds.push_back(fd.get());
		const ssize_t r =
			control::send_some(sock.get(), std::string_view(out.frame).substr(out.sent), fds, MSG_DONTWAIT);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? true : drop("a queued message");
		out.sent += static_cast<size_t>(r);
		queued_ -= static_cast<size_t>(r);
		if (out.sent < out.frame.size())
			return true;
		queue_.pop_front();
	}
	return true;
}

bool App::wants_write()
{
	std::lock_guard lock(send_mutex_);
	return !queue_.empty();
}

} // namespace tracery::daemon
