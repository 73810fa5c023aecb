// traceryd's socket and connections: see server.hpp.
#include "daemon/server.hpp"

#include "control/messages.hpp"
#include "daemon/log.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace tracery::daemon {

using nlohmann::json;

namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kStopId = UINT64_MAX;
constexpr uint64_t kWakeId = UINT64_MAX - 1;
constexpr unsigned kAcceptBatch = 64;      // then the loop serves the connections it has
constexpr size_t kReadBudget = 256u << 10; // bytes read from one connection per turn
constexpr int kTickMs = 250;               // how often deadlines are checked
constexpr int kAcceptPauseMs = 100;        // out of descriptors: accept again after this
constexpr size_t kTrimAfter = 4u << 20;    // messages held at once that make memory worth trimming after

std::string error_frame(control::Kind kind, const std::string &why)
{
	return control::encode_frame(kind, control::encode(control::ErrorReply{why}).dump());
}

void add(int epoll, int fd, uint64_t id, uint32_t events)
{
	epoll_event ev{};
	ev.events = events;
	ev.data.u64 = id;
	epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev);
}

} // namespace

Server::Server(Daemon &daemon, base::Fd listener, ServerLimits limits)
	: daemon_(daemon), listener_(std::move(listener)), limits_(limits), commands_(limits.commands_per_user),
	  programs_(1)
{
	if (!limits_.max_connections) {
		rlimit r{};
		getrlimit(RLIMIT_NOFILE, &r);
		limits_.max_connections = static_cast<unsigned>(std::min<rlim_t>(r.rlim_cur / 2, 1u << 20));
	}
	if (!limits_.programs_per_user)
		limits_.programs_per_user = std::max(1u, limits_.max_connections / 4);
	// accept_all() takes what is there and returns: the listener never blocks.
	fcntl(listener_.get(), F_SETFL, fcntl(listener_.get(), F_GETFL) | O_NONBLOCK);
	epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
	wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!epoll_ || !wake_)
		throw std::system_error(errno, std::generic_category(), "epoll");
	for (unsigned i = 0; i < limits_.command_workers; i++)
		threads_.emplace_back([this] { command_worker(); });
	threads_.emplace_back([this] { program_worker(); });
}

Server::~Server()
{
	commands_.close();
	programs_.close();
	for (std::thread &t : threads_)
		t.join();
}

bool Server::may_control(const control::PeerCred &peer) const
{
	if (peer.uid == 0 || peer.uid == geteuid())
		return true;
	return daemon_.options().system && in_group(peer.uid, peer.gid, daemon_.options().group);
}

std::string Server::permission_denied() const
{
	return "permission denied: only root" +
	       (daemon_.options().system ? " and members of group '" + daemon_.options().group_name + "'"
	                                 : std::string(" and its owner")) +
	       " may control this session daemon; run your own with `traceryd --daemonize`";
}

void Server::run(int stop_fd, const std::function<void()> &at_stop)
{
	std::thread stopper;
	add(epoll_.get(), listener_.get(), kListenerId, EPOLLIN);
	add(epoll_.get(), stop_fd, kStopId, EPOLLIN);
	add(epoll_.get(), wake_.get(), kWakeId, EPOLLIN);
	auto next_sweep = Clock::now();
	epoll_event events[256];
	while (!stopped_) {
		const int n = epoll_wait(epoll_.get(), events, 256, kTickMs);
		if (n < 0 && errno != EINTR) {
			log(Level::error, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			const uint64_t id = events[i].data.u64;
			if (id == kStopId) {
				// No new connections; the ones there are served on while
				// at_stop runs (stopping sessions waits for programs' acks).
				epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, stop_fd, nullptr);
				if (accepting_)
					epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_.get(), nullptr);
				accepting_ = stopping_ = true;
				stopper = std::thread([this, &at_stop] {
					at_stop();
					stopped_ = true;
					// Wakes the loop (no connection has id 0).
					post({Completion::resume, 0, {}, {}});
				});
				continue;
			}
			// Out of memory while serving one connection costs that
			// connection, not the daemon.
			try {
				if (id == kWakeId) {
					uint64_t count;
					if (read(wake_.get(), &count, sizeof count) < 0) {
					}
					take_completions();
				} else if (id == kListenerId) {
					accept_all();
				} else if (auto it = conns_.find(id); it != conns_.end()) {
					on_events(it->second, events[i].events);
				}
			} catch (const std::exception &e) {
				log(Level::error, "serving a connection: %s", e.what());
				if (auto it = conns_.find(id); it != conns_.end())
					close(it->second);
			}
		}
		if (Clock::now() >= next_sweep) {
			sweep();
			next_sweep = Clock::now() + std::chrono::milliseconds(kTickMs);
		}
	}
	if (stopper.joinable())
		stopper.join();
}

