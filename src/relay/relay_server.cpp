// relay/relay_server.cpp — the epoll loop of tracery-relayd. Each wakeup
// reads at most a few slices from one sender before going back to the
// others; frames are queued to the session's writer thread as soon as they
// are whole (HELLO alone is applied here: it makes the session's directory
// and its reply); what the writer thread wrote comes back through its
// eventfd and answers SYNCs, feeds the live index and ends the connection
// once the sender has gone. Viewers are served here too, one request at a
// time each: the replies are small but for file bytes, which go from the
// files to the socket with sendfile as the socket takes them, so no viewer
// waits on another, on a sender, or on a disk write (the loop never writes
// to disk). docs/relay-protocol.md says why one thread suffices.
#include "relay/relay_server.hpp"

#include "base/cat.hpp"
#include "base/sizes.hpp"
#include "control/live_protocol.hpp"
#include "control/relay_protocol.hpp"
#include "relay/frame_receiver.hpp"
#include "relay/live_session.hpp"
#include "relay/memory_budget.hpp"
#include "relay/sender_gate.hpp"
#include "relay/session_writer.hpp"
#include "relay/viewer_gate.hpp"
#include "relay/write_queue.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace tracery::relay {

namespace cr = control::relay;

namespace {

using base::cat;

constexpr size_t kSlice = 256 * 1024; // bytes read at once
constexpr int kSlicesPerWakeup = 8;   // then the other connections' turn
constexpr size_t kViewerInput = 4096; // bytes of requests buffered per viewer
// epoll tags: the fixed ones, then kFirstTag + 4 * id + kind.
constexpr uint64_t kListenTag = 1, kStopTag = 2, kSignalTag = 3, kLiveListenTag = 4, kViewerListenTag = 5,
		   kFirstTag = 16;
enum Kind : uint64_t { sender = 0, writer = 1, viewer = 2 };

using Clock = std::chrono::steady_clock;

struct Connection {
	base::Fd fd;
	std::string peer;
	FrameReceiver receiver;
	size_t grant = 0;            // charged to the budget for the next read
	size_t held_charged = 0;     // charged for what the receiver holds
	bool waiting_memory = false; // out of epoll until its read can be charged
	SessionWriter writer;        // until HELLO is accepted; then the queue's
	std::unique_ptr<WriteQueue> queue;
	std::shared_ptr<LiveSession> live; // a live session's index, for viewers
	std::string relative_dir;
	Clock::time_point opened;
	uint64_t packets = 0; // written
	bool reading = true;  // in epoll (not while behind, waiting for memory, after DROP_UNWRITTEN, nor once gone)
	bool behind = false;  // told NOTICE writes_behind
	Clock::time_point held_since{};     // behind since then: its frame's deadline waits
	std::optional<uint64_t> drop_token; // DROP_UNWRITTEN's, answered once its writer thread dropped the rest
	bool bye_written = false;           // the session ended with BYE
	bool gone = false;                  // the sender closed: the end is logged once all is written
	std::string gone_line;              // what is logged then without BYE
	SenderGate gate;                    // TLS, authentication, the sender the limits count
	Connection(base::Fd f, std::string p, const std::string &output, const SenderPolicy &policy)
		: fd(std::move(f)), peer(std::move(p)), writer(output), opened(Clock::now()),
		  gate(policy, fd.get(), peer)
	{
	}
};

// A closed sender's writer thread still writing what it had queued: the loop
// goes on meanwhile, and its live session ends once all is written.
struct Draining {
	std::unique_ptr<WriteQueue> queue;
	std::shared_ptr<LiveSession> live;
	std::string who, relative_dir; // for the log
};

// A viewer of either port: on the authenticated one, its gate until it is
// admitted, then its transport (TLS or not).
struct Viewer {
	base::Fd fd;
	std::string peer;
	std::unique_ptr<ViewerGate> gate;  // the authenticated port's
	std::unique_ptr<LiveViewer> state; // once admitted (at once on the plain port)
	std::vector<uint8_t> in, out;
	size_t out_at = 0;
	LiveViewer::FileRange file;
	std::vector<uint8_t> chunk; // TLS: file bytes read, not yet taken by TLS
	size_t chunk_at = 0;
	std::string closing; // why it closes once its reply is sent
	Clock::time_point opened = Clock::now();
	Clock::time_point active = opened; // the last bytes read from it or sent to it
	Viewer(base::Fd f, std::string p) : fd(std::move(f)), peer(std::move(p)) {}
	bool tls() const { return gate && gate->tls(); }
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

// A listening socket on addr:port; *bound: the port it got.
base::Fd listen_on(const std::string &addr, uint16_t port, uint16_t *bound)
{
	sockaddr_storage ss{};
	socklen_t len = 0;
	auto *v4 = reinterpret_cast<sockaddr_in *>(&ss);
	auto *v6 = reinterpret_cast<sockaddr_in6 *>(&ss);
	if (inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		len = sizeof *v4;
	} else if (inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		len = sizeof *v6;
	} else {
		throw std::runtime_error(cat("--listen ", addr, ": not an IPv4 or IPv6 address"));
	}
	base::Fd fd(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!fd)
		throw std::runtime_error(cat("socket: ", std::strerror(errno)));
	const int one = 1;
	::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&ss), len) != 0)
		throw std::runtime_error(cat("bind ", addr, ":", std::to_string(port), ": ", std::strerror(errno)));
	if (::listen(fd.get(), 128) != 0)
		throw std::runtime_error(cat("listen: ", std::strerror(errno)));
	sockaddr_storage got{};
	socklen_t glen = sizeof got;
	::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&got), &glen);
	*bound = ntohs(got.ss_family == AF_INET ? reinterpret_cast<sockaddr_in *>(&got)->sin_port
	                                        : reinterpret_cast<sockaddr_in6 *>(&got)->sin6_port);
	return fd;
}

