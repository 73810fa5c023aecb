// traceryd's socket and connections: see server.hpp.
#include "daemon/server.hpp"

#include "control/messages.hpp"
#include "daemon/log.hpp"

#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace tracery::daemon {

using nlohmann::json;

namespace {

bool in_group(uid_t uid, gid_t primary, gid_t group)
{
	if (primary == group)
		return true;
	passwd pw, *res = nullptr;
	std::vector<char> buf(16384);
	if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) != 0 || !res)
		return false;
	int n = 64;
	std::vector<gid_t> groups(static_cast<size_t>(n));
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) {
		groups.resize(static_cast<size_t>(n));
		if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0)
			return false;
	}
	for (int i = 0; i < n; i++)
		if (groups[static_cast<size_t>(i)] == group)
			return true;
	return false;
}

void set_timeout(int fd, int opt, int ms)
{
	timeval tv{ms / 1000, (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

} // namespace

bool Server::may_control(const control::PeerCred &peer) const
{
	if (peer.uid == 0 || peer.uid == geteuid())
		return true;
	return daemon_.options().system && in_group(peer.uid, peer.gid, daemon_.options().group);
}

void Server::run(int stop_fd)
{
	pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log(Level::error, "poll: %s", strerror(errno));
			return;
		}
		if (fds[1].revents)
			return;
		if (fds[0].revents & POLLIN) {
			base::Fd conn(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
			if (!conn)
				continue;
			std::thread([this, c = std::move(conn)]() mutable { serve(std::move(c)); }).detach();
		}
	}
}

void Server::serve(base::Fd conn)
{
	control::PeerCred peer;
	if (!control::peer_cred(conn.get(), peer))
		return;
	set_timeout(conn.get(), SO_RCVTIMEO, 10000); // a silent peer does not hold a thread for ever
	set_timeout(conn.get(), SO_SNDTIMEO, 1000);
	control::Message msg;
	std::string why;
	if (control::recv_message(conn.get(), msg, &why) != control::RecvStatus::ok) {
		if (!why.empty()) {
			log(Level::warn, "pid %d: %s", peer.pid, why.c_str());
			control::send_message(conn.get(), {{"ok", false}, {"error", why}});
		}
		return;
	}
	if (control::string_field(msg.body, control::kRoleKey) == control::role::kApp) {
		serve_app(std::move(conn), peer, msg.body);
		return;
	}
	json reply;
	if (!may_control(peer)) {
		reply = {{"ok", false},
		         {"error",
		          "permission denied: only root" +
		                  (daemon_.options().system
		                           ? " and members of group '" + daemon_.options().group_name + "'"
		                           : std::string(" and its owner")) +
		                  " may control this session daemon; run your own with `traceryd --daemonize`"}};
		log(Level::warn, "refused a command from uid %u (pid %d)", peer.uid, peer.pid);
	} else {
		set_timeout(conn.get(), SO_SNDTIMEO, 10000);
		try {
			reply = daemon_.handle_command(msg.body, peer);
		} catch (const std::exception &e) {
			// A field of the wrong JSON type (nlohmann's type_error) outside the
			// handlers' own error handling: the request is refused, nothing else.
			log(Level::warn, "malformed request from pid %d: %s", peer.pid, e.what());
			reply = {{"ok", false}, {"error", std::string("malformed request: ") + e.what()}};
		}
	}
	control::send_message(conn.get(), reply);
}

void Server::serve_app(base::Fd conn, const control::PeerCred &peer, const json &hello)
{
	if (!daemon_.options().system && peer.uid != geteuid()) {
		log(Level::warn, "refused program %d of uid %u: this daemon traces uid %u only", peer.pid, peer.uid,
		    geteuid());
		return;
	}
	set_timeout(conn.get(), SO_RCVTIMEO, 0); // programs may stay silent for ever
	auto app = std::make_shared<App>();
	app->cred = peer;
	app->sock = std::move(conn);
	{
		static std::mutex id_mutex;
		std::lock_guard lock(id_mutex);
		app->id = next_app_id_++;
	}
	// Whatever the program sends is input: a message the daemon cannot take
	// (a field of the wrong JSON type, say) ends this program's connection,
	// as its exit would, and nothing else.
	try {
		daemon_.app_registered(app, hello);
		for (;;) {
			control::Message msg;
			std::string why;
			control::RecvStatus st = control::recv_message(app->sock.get(), msg, &why);
			if (st != control::RecvStatus::ok) {
				if (st == control::RecvStatus::error && !why.empty())
					log(Level::debug, "program %d: %s", peer.pid, why.c_str());
				break;
			}
			daemon_.app_message(*app, msg);
		}
	} catch (const std::exception &e) {
		log(Level::warn, "program %d sent a malformed message and is disconnected: %s", peer.pid, e.what());
	}
	daemon_.app_gone(*app);
}

} // namespace tracery::daemon
