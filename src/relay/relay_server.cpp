// relay/relay_server.cpp — the epoll loop of tracery-relayd. Each wakeup
// reads at most a few slices from one connection before going back to the
// others; frames are applied as soon as they are whole; the HELLO reply is
// written once (small: it fits the socket buffer of a fresh connection).
#include "relay/relay_server.hpp"

#include "base/cat.hpp"
#include "control/relay_protocol.hpp"
#include "relay/session_writer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tracery::relay {

namespace cr = control::relay;

namespace {

using base::cat;

constexpr size_t kSlice = 256 * 1024; // bytes read at once
constexpr int kSlicesPerWakeup = 8;   // then the other connections' turn
constexpr uint64_t kListenTag = 1, kStopTag = 2, kSignalTag = 3, kFirstConnTag = 16;

using Clock = std::chrono::steady_clock;

struct Connection {
	base::Fd fd;
	std::string peer;
	cr::Decoder decoder;
	SessionWriter writer;
	Clock::time_point opened;
	Connection(base::Fd f, std::string p, const std::string &output)
		: fd(std::move(f)), peer(std::move(p)), writer(output), opened(Clock::now())
	{
	}
};

std::string peer_name(const sockaddr_storage &ss)
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;
	if (ss.ss_family == AF_INET) {
		const auto *a = reinterpret_cast<const sockaddr_in *>(&ss);
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		port = ntohs(a->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		const auto *a = reinterpret_cast<const sockaddr_in6 *>(&ss);
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		port = ntohs(a->sin6_port);
	}
	return cat(host, ":", std::to_string(port));
}

} // namespace

struct RelayServer::Impl {
	ServerOptions opt;
	base::Fd listen_fd, epoll_fd, stop_fd, signal_fd;
	std::map<uint64_t, std::unique_ptr<Connection>> conns;
	uint64_t next_tag = kFirstConnTag;
	std::vector<uint8_t> slice = std::vector<uint8_t>(kSlice);
	RelayServer *self = nullptr;

	void say(const std::string &line) { self->log(line); }

	void accept_all()
	{
		for (int n = 0; n < 64; n++) { // bounded: back to the loop after a burst
			sockaddr_storage ss{};
			socklen_t len = sizeof ss;
			base::Fd fd(::accept4(listen_fd.get(), reinterpret_cast<sockaddr *>(&ss), &len,
			                      SOCK_NONBLOCK | SOCK_CLOEXEC));
			if (!fd) {
				if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
					say(cat("accept: ", std::strerror(errno)));
				return;
			}
			const std::string peer = peer_name(ss);
			if (conns.size() >= opt.max_connections) {
				say(cat(peer, ": refused, already ", std::to_string(conns.size()), " senders"));
				continue;
			}
			const int one = 1;
			::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			const uint64_t tag = next_tag++;
			epoll_event ev{};
			ev.events = EPOLLIN | EPOLLRDHUP;
			ev.data.u64 = tag;
			if (::epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
				say(cat(peer, ": epoll: ", std::strerror(errno)));
				continue;
			}
			conns.emplace(tag, std::make_unique<Connection>(std::move(fd), peer, opt.output));
		}
	}

	std::string who(const Connection &c) const
	{
		std::string s = c.peer;
		if (!c.writer.relative_dir().empty())
			s += cat(" (", c.writer.relative_dir(), ")");
		return s;
	}

	void close_conn(uint64_t tag, const std::string &line)
	{
		const auto it = conns.find(tag);
		if (it == conns.end())
			return;
		if (!line.empty())
			say(cat(who(*it->second), ": ", line));
		::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, it->second->fd.get(), nullptr);
		conns.erase(it);
	}

	// Sends one of the relay's frames, whole, or says it could not (a sender
	// that does not read its replies fills its socket and is closed).
	static bool reply_to(Connection &c, const cr::Frame &f)
	{
		const auto bytes = cr::encode(f);
		return ::send(c.fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
		       static_cast<ssize_t>(bytes.size());
	}

	// Decodes and applies what the connection has buffered: "" or why it closes.
	std::string drain(Connection &c)
	{
		cr::Frame f;
		cr::Decoder::Status st;
		while ((st = c.decoder.next(f)) == cr::Decoder::Status::frame) {
			cr::HelloReply reply;
			const bool replied = std::holds_alternative<cr::Hello>(f) && !c.writer.said_hello();
			const std::string why = c.writer.apply(f, replied ? &reply : nullptr);
			if (replied) {
				if (!why.empty() && reply.text.empty())
					reply = {.accepted = false, .text = why.substr(0, cr::kMaxReplyText)};
				if (!reply_to(c, reply))
					return "could not send the HELLO reply";
			}
			if (!why.empty())
				return why;
			if (const auto *sync = std::get_if<cr::Sync>(&f)) {
				// Writes are synchronous: everything before the SYNC is written.
				if (!reply_to(c, cr::SyncReply{.token = sync->token,
				                               .packets_written = c.writer.packets()}))
					return "could not send the SYNC reply";
			}
		}
		if (st == cr::Decoder::Status::error)
			return cat("malformed frame: ", c.decoder.error());
		return {};
	}

	void serve(uint64_t tag)
	{
		Connection &c = *conns.at(tag);
		for (int n = 0; n < kSlicesPerWakeup; n++) {
			const ssize_t got = ::recv(c.fd.get(), slice.data(), slice.size(), 0);
			if (got < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				return close_conn(tag, cat("recv: ", std::strerror(errno)));
			}
			if (got == 0) {
				std::string line =
					cat("ended with BYE, ", std::to_string(c.writer.packets()), " packets");
				if (!c.writer.said_bye())
					line = c.decoder.buffered()
					               ? "closed without BYE, in the middle of a frame (dropped)"
					               : "closed without BYE";
				return close_conn(tag, line);
			}
			c.decoder.feed({slice.data(), static_cast<size_t>(got)});
			if (std::string why = drain(c); !why.empty())
				return close_conn(tag, why);
		}
	}

	void expire_silent()
	{
		const auto now = Clock::now();
		std::vector<uint64_t> late;
		for (const auto &[tag, c] : conns)
			if (!c->writer.said_hello() &&
			    now - c->opened > std::chrono::milliseconds(opt.hello_timeout_ms))
				late.push_back(tag);
		for (uint64_t tag : late)
			close_conn(tag, "no HELLO in time");
	}
};