void Server::accept_all()
{
	for (unsigned i = 0; i < kAcceptBatch; i++) {
		base::Fd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
		if (!fd) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				// Out of descriptors: the listener stays readable, so stop
				// watching it for a while rather than spin on it.
				log(Level::warn, "accept: %s; accepting again in %d ms (%zu connections)",
				    strerror(errno), kAcceptPauseMs, conns_.size());
				epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_.get(), nullptr);
				accepting_ = false;
				accept_again_ = Clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
			}
			return;
		}
		control::PeerCred peer;
		if (!control::peer_cred(fd.get(), peer))
			continue;
		if (conns_.size() >= limits_.max_connections) {
			refuse_at_accept(std::move(fd), peer,
			                 "the session daemon has " + std::to_string(conns_.size()) +
			                         " connections, its limit: try again later");
			continue;
		}
		const auto known = users_.find(peer.uid);
		if (known != users_.end() && known->second.pending >= limits_.pending_per_user) {
			refuse_at_accept(std::move(fd), peer,
			                 "uid " + std::to_string(peer.uid) + " has " +
			                         std::to_string(known->second.pending) +
			                         " connections waiting or in a request, the most a user may have: "
			                         "try again when they are answered");
			continue;
		}
		users_[peer.uid].pending++;
		const uint64_t id = next_conn_++;
		Conn &c = conns_[id];
		c.id = id;
		c.peer = peer;
		c.fd = std::move(fd);
		c.deadline = Clock::now() + std::chrono::milliseconds(limits_.request_timeout_ms);
		add(epoll_.get(), c.sock(), id, EPOLLIN);
		c.events = EPOLLIN;
		read_from(c); // its first bytes are often there already
	}
}

void Server::refuse_at_accept(base::Fd fd, const control::PeerCred &peer, const std::string &why)
{
	note_refusal(peer, why);
	// Best effort, never blocking: the peer may read why before the close,
	// in the kind of its header if that is there already (a program sends
	// its hello at once; its reader takes no command frame).
	char header[control::kHeaderSize];
	std::optional<control::Kind> kind;
	if (recv(fd.get(), header, sizeof header, MSG_PEEK | MSG_DONTWAIT) == sizeof header)
		kind = control::header_kind(header);
	const std::string frame = error_frame(kind.value_or(control::Kind::command), why);
	if (send(fd.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
	}
}

// One line per user per second at most: a flood of refusals does not fill
// the log (the run directory of the system daemon is in memory).
void Server::note_refusal(const control::PeerCred &peer, const std::string &why)
{
	auto [it, fresh] = said_.try_emplace(peer.uid, Said{Clock::now(), 0});
	if (fresh)
		log(Level::warn, "refused pid %d (uid %u): %s", peer.pid, peer.uid, why.c_str());
	else
		it->second.unsaid++;
}

void Server::on_events(Conn &c, uint32_t events)
{
	if (events & (EPOLLHUP | EPOLLERR) && c.busy) {
		// Hung up while a message of it is being handled (no reading then).
		if (c.stage == Stage::running) { // nobody to answer
			close(c);
			return;
		}
		epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.sock(), nullptr);
		c.events = 0;
		c.ended = true; // its program is gone once the message is handled
		return;
	}
	if (events & EPOLLOUT) {
		if (c.stage == Stage::replying) {
			write_out(c);
			return;
		}
		if (c.app)
			c.app->flush(); // a program found gone is shut down: the end of its connection follows
		set_interest(c);
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (c.stage == Stage::replying) { // a refused peer that keeps talking, or hung up
			if (events & (EPOLLHUP | EPOLLERR))
				close(c);
			return;
		}
		read_from(c);
	}
}