// A listening socket. Out of descriptors (or memory), accept leaves the
// connection pending and epoll would report it again at once, forever: the
// socket is left out of epoll for kAcceptPause instead (the connection waits
// in the backlog), and that is logged at most once per kAcceptSayEvery.
struct Listener {
	base::Fd fd;
	uint64_t tag = 0;
	bool paused = false;
	Clock::time_point resume{}, said{};
};
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr auto kAcceptSayEvery = std::chrono::seconds(10);
constexpr int kKeepIdle = 60, kKeepInterval = 10, kKeepProbes = 6; // TCP keepalive: seconds, seconds, count

} // namespace

struct RelayServer::Impl {
	ServerOptions opt;
	// Before the connections and queues that charge it: it outlives them.
	std::unique_ptr<MemoryBudget> budget;
	std::deque<uint64_t> memory_turns;                 // senders waiting for memory to read, first come first
	Clock::time_point memory_said{};                   // the last "memory budget reached" line
	Listener listener, live_listener, viewer_listener; // senders', plain viewers', authenticated viewers'
	base::Fd epoll_fd, stop_fd, signal_fd;
	std::map<uint64_t, std::unique_ptr<Connection>> conns; // by id
	std::map<uint64_t, std::unique_ptr<Viewer>> viewers;   // by id
	std::map<uint64_t, Draining> draining;                 // by the id its connection had
	LiveRegistry registry;
	SenderLimits limits;
	uint64_t next_id = 1;
	std::vector<uint8_t> slice = std::vector<uint8_t>(kSlice);
	RelayServer *self = nullptr;

	void say(const std::string &line) { self->log(line); }

	static uint64_t tag(uint64_t id, Kind k) { return kFirstTag + 4 * id + k; }

	bool watch(int op, int fd, uint32_t events, uint64_t t)
	{
		epoll_event ev{};
		ev.events = events;
		ev.data.u64 = t;
		return ::epoll_ctl(epoll_fd.get(), op, fd, &ev) == 0;
	}