RelayServer::RelayServer(ServerOptions options) : impl_(new Impl)
{
	std::unique_ptr<Impl> guard(impl_);
	impl_->self = this;
	impl_->opt = std::move(options);
	log = [](const std::string &line) { std::fprintf(stderr, "tracery-relayd: %s\n", line.c_str()); };

	sockaddr_storage ss{};
	socklen_t len = 0;
	const std::string &addr = impl_->opt.listen;
	auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
	auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
	if (inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(impl_->opt.port);
		len = sizeof *v4;
	} else if (inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(impl_->opt.port);
		len = sizeof *v6;
	} else {
		throw std::runtime_error(cat("--listen ", addr, ": not an IPv4 or IPv6 address"));
	}
	impl_->listen_fd.reset(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!impl_->listen_fd)
		throw std::runtime_error(cat("socket: ", std::strerror(errno)));
	const int one = 1;
	::setsockopt(impl_->listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (::bind(impl_->listen_fd.get(), reinterpret_cast<sockaddr *>(&ss), len) != 0)
		throw std::runtime_error(
			cat("bind ", addr, ":", std::to_string(impl_->opt.port), ": ", std::strerror(errno)));
	if (::listen(impl_->listen_fd.get(), 128) != 0)
		throw std::runtime_error(cat("listen: ", std::strerror(errno)));
	sockaddr_storage bound{};
	socklen_t blen = sizeof bound;
	::getsockname(impl_->listen_fd.get(), reinterpret_cast<sockaddr *>(&bound), &blen);
	port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in *>(&bound)->sin_port
	                                         : reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port);

	impl_->epoll_fd.reset(::epoll_create1(EPOLL_CLOEXEC));
	impl_->stop_fd.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
	if (!impl_->epoll_fd || !impl_->stop_fd)
		throw std::runtime_error(cat("epoll/eventfd: ", std::strerror(errno)));
	for (auto [fd, tag] :
	     {std::pair{impl_->listen_fd.get(), kListenTag}, std::pair{impl_->stop_fd.get(), kStopTag}}) {
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.u64 = tag;
		if (::epoll_ctl(impl_->epoll_fd.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
			throw std::runtime_error(cat("epoll_ctl: ", std::strerror(errno)));
	}
	guard.release();
}

RelayServer::~RelayServer() { delete impl_; }

void RelayServer::stop()
{
	const uint64_t one = 1;
	[[maybe_unused]] const ssize_t n = ::write(impl_->stop_fd.get(), &one, sizeof one);
}

void RelayServer::run(bool handle_signals)
{
	Impl &s = *impl_;
	if (handle_signals) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGINT);
		pthread_sigmask(SIG_BLOCK, &set, nullptr);
		s.signal_fd.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.u64 = kSignalTag;
		if (!s.signal_fd || ::epoll_ctl(s.epoll_fd.get(), EPOLL_CTL_ADD, s.signal_fd.get(), &ev) != 0)
			throw std::runtime_error(cat("signalfd: ", std::strerror(errno)));
	}
	log(cat("listening on ", s.opt.listen, ":", std::to_string(port_), ", writing under ", s.opt.output));
	epoll_event events[64];
	for (;;) {
		const int n = ::epoll_wait(s.epoll_fd.get(), events, 64, 1000);
		if (n < 0 && errno != EINTR)
			throw std::runtime_error(cat("epoll_wait: ", std::strerror(errno)));
		for (int i = 0; i < n; i++) {
			const uint64_t tag = events[i].data.u64;
			if (tag == kStopTag || tag == kSignalTag) {
				log("stopping");
				s.conns.clear();
				return;
			}
			if (tag == kListenTag)
				s.accept_all();
			else if (s.conns.count(tag))
				s.serve(tag);
		}
		s.expire_silent();
	}
}

} // namespace tracery::relay