void Server::read_from(Conn &c)
{
	size_t taken = 0;
	while (!c.busy && c.stage != Stage::replying && taken < kReadBudget) {
		const ssize_t r = control::receive(c.sock(), c.decoder, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r <= 0) {
			if (r == 0 && c.decoder.state() != control::FrameDecoder::State::error && c.decoder.ended())
				log(Level::debug, "pid %d: %s", c.peer.pid, c.decoder.error().c_str());
			else if (r < 0)
				log(Level::debug, "pid %d: %s", c.peer.pid, strerror(errno));
			close(c);
			return;
		}
		taken += static_cast<size_t>(r);
		recharge(c);
		if (users_[c.peer.uid].buffered > limits_.buffered_per_user) {
			refuse(c, "uid " + std::to_string(c.peer.uid) + " has " +
			                  std::to_string(users_[c.peer.uid].buffered) +
			                  " bytes of unfinished messages, over the limit of " +
			                  std::to_string(limits_.buffered_per_user) + " per user");
			return;
		}
		const auto state = c.decoder.state();
		if (state == control::FrameDecoder::State::error) {
			refuse(c, c.decoder.error());
			return;
		}
		if (c.stage == Stage::fresh && state != control::FrameDecoder::State::header) {
			if (!judge(c))
				return; // refused: the connection may be gone already
		}
		if (c.decoder.state() == control::FrameDecoder::State::complete)
			message_complete(c);
	}
}

// The first header is whole: who speaks, and may it? False if refused.
bool Server::judge(Conn &c)
{
	UserCount &u = users_[c.peer.uid];
	c.kind = c.decoder.kind();
	if (c.kind == control::Kind::command) {
		if (!may_control(c.peer)) {
			refuse(c, permission_denied());
			return false;
		}
		c.stage = Stage::request;
		return true;
	}
	if (!daemon_.options().system && c.peer.uid != geteuid()) {
		refuse(c, "this session daemon traces the programs of uid " + std::to_string(geteuid()) + " only");
		return false;
	}
	if (u.programs >= limits_.programs_per_user) {
		refuse(c, "uid " + std::to_string(c.peer.uid) + " has " + std::to_string(u.programs) +
		                  " programs registered, the most a user may have");
		return false;
	}
	u.pending--;
	u.programs++;
	c.program = true;
	c.decoder.expect(control::Kind::program);
	c.stage = Stage::hello;
	return true;
}

void Server::message_complete(Conn &c)
{
	control::Frame frame = c.decoder.take();
	c.busy = true;
	c.in_hand = frame.body.size();
	recharge(c);
	set_interest(c);
	if (c.stage == Stage::request) {
		c.stage = Stage::running;
		c.deadline = Clock::time_point::max(); // the daemon's turn: bounded by its own waits
		commands_.push(c.peer.uid, {c.id, c.peer, std::move(frame)});
		return;
	}
	if (c.stage == Stage::hello) {
		c.app = std::make_shared<App>();
		c.app->id = next_app_id_++;
		c.app->cred = c.peer;
		c.app->sock = std::move(c.fd);
		c.app->on_blocked = [this, id = c.id] { post({Completion::writable, id, {}, {}}); };
		c.stage = Stage::program;
		c.deadline = Clock::time_point::max(); // programs may be silent for ever
		programs_.push(c.peer.uid, {ProgramJob::hello, c.id, c.app, std::move(frame)});
		return;
	}
	programs_.push(c.peer.uid, {ProgramJob::message, c.id, c.app, std::move(frame)});
}

// Answers with an error and closes once it is written (or times out).
void Server::refuse(Conn &c, const std::string &why)
{
	note_refusal(c.peer, why);
	if (c.stage == Stage::program) { // registered: it is disconnected
		close(c);
		return;
	}
	start_reply(c, error_frame(c.kind, why));
}

void Server::start_reply(Conn &c, std::string frame, std::vector<base::Fd> fds)
{
	c.stage = Stage::replying;
	c.busy = false;
	c.in_hand = 0;
	c.decoder = control::FrameDecoder(control::kDaemonLimits); // what it still sends is not read
	recharge(c);
	c.out = std::move(frame);
	c.out_sent = 0;
	c.out_fds = std::move(fds);
	c.deadline = Clock::now() + std::chrono::milliseconds(limits_.request_timeout_ms);
	write_out(c);
}

void Server::write_out(Conn &c)
{
	while (c.out_sent < c.out.size()) {
		std::vector<int> fds;
		if (c.out_sent == 0)
			for (const auto &fd : c.out_fds)
				fds.push_back(fd.get());
		const ssize_t r =
			control::send_some(c.sock(), std::string_view(c.out).substr(c.out_sent), fds, MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				set_interest(c);
				return;
			}
			if (errno == EINTR)
				continue;
			break; // the peer is gone
		}
		c.out_sent += static_cast<size_t>(r);
	}
	close(c);
}