	// Accepts one pending connection: its fd (non-blocking, no Nagle) or none.
	base::Fd accept_one(Listener &l, std::string *peer)
	{
		sockaddr_storage ss{};
		socklen_t len = sizeof ss;
		base::Fd fd(
			::accept4(l.fd.get(), reinterpret_cast<sockaddr *>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
		if (!fd) {
			const int err = errno;
			if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
				pause(l, err);
			else if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR && err != ECONNABORTED)
				say(cat("accept: ", std::strerror(err)));
			return fd;
		}
		*peer = peer_name(ss);
		const int one = 1;
		::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		// A peer gone without a word (its host down, a cable out): probed after
		// kKeepIdle idle, then every kKeepInterval; kKeepProbes unanswered and
		// its reads fail (ETIMEDOUT), which closes it.
		::setsockopt(fd.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
		::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPIDLE, &kKeepIdle, sizeof kKeepIdle);
		::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPINTVL, &kKeepInterval, sizeof kKeepInterval);
		::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPCNT, &kKeepProbes, sizeof kKeepProbes);
		return fd;
	}

	void pause(Listener &l, int err)
	{
		const auto now = Clock::now();
		::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, l.fd.get(), nullptr);
		l.paused = true;
		l.resume = now + kAcceptPause;
		if (l.said == Clock::time_point{} || now - l.said >= kAcceptSayEvery) {
			l.said = now;
			say(cat("accept: ", std::strerror(err), "; not accepting for ",
			        std::to_string(kAcceptPause.count()), " ms (said at most every ",
			        std::to_string(kAcceptSayEvery.count()), " s)"));
		}
	}

	// The paused listeners whose time has come, back in epoll.
	void resume_listeners()
	{
		const auto now = Clock::now();
		for (Listener *l : {&listener, &live_listener, &viewer_listener})
			if (l->paused && now >= l->resume) {
				l->paused = !watch(EPOLL_CTL_ADD, l->fd.get(), EPOLLIN, l->tag);
				l->resume = now + kAcceptPause; // when epoll_ctl failed
			}
	}

	// How long the loop may wait: 1 s, less when a listener resumes sooner.
	int wait_ms() const
	{
		auto ms = std::chrono::milliseconds(1000);
		const auto now = Clock::now();
		for (const Listener *l : {&listener, &live_listener, &viewer_listener})
			if (l->paused)
				ms = std::min(ms, std::chrono::ceil<std::chrono::milliseconds>(l->resume - now));
		return static_cast<int>(std::max<int64_t>(ms.count(), 0));
	}

	void accept_senders()
	{
		for (int n = 0; n < 64; n++) { // bounded: back to the loop after a burst
			std::string peer;
			base::Fd fd = accept_one(listener, &peer);
			if (!fd)
				return;
			// A closed sender's session still being written counts: its queue
			// and thread are held until then, so reconnecting does not add more.
			if (conns.size() + draining.size() >= opt.max_connections) {
				say(cat(peer, ": refused, already ", std::to_string(conns.size()), " senders and ",
				        std::to_string(draining.size()), " closed ones still being written"));
				continue;
			}
			const uint64_t id = next_id++;
			if (!watch(EPOLL_CTL_ADD, fd.get(), EPOLLIN | EPOLLRDHUP, tag(id, sender))) {
				say(cat(peer, ": epoll: ", std::strerror(errno)));
				continue;
			}
			conns.emplace(id, std::make_unique<Connection>(std::move(fd), peer, opt.output, opt.senders));
		}
	}

	// Viewers of the plain port (l: live_listener) or of the authenticated one
	// (viewer_listener), which pass a gate first; at most opt.max_viewers of both.
	void accept_viewers(Listener &l)
	{
		const bool plain = &l == &live_listener;
		for (int n = 0; n < 64; n++) {
			std::string peer;
			base::Fd fd = accept_one(l, &peer);
			if (!fd)
				return;
			peer = cat(plain ? "viewer " : "authenticated viewer ", peer);
			if (viewers.size() >= opt.max_viewers) {
				say(cat(peer, ": refused, already ", std::to_string(viewers.size()), " viewers"));
				continue;
			}
			const uint64_t id = next_id++;
			if (!watch(EPOLL_CTL_ADD, fd.get(), EPOLLIN, tag(id, viewer))) {
				say(cat(peer, ": epoll: ", std::strerror(errno)));
				continue;
			}
			auto v = std::make_unique<Viewer>(std::move(fd), peer);
			if (plain)
				v->state = std::make_unique<LiveViewer>(registry, peer, ViewerAccess{});
			else
				v->gate = std::make_unique<ViewerGate>(opt.senders.keys, opt.senders.tls, v->fd.get());
			viewers.emplace(id, std::move(v));
		}
	}

	std::string who(const Connection &c) const
	{
		return c.relative_dir.empty() ? c.peer : cat(c.peer, " (", c.relative_dir, ")");
	}

	void close_conn(uint64_t id, const std::string &line)
	{
		const auto it = conns.find(id);
		if (it == conns.end())
			return;
		Connection &c = *it->second;
		if (!line.empty())
			say(cat(who(c), ": ", line));
		if (c.live)
			registry.sessions.erase(c.live->id); // no longer listed
		budget->release(c.grant + c.held_charged);
		limits.close_session(c.gate);
		if (c.reading)
			::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
		if (c.queue) {
			draining.emplace(id, Draining{std::move(c.queue), c.live, who(c), c.relative_dir});
			drained(id);
		} else if (c.live) {
			c.live->over = true;
		}
		conns.erase(it);
	}

	// A closed sender's writes: into its live index; once all are done, the
	// session is over (an attached viewer finishes reading it, then HUP).
	void drained(uint64_t id)
	{
		Draining &d = draining.at(id);
		WriteQueue::Results r = d.queue->take();
		for (const Written &w : r.written)
			if (d.live)
				d.live->apply(w, registry.next_id); // its sender is gone: nothing to tell it
		for (const WriteQueue::DiskChange &change : r.disk)
			say(cat(d.who, ": ", disk_line(d.relative_dir, change)));
		if (!r.idle)
			return;
		if (d.live)
			d.live->over = true;
		::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, d.queue->event_fd(), nullptr);
		draining.erase(id);
	}

	// Sends one of the relay's frames, whole, or says it could not (a sender
	// that does not read what the relay sends fills its socket and is closed).
	static bool reply_to(Connection &c, const cr::Frame &f) { return c.gate.send(cr::encode(f)); }

	// What the log and the NOTICE say of a change of the disk's answer.
	std::string disk_line(const std::string &relative_dir, const WriteQueue::DiskChange &change) const
	{
		if (!change.refused)
			return "the disk takes this session's writes again; its sender may send its packets again";
		return cat("the disk refuses this session's writes (", opt.output, "/", relative_dir, "/", change.why,
		           "): its frames are kept and tried again every ",
		           std::to_string(WriteQueue::kRetryEvery.count()),
		           " ms; its sender holds its packets meanwhile");
	}

	// Its sender told: "" or why the connection closes.
	std::string disk_changed(Connection &c, const WriteQueue::DiskChange &change)
	{
		const std::string line = disk_line(c.relative_dir, change);
		say(cat(who(c), ": ", line));
		if (c.gone)
			return {};
		const auto kind = change.refused ? cr::NoticeKind::write_failed : cr::NoticeKind::write_resumed;
		if (!reply_to(c, cr::Notice{.kind = kind, .text = line.substr(0, cr::kMaxReplyText)}))
			return "could not send a NOTICE";
		return {};
	}

	// Read unless its writes are behind, it waits for memory, it asked to
	// drop what is not written, or it is gone: a sender whose disk refuses
	// is still read (told, it sends no packets; what it sends anyway puts
	// it behind), so that its DROP_UNWRITTEN comes through. While its disk
	// holds it, the deadline of the frame it is in the middle of waits (the
	// relay, not the sender, is slow then).
	void update_reading(uint64_t id, Connection &c)
	{
		const bool held = c.behind;
		if (held && c.held_since == Clock::time_point{}) {
			c.held_since = Clock::now();
		} else if (!held && c.held_since != Clock::time_point{}) {
			c.receiver.postpone(Clock::now() - c.held_since);
			c.held_since = {};
		}
		set_reading(id, c, !held && !c.waiting_memory && !c.gone && !c.drop_token);
	}

	// Out of epoll while not read: a peer that resets its end while it waits
	// cannot make the loop spin on EPOLLHUP.
	void set_reading(uint64_t id, Connection &c, bool on)
	{
		if (c.reading == on)
			return;
		c.reading = on;
		if (on)
			watch(EPOLL_CTL_ADD, c.fd.get(), EPOLLIN | EPOLLRDHUP, tag(id, sender));
		else
			::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
	}

	// HELLO, applied here: the session's directory and writer thread, the
	// reply (refused if either failed), the live index of a live session.
	// "" or why the connection closes.
	std::string hello(uint64_t id, Connection &c, const cr::Frame &f)
	{
		cr::HelloReply reply;
		// The sender's limits first: a refused HELLO makes no directory.
		std::string why = limits.open_session(c.gate, opt.senders, Clock::now());
		if (why.empty())
			why = c.writer.apply(f, &reply);
		if (why.empty()) {
			// Its feed, writer thread and eventfd: out of threads or
			// descriptors, this session is refused, and the others go on.
			c.relative_dir = c.writer.relative_dir();
			try {
				std::unique_ptr<SessionFeed> feed;
				if (opt.feed)
					feed = opt.feed(std::get<cr::Hello>(f), c.relative_dir);
				c.queue = std::make_unique<WriteQueue>(std::move(c.writer), *budget, opt.before_write,
				                                       std::move(feed));
			} catch (const std::exception &e) {
				why = cat("could not start the session's writer: ", e.what());
				reply = {};
			}
		}
		if (!why.empty() && reply.text.empty())
			reply = {.accepted = false, .text = why.substr(0, cr::kMaxReplyText)};
		if (!reply_to(c, reply))
			return "could not send the HELLO reply";
		if (!why.empty())
			return why;
		if (!watch(EPOLL_CTL_ADD, c.queue->event_fd(), EPOLLIN, tag(id, writer)))
			return cat("epoll: ", std::strerror(errno));
		const auto &h = std::get<cr::Hello>(f);
		if (h.live_period_ns > 0) {
			c.live = std::make_shared<LiveSession>();
			c.live->id = registry.next_id++;
			c.live->hostname = h.hostname;
			c.live->name = h.session;
			c.live->dir = cat(opt.output, "/", c.relative_dir);
			c.live->live_period_ns = h.live_period_ns;
			c.live->public_live = (h.flags & cr::kHelloPublicLive) != 0;
			c.live->identity = c.gate.key_name();
			registry.sessions.emplace(c.live->id, c.live);
		}
		return {};
	}

	// Bytes read from the connection: HELLO applied, the other frames
	// queued for the writer thread (charged to the budget until written),
	// the rest of a frame kept by the receiver. "" or why the connection
	// closes.
	std::string take(uint64_t id, Connection &c, std::span<const uint8_t> bytes)
	{
		std::vector<FrameReceiver::Received> frames;
		std::string malformed;
		while (!bytes.empty() && malformed.empty()) {
			frames.clear();
			bytes = bytes.subspan(c.receiver.take(bytes, frames, Clock::now(), &malformed));
			for (FrameReceiver::Received &r : frames) {
				if (c.queue) {
					if (c.drop_token)
						return "a frame after DROP_UNWRITTEN";
					if (const auto *drop = std::get_if<cr::DropUnwritten>(&r.frame)) {
						c.drop_token = drop->token;
						c.queue->drop_unwritten();
						update_reading(id, c);
						continue;
					}
					if (const cr::Type t = cr::type_of(r.frame);
					    t >= cr::Type::auth_request && t <= cr::Type::auth_result)
						return cat(cr::type_name(static_cast<uint16_t>(cr::type_of(r.frame))),
						           " after HELLO");
					const size_t charge = frame_charge(r.size);
					budget->charge(charge);
					c.queue->push(std::move(r.frame), charge);
					continue;
				}
				// Before HELLO: authentication, then HELLO if the gate lets it through.
				bool taken = false;
				std::string note;
				if (std::string why = c.gate.on_frame(r.frame, &taken, &note); !why.empty())
					return why;
				if (!note.empty())
					say(cat(who(c), ": ", note));
				if (taken)
					continue;
				// Before HELLO: HELLO itself, or a frame the writer refuses.
				std::string why = std::holds_alternative<cr::Hello>(r.frame)
				                          ? hello(id, c, r.frame)
				                          : c.writer.apply(r.frame, nullptr);
				if (!why.empty())
					return why;
				c.receiver.allow_full_frames();
			}
		}
		budget->charge(c.receiver.held());
		budget->release(c.held_charged);
		c.held_charged = c.receiver.held();
		return malformed.empty() ? std::string() : cat("malformed frame: ", malformed);
	}

	// The least a read of this connection may be given: what its frame
	// still lacks, up to a slice; a whole slice between frames.
	static size_t least_read(const Connection &c)
	{
		return c.receiver.in_frame() ? std::min(kSlice, c.receiver.missing()) : kSlice;
	}

	// Charges the connection's next read to the budget, or puts it in line
	// for memory (out of epoll: it waits in TCP) and says no.
	bool charge_read(uint64_t id, Connection &c)
	{
		if (c.grant > 0)
			return true;
		if (!c.queue) {
			// Before HELLO, the HELLO's bytes only, whatever the budget (546
			// bytes a sender): no sender waits for memory to be answered.
			c.grant = cr::kHeaderSize + kMaxHelloBody - c.receiver.held();
			budget->charge(c.grant);
			return true;
		}
		if (memory_turns.empty() && budget->room() >= least_read(c)) {
			c.grant = std::min(kSlice, budget->room());
			budget->charge(c.grant);
			return true;
		}
		// In line only with bytes waiting (a turn given to an idle sender
		// would hold its charge idle); its end or an error is read at once.
		uint8_t byte = 0;
		const ssize_t peek = ::recv(c.fd.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
		if (peek < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false; // epoll says when bytes come
		if (peek <= 0) {
			c.grant = 1;
			budget->charge(c.grant);
			return true;
		}
		const auto now = Clock::now();
		if (memory_turns.empty() && now - memory_said >= kAcceptSayEvery) {
			memory_said = now;
			say(cat("memory budget reached (", base::format_size(budget->used()), " of ",
			        base::format_size(budget->limit()),
			        " held from senders): senders are read in turn as memory is freed (said at most every ",
			        std::to_string(kAcceptSayEvery.count()), " s)"));
		}
		c.waiting_memory = true;
		memory_turns.push_back(id);
		set_reading(id, c, false);
		return false;
	}

	// Memory freed: the senders waiting for it read again, in the order
	// they came, as long as their reads fit.
	void serve_memory_turns()
	{
		while (!memory_turns.empty()) {
			const auto it = conns.find(memory_turns.front());
			if (it == conns.end() || !it->second->waiting_memory) {
				memory_turns.pop_front();
				continue;
			}
			Connection &c = *it->second;
			if (budget->room() < least_read(c))
				return;
			c.grant = std::min(kSlice, budget->room());
			budget->charge(c.grant);
			c.waiting_memory = false;
			memory_turns.pop_front();
			update_reading(it->first, c);
		}
	}

	void serve(uint64_t id)
	{
		Connection &c = *conns.at(id);
		for (int n = 0; n < kSlicesPerWakeup && c.reading; n++) {
			if (!charge_read(id, c))
				return;
			const ssize_t got = c.gate.recv(slice.data(), c.grant);
			if (got < 0 && errno == EINTR)
				continue;
			budget->release(c.grant);
			c.grant = 0;
			if (got < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				if (errno == EPROTO)
					return close_conn(id, c.gate.error());
				return close_conn(id, cat("recv: ", std::strerror(errno)));
			}
			if (got == 0) {
				c.gone_line = c.receiver.held()
				                      ? "closed without BYE, in the middle of a frame (dropped)"
				                      : "closed without BYE";
				c.receiver.drop();
				budget->release(c.held_charged);
				c.held_charged = 0;
				c.gone = true;
				set_reading(id, c, false);
				if (!c.queue)
					return close_conn(id, c.gone_line);
				return written(id); // ends it once everything queued is written
			}
			if (std::string why = take(id, c, {slice.data(), static_cast<size_t>(got)}); !why.empty())
				return close_conn(id, why);
			if (c.queue && !c.behind && c.queue->queued_bytes() > opt.queue_high) {
				const std::string line =
					cat("writes behind: ", std::to_string(c.queue->queued_bytes() >> 20),
				            " MiB not yet written; reading this sender only as fast as the "
				            "disk takes it");
				say(cat(who(c), ": ", line));
				c.behind = true;
				update_reading(id, c);
				if (!reply_to(c, cr::Notice{.kind = cr::NoticeKind::writes_behind, .text = line}))
					return close_conn(id, "could not send a NOTICE");
			}
		}
	}

	// What the writer thread wrote: the live index, SYNC replies, the end.
	// All of it goes into the live index before any reply, which may fail
	// and close the connection: what was taken from the queue is not lost.
	void written(uint64_t id)
	{
		Connection &c = *conns.at(id);
		WriteQueue::Results r = c.queue->take();
		for (const Written &w : r.written) {
			c.packets = w.packets;
			if (c.live)
				if (const std::string warn = c.live->apply(w, registry.next_id); !warn.empty())
					say(cat(who(c), ": ", warn));
			c.bye_written |= std::holds_alternative<cr::Bye>(w.frame);
		}
		// The sender hears of the disk's changes where they came among the
		// SYNC replies (write_resumed before the replies it made possible).
		size_t change = 0;
		for (size_t i = 0; i <= r.written.size(); i++) {
			for (; change < r.disk.size() && r.disk[change].at <= i; change++)
				if (const std::string why = disk_changed(c, r.disk[change]); !why.empty())
					return close_conn(id, why);
			const auto *sync = i < r.written.size() ? std::get_if<cr::Sync>(&r.written[i].frame) : nullptr;
			if (sync && !c.gone &&
			    !reply_to(c, cr::SyncReply{.token = sync->token, .packets_written = r.written[i].packets}))
				return close_conn(id, "could not send the SYNC reply");
		}
		if (!r.error.empty())
			return close_conn(id, r.error);
		if (r.dropped) {
			// Its writer thread stopped: c.packets is all it wrote.
			if (!r.unwritten.empty())
				say(cat(who(c), ": ", r.unwritten));
			if (!c.gone &&
			    !reply_to(c, cr::SyncReply{.token = *c.drop_token, .packets_written = c.packets}))
				return close_conn(id, "could not send the SYNC reply");
			return close_conn(
				id, cat("ended with DROP_UNWRITTEN, ", std::to_string(c.packets), " packets written"));
		}
		if (c.behind && c.queue->queued_bytes() < opt.queue_low) {
			c.behind = false;
			say(cat(who(c), ": writes caught up"));
			if (!c.gone) {
				if (!reply_to(c, cr::Notice{.kind = cr::NoticeKind::caught_up,
				                            .text = "writes caught up"}))
					return close_conn(id, "could not send a NOTICE");
				update_reading(id, c);
			}
		}
		if (c.gone && r.idle)
			close_conn(id, c.bye_written ? cat("ended with BYE, ", std::to_string(c.packets), " packets")
			                             : c.gone_line);
	}

	void close_viewer(uint64_t id, const std::string &line)
	{
		const auto it = viewers.find(id);
		if (it == viewers.end())
			return;
		if (!line.empty())
			say(cat(it->second->peer, ": ", line));
		::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, it->second->fd.get(), nullptr);
		viewers.erase(it);
	}

	// Why a viewer's send or recv failed (errno): TLS's reason when it was TLS.
	static std::string viewer_error(const Viewer &v, const char *what)
	{
		return errno == EPROTO && v.gate ? v.gate->why() : cat(what, ": ", std::strerror(errno));
	}

	// Bytes to the viewer, through its gate when it has one (TLS: at most a
	// record at a time, the same bytes again after EAGAIN).
	static ssize_t viewer_send(Viewer &v, const uint8_t *p, size_t n)
	{
		return v.gate ? v.gate->send(p, n) : ::send(v.fd.get(), p, n, MSG_NOSIGNAL);
	}

	// The file bytes of a reply, sent as the viewer's socket takes them: true
	// when all are. In clear, sendfile; through TLS, a record's worth read
	// (page-cached bytes) and written at a time.
	bool flush_file(uint64_t id, Viewer &v)
	{
		while (!v.tls() && v.file.size > 0) {
			off_t off = static_cast<off_t>(v.file.offset);
			const ssize_t n = ::sendfile(v.fd.get(), v.file.fd, &off, v.file.size);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					close_viewer(id, cat("sendfile: ", std::strerror(errno)));
				return false;
			}
			if (n == 0) {
				close_viewer(id, "a file is shorter than its index says");
				return false;
			}
			v.file.offset += static_cast<uint64_t>(n);
			v.file.size -= static_cast<uint64_t>(n);
			v.active = Clock::now();
		}
		while (v.tls() && (v.file.size > 0 || v.chunk_at < v.chunk.size())) {
			if (v.chunk_at == v.chunk.size()) {
				v.chunk.resize(std::min<uint64_t>(v.file.size, control::tls::kMaxRecord));
				const ssize_t n = ::pread(v.file.fd, v.chunk.data(), v.chunk.size(),
				                          static_cast<off_t>(v.file.offset));
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0) {
					close_viewer(id, n < 0 ? cat("read: ", std::strerror(errno))
					                       : "a file is shorter than its index says");
					return false;
				}
				v.chunk.resize(static_cast<size_t>(n));
				v.chunk_at = 0;
				v.file.offset += static_cast<uint64_t>(n);
				v.file.size -= static_cast<uint64_t>(n);
			}
			const ssize_t n = viewer_send(v, v.chunk.data() + v.chunk_at, v.chunk.size() - v.chunk_at);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					close_viewer(id, viewer_error(v, "send"));
				return false;
			}
			v.chunk_at += static_cast<size_t>(n);
			v.active = Clock::now();
		}
		v.chunk.clear();
		v.chunk_at = 0;
		return true;
	}

	// Sends what the viewer's reply still holds: true when all is sent.
	bool flush(uint64_t id, Viewer &v)
	{
		while (v.out_at < v.out.size()) {
			const ssize_t n = viewer_send(v, v.out.data() + v.out_at, v.out.size() - v.out_at);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					close_viewer(id, viewer_error(v, "send"));
				return false;
			}
			v.out_at += static_cast<size_t>(n);
			v.active = Clock::now();
		}
		if (!flush_file(id, v))
			return false;
		v.out.clear();
		v.out_at = 0;
		return true;
	}

	// A viewer of the authenticated port at its gate: true once admitted
	// (its LiveViewer made, seeing the sessions of its key name).
	bool admit(uint64_t id, Viewer &v)
	{
		if (v.state)
			return true;
		switch (v.gate->advance()) {
		case ViewerGate::Step::waiting:
			return false;
		case ViewerGate::Step::closed:
			close_viewer(id, v.gate->why());
			return false;
		case ViewerGate::Step::admitted:
			break;
		}
		v.active = Clock::now();
		say(cat(v.peer, ": authenticated as key ", v.gate->identity(), v.gate->over()));
		v.state = std::make_unique<LiveViewer>(registry, v.peer,
		                                       ViewerAccess{.plain = false, .identity = v.gate->identity()});
		return true;
	}

	void serve_viewer(uint64_t id)
	{
		Viewer &v = *viewers.at(id);
		if (!admit(id, v))
			return; // at its gate still, or closed
		if (!flush(id, v))
			return; // still sending (EPOLLOUT), or closed
		if (!v.closing.empty())
			return close_viewer(id, v.closing);
		// Reads only what fits the request buffer; a viewer that sends more
		// than it reads replies to waits in its own socket. Through TLS, room
		// for a whole record, so that nothing decrypted waits unseen by epoll.
		if (v.in.size() < kViewerInput) {
			const size_t at = v.in.size();
			const size_t room = v.tls() ? control::tls::kMaxRecord : kViewerInput - at;
			v.in.resize(at + room);
			const ssize_t got = v.gate ? v.gate->recv(v.in.data() + at, room)
			                           : ::recv(v.fd.get(), v.in.data() + at, room, 0);
			v.in.resize(at + static_cast<size_t>(std::max<ssize_t>(got, 0)));
			if (got == 0)
				return close_viewer(id, "");
			if (got > 0)
				v.active = Clock::now();
			if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return close_viewer(id, viewer_error(v, "recv"));
		}
		for (;;) {
			live::Request req;
			size_t used = 0;
			std::string why;
			const live::ParseStatus st = live::parse_request(v.in, &req, &used, &why);
			if (st == live::ParseStatus::needs_more)
				break;
			if (st == live::ParseStatus::error)
				return close_viewer(id, cat("malformed request: ", why));
			v.in.erase(v.in.begin(), v.in.begin() + static_cast<ptrdiff_t>(used));
			v.file = {};
			v.closing = v.state->handle(req, v.out, &v.file);
			if (req.cmd == live::Command::attach_session && v.closing.empty()) {
				const LiveSession &ls = *registry.sessions.at(req.id);
				say(cat(v.peer, ": attached to ", ls.hostname, "/", ls.name, " (session ",
				        std::to_string(req.id), ") ",
				        req.seek == live::kSeekLast ? "from its last packet" : "from its beginning",
				        ", ", std::to_string(ls.viewers), " of ",
				        std::to_string(registry.max_viewers_per_session), " viewers"));
			}
			if (!flush(id, v)) {
				if (viewers.count(id))
					watch(EPOLL_CTL_MOD, v.fd.get(), EPOLLOUT, tag(id, viewer));
				return;
			}
			if (!v.closing.empty())
				return close_viewer(id, v.closing);
		}
		watch(EPOLL_CTL_MOD, v.fd.get(), EPOLLIN, tag(id, viewer));
	}

	// Senders without HELLO, or with a frame begun and not whole, in time;
	// viewers without CONNECT in time; viewers past CONNECT that have sent
	// nothing and taken nothing for too long.
	void expire_silent()
	{
		const auto now = Clock::now();
		const auto hello_timeout = std::chrono::milliseconds(opt.hello_timeout_ms);
		const auto frame_timeout = std::chrono::milliseconds(opt.frame_timeout_ms);
		std::vector<std::pair<uint64_t, std::string>> late;
		for (const auto &[id, c] : conns)
			if (!c->queue && now - c->opened > hello_timeout)
				late.emplace_back(id, "no HELLO in time");
			else if (c->receiver.in_frame() && c->held_since == Clock::time_point{} &&
			         now - c->receiver.frame_started() > frame_timeout)
				late.emplace_back(id,
				                  cat("a frame not whole ", std::to_string(opt.frame_timeout_ms),
				                      " ms after its header (",
				                      std::to_string(c->receiver.body_size() - c->receiver.missing()),
				                      " of its ", std::to_string(c->receiver.body_size()),
				                      " bytes came): closed, ", base::format_size(c->receiver.held()),
				                      " released"));
		for (const auto &[id, why] : late)
			close_conn(id, why);
		std::vector<std::pair<uint64_t, std::string>> silent;
		for (const auto &[id, v] : viewers)
			if (!v->state && now - v->opened > hello_timeout)
				silent.emplace_back(id, "not authenticated in time");
			else if (v->state && !v->state->connected() && now - v->opened > hello_timeout)
				silent.emplace_back(id, "no CONNECT in time");
			else if (v->state && v->state->connected() &&
			         now - v->active > std::chrono::milliseconds(opt.viewer_idle_timeout_ms))
				silent.emplace_back(id, cat("nothing sent or read for ",
				                            std::to_string(opt.viewer_idle_timeout_ms), " ms"));
		for (const auto &[id, why] : silent)
			close_viewer(id, why);
	}

	// One connection's turn. Whatever it throws (out of memory, a bug) closes
	// that connection only, never the loop.
	void dispatch(uint64_t t)
	{
		const uint64_t id = (t - kFirstTag) / 4;
		const auto kind = static_cast<Kind>((t - kFirstTag) % 4);
		try {
			serve_tag(id, kind);
		} catch (const std::exception &e) {
			const std::string why = cat("closed on an internal error: ", e.what());
			if (kind == Kind::viewer)
				close_viewer(id, why);
			else
				close_conn(id, why);
		}
	}

	void serve_tag(uint64_t id, Kind kind)
	{
		switch (kind) {
		case sender:
			if (conns.count(id) && conns.at(id)->reading)
				serve(id);
			break;
		case writer:
			if (conns.count(id) && conns.at(id)->queue)
				written(id);
			else if (draining.count(id))
				drained(id);
			break;
		case viewer:
			if (viewers.count(id))
				serve_viewer(id);
			break;
		default:
			break;
		}
	}
};

