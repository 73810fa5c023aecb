// A registered program: see app.hpp.
#include "daemon/app.hpp"

#include "control/messages.hpp"
#include "daemon/log.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tracery::daemon {

bool App::send(const nlohmann::json &msg, std::span<const int> fds)
{
	std::lock_guard lock(send_mutex_);
	if (control::send_message(sock.get(), msg, fds))
		return true;
	log(Level::warn, "program %d (%s): cannot send %s: %s; dropping it", cred.pid, procname.c_str(),
	    msg.value(control::kTypeKey, "?").c_str(), strerror(errno));
	shutdown(sock.get(), SHUT_RDWR); // its connection thread sees EOF and cleans up
	return false;
}

} // namespace tracery::daemon