void Server::set_interest(Conn &c)
{
	uint32_t events = EPOLLOUT; // replying: writing only
	if (c.stage != Stage::replying)
		events = (c.busy ? 0u : uint32_t{EPOLLIN}) | (c.app && c.app->wants_write() ? uint32_t{EPOLLOUT} : 0u);
	if (c.events == events)
		return;
	epoll_event ev{};
	ev.events = events;
	ev.data.u64 = c.id;
	epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.sock(), &ev);
	c.events = events;
}

// What the connection holds counts against its user.
void Server::recharge(Conn &c)
{
	const size_t now = (c.stage == Stage::replying ? c.out.size() : c.decoder.buffered()) + c.in_hand;
	UserCount &u = users_[c.peer.uid];
	u.buffered = u.buffered - c.charged + now;
	buffered_ = buffered_ - c.charged + now;
	buffered_peak_ = std::max(buffered_peak_, buffered_);
	c.charged = now;
}

void Server::close(Conn &c)
{
	UserCount &u = users_[c.peer.uid];
	u.buffered -= c.charged;
	buffered_ -= c.charged;
	if (c.program)
		u.programs--;
	else
		u.pending--;
	if (c.app) {
		// Registered (or registering): the program thread ends it, after
		// the message it may be handling. Its socket closes with the App.
		epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.sock(), nullptr);
		programs_.push(c.peer.uid, {ProgramJob::gone, c.id, std::move(c.app), {}});
	}
	if (!u.pending && !u.programs && !u.buffered)
		users_.erase(c.peer.uid);
	conns_.erase(c.id); // closes an unregistered connection's socket (epoll forgets it)
}

void Server::post(Completion done)
{
	{
		std::lock_guard lock(done_mutex_);
		done_.push_back(std::move(done));
	}
	const uint64_t one = 1;
	if (write(wake_.get(), &one, sizeof one) < 0) {
	}
}

void Server::take_completions()
{
	std::vector<Completion> done;
	{
		std::lock_guard lock(done_mutex_);
		done.swap(done_);
	}
	for (Completion &d : done) {
		auto it = conns_.find(d.conn);
		if (it == conns_.end())
			continue; // closed meanwhile
		Conn &c = it->second;
		if (d.what == Completion::reply) {
			start_reply(c, std::move(d.frame), std::move(d.fds));
		} else if (d.what == Completion::resume) {
			c.busy = false;
			c.in_hand = 0;
			recharge(c);
			if (c.ended && c.app) {
				// A program that hung up while a message of it was handled:
				// what it sent before its end (its last notifications) is
				// still read and handled, then its end closes it.
				const uint64_t id = c.id;
				do
					read_from(c);
				while (conns_.count(id) && !c.busy);
				continue;
			}
			if (c.ended) {
				close(c);
				continue;
			}
			set_interest(c);
		} else if (!c.ended) {
			set_interest(c);
		}
	}
}

void Server::sweep()
{
	const auto now = Clock::now();
	if (!accepting_ && !stopping_ && now >= accept_again_) {
		add(epoll_.get(), listener_.get(), kListenerId, EPOLLIN);
		accepting_ = true;
	}
	for (auto it = said_.begin(); it != said_.end();) {
		if (now - it->second.at < std::chrono::seconds(1)) {
			++it;
			continue;
		}
		if (it->second.unsaid)
			log(Level::warn, "refused %u more connections of uid %u (one line per user per second)",
			    it->second.unsaid, it->first);
		it = said_.erase(it);
	}
	std::vector<uint64_t> late;
	for (const auto &[id, c] : conns_)
		if (c.deadline <= now)
			late.push_back(id);
	for (uint64_t id : late) {
		Conn &c = conns_.at(id);
		log(Level::debug, "pid %d (uid %u): no whole %s within %d ms; closing its connection", c.peer.pid,
		    c.peer.uid, c.stage == Stage::replying ? "read of the reply" : "message",
		    limits_.request_timeout_ms);
		close(c);
	}
	if (!buffered_ && buffered_peak_ > kTrimAfter) {
		// Large messages, or a flood of unfinished ones, came and went: give
		// the memory they took back to the system (malloc keeps it otherwise).
		malloc_trim(0);
		buffered_peak_ = 0;
	}
}