RelayServer::RelayServer(ServerOptions options) : impl_(new Impl)
{
	std::unique_ptr<Impl> guard(impl_);
	impl_->self = this;
	impl_->opt = std::move(options);
	// A budget that cannot hold one whole frame and a read could never
	// complete the largest frames.
	constexpr size_t kLeastBudget = frame_charge(cr::kHeaderSize + cr::kMaxBody) + kSlice;
	if (impl_->opt.memory_budget < kLeastBudget)
		throw std::runtime_error(cat("memory budget ", base::format_size(impl_->opt.memory_budget),
		                             ": at least ", base::format_size(kLeastBudget),
		                             " (one whole frame and a read)"));
	impl_->budget = std::make_unique<MemoryBudget>(impl_->opt.memory_budget);
	if (std::string why = check_policy(impl_->opt.listen, impl_->opt.senders); !why.empty())
		throw std::runtime_error(why);
	log = [](const std::string &line) { std::fprintf(stderr, "tracery-relayd: %s\n", line.c_str()); };
	impl_->listener = {.fd = listen_on(impl_->opt.listen, impl_->opt.port, &port_), .tag = kListenTag};
	impl_->registry.max_viewers_per_session = impl_->opt.max_viewers_per_session;
	impl_->live_listener = {.fd = listen_on(impl_->opt.live_listen, impl_->opt.live_port, &live_port_),
	                        .tag = kLiveListenTag};
	// The authenticated viewer port: with the senders' keys only.
	if (impl_->opt.senders.keys)
		impl_->viewer_listener = {.fd = listen_on(impl_->opt.listen, impl_->opt.viewer_port, &viewer_port_),
		                          .tag = kViewerListenTag};
	impl_->epoll_fd.reset(::epoll_create1(EPOLL_CLOEXEC));
	impl_->stop_fd.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
	if (!impl_->epoll_fd || !impl_->stop_fd)
		throw std::runtime_error(cat("epoll/eventfd: ", std::strerror(errno)));
	for (auto [fd, tag] :
	     {std::pair{impl_->listener.fd.get(), kListenTag}, std::pair{impl_->live_listener.fd.get(), kLiveListenTag},
	      std::pair{impl_->stop_fd.get(), kStopTag}})
		if (!impl_->watch(EPOLL_CTL_ADD, fd, EPOLLIN, tag))
			throw std::runtime_error(cat("epoll_ctl: ", std::strerror(errno)));
	if (impl_->viewer_listener.fd &&
	    !impl_->watch(EPOLL_CTL_ADD, impl_->viewer_listener.fd.get(), EPOLLIN, kViewerListenTag))
		throw std::runtime_error(cat("epoll_ctl: ", std::strerror(errno)));
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
		if (!s.signal_fd || !s.watch(EPOLL_CTL_ADD, s.signal_fd.get(), EPOLLIN, kSignalTag))
			throw std::runtime_error(cat("signalfd: ", std::strerror(errno)));
	}
	log(cat("listening on ", s.opt.listen, ":", std::to_string(port_), ", writing under ", s.opt.output));
	log(cat("live viewers on ", s.opt.live_listen, ":", std::to_string(live_port_),
	        " (plain lttng-live: the sessions marked public)"));
	if (s.viewer_listener.fd)
		log(cat("authenticated viewers on ", s.opt.listen, ":", std::to_string(viewer_port_),
		        s.opt.senders.tls ? " (TLS" : " (in clear",
		        ", the senders' keys: each sees its key's sessions)"));
	else
		log("no authenticated viewer port (it takes the senders' keys: --auth-keys)");
	log(cat("senders: ", s.opt.senders.tls ? "TLS, " : "in clear, ",
	        s.opt.senders.keys ? cat(std::to_string(s.opt.senders.keys->size()), " keys") : "no keys",
	        s.opt.senders.allow_unauthenticated || !s.opt.senders.keys ? ", unauthenticated ones taken" : "",
	        "; at most ", std::to_string(s.opt.senders.max_sessions_per_sender), " sessions open and ",
	        std::to_string(s.opt.senders.max_dirs_per_sender), " directories made per ",
	        std::to_string(s.opt.senders.dir_window.count()), " s per sender"));
	epoll_event events[64];
	for (;;) {
		const int n = ::epoll_wait(s.epoll_fd.get(), events, 64, s.wait_ms());
		if (n < 0 && errno != EINTR)
			throw std::runtime_error(cat("epoll_wait: ", std::strerror(errno)));
		for (int i = 0; i < n; i++) {
			const uint64_t tag = events[i].data.u64;
			if (tag == kStopTag || tag == kSignalTag) {
				log("stopping");
				s.viewers.clear();
				// Each writer thread writes what it has queued; what the disk
				// still refuses is said, per session.
				for (auto &[id, c] : s.conns)
					if (c->queue)
						if (const std::string lost = c->queue->finish(); !lost.empty())
							log(cat(s.who(*c), ": ", lost));
				for (auto &[id, d] : s.draining)
					if (const std::string lost = d.queue->finish(); !lost.empty())
						log(cat(d.who, ": ", lost));
				s.conns.clear(); // each writer thread writes what it has queued
				s.draining.clear();
				return;
			}
			if (tag == kListenTag)
				s.accept_senders();
			else if (tag == kLiveListenTag)
				s.accept_viewers(s.live_listener);
			else if (tag == kViewerListenTag)
				s.accept_viewers(s.viewer_listener);
			else if (tag >= kFirstTag)
				s.dispatch(tag);
		}
		s.resume_listeners();
		s.expire_silent();
		s.serve_memory_turns();
	}
}

} // namespace tracery::relay