std::string Server::answer(CommandJob &job, std::vector<base::Fd> *fds)
{
	json reply;
	control::Message msg;
	std::string why;
	if (!control::parse_frame(std::move(job.frame), msg, &why)) {
		reply = control::encode(control::ErrorReply{why});
	} else {
		try {
			reply = daemon_.handle_command(msg.body, job.peer, fds);
		} catch (const std::exception &e) {
			// A field of the wrong JSON type (nlohmann's type_error) outside the
			// handlers' own error handling: the request is refused, nothing else.
			log(Level::warn, "malformed request from pid %d: %s", job.peer.pid, e.what());
			reply = control::encode(control::ErrorReply{std::string("malformed request: ") + e.what()});
		}
	}
	// Strings that are not UTF-8 (a name read from a hostile ELF file, ...) become U+FFFD rather than
	// an exception that would end the daemon.
	std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
	if (text.size() > control::kPeerLimits.command)
		text = control::encode(control::ErrorReply{"the reply of " + std::to_string(text.size()) +
		                                           " bytes is over the limit of " +
		                                           std::to_string(control::kPeerLimits.command)})
		               .dump();
	return control::encode_frame(control::Kind::command, text);
}

void Server::command_worker()
{
	while (auto job = commands_.pop()) {
		auto &[uid, j] = *job;
		try {
			std::vector<base::Fd> fds;
			std::string frame = answer(j, &fds);
			post({Completion::reply, j.conn, std::move(frame), std::move(fds)});
		} catch (const std::exception &e) { // out of memory: unanswered (its peer's hang-up closes it)
			log(Level::error, "answering pid %d: %s", j.peer.pid, e.what());
		}
		commands_.done(uid);
	}
}

std::string Server::take_schemas(uid_t uid, uint64_t app, size_t bytes)
{
	size_t &user = schema_bytes_[uid];
	if (user + bytes > limits_.schemas_per_user) {
		const std::string why = "the event schemas of the programs of uid " + std::to_string(uid) +
		                        " would take " + std::to_string(user + bytes) + " bytes, over the limit of " +
		                        std::to_string(limits_.schemas_per_user);
		if (!user)
			schema_bytes_.erase(uid);
		return why;
	}
	user += bytes;
	app_schema_bytes_[app] += bytes;
	return {};
}

void Server::forget_schemas(uid_t uid, uint64_t app)
{
	const auto it = app_schema_bytes_.find(app);
	if (it == app_schema_bytes_.end())
		return;
	if ((schema_bytes_[uid] -= it->second) == 0)
		schema_bytes_.erase(uid);
	app_schema_bytes_.erase(it);
}

void Server::handle_program(uid_t uid, ProgramJob &job)
{
	if (job.what == ProgramJob::gone) {
		daemon_.app_gone(*job.app);
		forget_schemas(uid, job.app->id);
		return;
	}
	const size_t size = job.frame.body.size();
	control::Message msg;
	std::string why;
	if (!control::parse_frame(std::move(job.frame), msg, &why))
		throw std::runtime_error(why);
	// What the daemon keeps of a program is its events' schemas: bounded per user.
	if (job.what == ProgramJob::hello || control::is<control::NewEvents>(msg.body)) {
		if (const std::string over = take_schemas(uid, job.app->id, size); !over.empty()) {
			log(Level::warn, "program %d is disconnected: %s", job.app->cred.pid, over.c_str());
			job.app->send(control::encode(control::ErrorReply{over})); // libtracery prints it
			job.app->shutdown_link();
			return;
		}
	}
	if (job.what == ProgramJob::hello)
		daemon_.app_registered(job.app, msg.body);
	else
		daemon_.app_message(*job.app, msg);
}

void Server::program_worker()
{
	while (auto job = programs_.pop()) {
		auto &[uid, j] = *job;
		// Whatever the program sends is input: a message the daemon cannot
		// take (not JSON, a field of the wrong JSON type) ends this
		// program's connection, as its exit would, and nothing else.
		try {
			handle_program(uid, j);
		} catch (const std::exception &e) {
			log(Level::warn, "program %d sent a malformed message and is disconnected: %s", j.app->cred.pid,
			    e.what());
			j.app->shutdown_link();
		}
		if (j.what != ProgramJob::gone)
			post({Completion::resume, j.conn, {}, {}});
		j.app.reset(); // the last reference of a gone program closes its socket here
		programs_.done(uid);
	}
}

} // namespace tracery::daemon
