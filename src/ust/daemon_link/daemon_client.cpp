// libtracery's link to the session daemon: see daemon_client.hpp.
#include "ust/daemon_link/daemon_client.hpp"

#include "base/background_thread.hpp"
#include "base/diagnostics.hpp"
#include "ust/daemon_link/daemon_session.hpp"
#include "ust/daemon_link/trigger_rules.hpp"
#include "ust/registry.hpp"
#include "ust/statedump.hpp"

#include "control/messages.hpp"
#include "control/paths.hpp"
#include "control/wire.hpp"
#include "event/schema.hpp"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace tracery::ust {

using nlohmann::json;

namespace {

// How long a program that found no daemon at start waits before it watches
// the run directories for one (see DaemonClient::run).
constexpr int kUnwatchedMs = 100;

int register_timeout_ms()
{
	const char *v = getenv("TRACERY_REGISTER_TIMEOUT_MS");
	if (!v || !*v)
		return 3000;
	char *end = nullptr;
	long ms = strtol(v, &end, 10);
	return (*end || ms < 0) ? 3000 : static_cast<int>(ms);
}

// Watches the run directories (and their parents, for directories that do
// not exist yet) so the control thread wakes when a daemon's socket appears.
// Returns the inotify descriptor and whether any watch could be set.
std::pair<base::Fd, bool> watch_run_dirs()
{
	base::Fd in(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
	bool any = false;
	if (!in)
		return {std::move(in), false};
	for (const auto &dir : control::client_dirs()) {
		any |= inotify_add_watch(in.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ATTRIB) >= 0;
		const std::string parent = dir.substr(0, dir.find_last_of('/'));
		any |= inotify_add_watch(in.get(), parent.empty() ? "/" : parent.c_str(), IN_CREATE | IN_MOVED_TO) >= 0;
	}
	return {std::move(in), any};
}

// Whether a daemon's socket exists in one of the run directories: a stat()
// each, so that a program started with no daemon never waits for its control
// thread to find that out.
bool daemon_socket_exists()
{
	struct stat st;
	for (const auto &dir : control::client_dirs())
		if (stat(control::socket_path(dir).c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
			return true;
	return false;
}

class DaemonClient final : public RegistryListener {
public:
	void start()
	{
		timeout_ms_ = register_timeout_ms();
		wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		quit_ = false;
		// The first link is made here, on the thread that loads the library
		// (alone in the process, or in a child after fork): the daemon answers
		// within a round trip, where handing the work to the control thread
		// would first wait for that thread to be scheduled.
		if (timeout_ms_ > 0 && daemon_socket_exists() && connect_and_hello())
			serve_until_ready();
		base::start_background_thread(thread_, &DaemonClient::thread_main, this);
	}

	// At exit: the probes stay attached and the socket open, so threads still
	// emitting keep writing whole records; the kernel closes the socket once
	// the process is gone, and only then does the daemon drain the buffers.
	// (The registry's statics are already destroyed here: no Session::stop.)
	// A state dump wanted or under way is finished first (at most the
	// registration timeout), so that a short program's trace still tells
	// where its objects were loaded.
	void stop()
	{
		std::unique_lock lock(mutex_);
		cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms_),
		             [&] { return (!statedump_wanted_ || !connected_) && !statedump_running_; });
		// The notifications of the program's last events, sent from here: the
		// control thread may not get to them before the process is gone.
		if (connected_)
			drain_notifications();
		quit_ = true;
		wake();
	}

	// fork() waits until the control thread is idle in poll(), so the child
	// never inherits a message half handled (or its heap blocks, which
	// nothing in the child could free).
	void before_fork()
	{
		busy_.lock();
		mutex_.lock();
	}
	void after_fork_parent()
	{
		mutex_.unlock();
		busy_.unlock();
	}
	void after_fork_child()
	{
		// Alone in the child, holding both locks: forget the parent's link
		// (its socket stays open in the parent), detach the parent's
		// sessions, and register as a program of our own.
		drop_sessions();
		triggers_.after_fork_child();
		sock_.reset();
		connected_ = false;
		pending_.clear();
		statedump_wanted_ = false; // the child's own sessions will ask for its own
		mutex_.unlock();
		busy_.unlock();
		start();
	}

	void on_event_registered(tracery_event_desc *desc) override
	{
		if (pthread_equal(pthread_self(), thread_))
			return;
		std::unique_lock lock(mutex_);
		if (!connected_)
			return; // announced in the hello, or no daemon
		const uint64_t req = next_req_++;
		const control::NewEvents msg{req, {event::schema_of(*desc)}};
		if (!control::send_message(sock_.get(), control::Kind::program, control::encode(msg)))
			return;
		if (slow_)
			return; // a daemon that did not answer in time is not waited for again until it answers
		if (sessions_.empty())
			return; // no session traces the program: one that starts later gets the ids from the daemon
		pending_.insert(req);
		const uint64_t link = link_serial_;
		if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms_),
		                  [&] { return !pending_.count(req) || link != link_serial_ || !connected_; }))
			slow_ = true;
		pending_.erase(req);
	}
	void on_event_unregistered(tracery_event_desc *) override {}

private:
	static void *thread_main(void *arg)
	{
		pthread_setname_np(pthread_self(), "tracery-control");
		static_cast<DaemonClient *>(arg)->run();
		return nullptr;
	}

	void wake()
	{
		uint64_t one = 1;
		if (write(wake_.get(), &one, sizeof one) < 0) {
		}
	}

	bool quitting()
	{
		std::lock_guard lock(mutex_);
		return quit_;
	}

	bool linked()
	{
		std::lock_guard lock(mutex_);
		return connected_;
	}

	// From start(): handles the daemon's messages until it has registered the
	// program (the sessions that trace it started: their events are recorded
	// from the program's first constructor on), at most TRACERY_REGISTER_TIMEOUT_MS.
	// The control thread goes on from there.
	void serve_until_ready()
	{
		const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
		while (!ready_) {
			const auto left = std::chrono::ceil<std::chrono::milliseconds>(
				deadline - std::chrono::steady_clock::now());
			pollfd p{sock_.get(), POLLIN, 0};
			const int n = left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return; // not registered in time: the control thread waits on
			if (!receive_and_handle()) {
				drop_daemon();
				return;
			}
		}
	}

	// Reads one message of the daemon's and handles it; false when the link
	// ended (EOF, or a message that cannot be read).
	bool receive_and_handle()
	{
		control::Message msg;
		std::string why;
		if (control::recv_message(sock_.get(), control::Kind::program, msg, &why) != control::RecvStatus::ok) {
			if (!why.empty() && why != "Connection reset by peer")
				base::diagnostic("session daemon link: %s", why.c_str());
			return false;
		}
		handle(msg);
		return true;
	}

	// The control thread holds busy_ whenever it is not blocked in poll().
	void run()
	{
		std::unique_lock busy(busy_);
		// With no daemon at start, the run directories are watched only after
		// kUnwatchedMs: closing an inotify watch costs the process one of the
		// kernel's grace periods (4-5 ms, then at its exit), which a
		// short-lived program need not pay. A daemon that starts meanwhile is
		// found when the wait ends.
		int unwatched_ms = kUnwatchedMs;
		while (!quitting()) {
			if (!linked()) {
				base::Fd watch;
				bool watching = false;
				if (!unwatched_ms)
					std::tie(watch, watching) =
						watch_run_dirs(); // before connecting: no daemon slips between
				if (!connect_and_hello()) {
					pollfd p[2] = {{wake_.get(), POLLIN, 0}, {watch ? watch.get() : -1, POLLIN, 0}};
					busy.unlock();
					poll(p, 2, unwatched_ms ? unwatched_ms : watching ? -1 : 5000);
					if (!unwatched_ms)
						usleep(1000); // let a new daemon finish its setup
					busy.lock();
					unwatched_ms = 0;
					continue;
				}
			}
			unwatched_ms = 0;
			serve(busy);
			if (quitting())
				return; // exiting: leave everything to the kernel (see stop())
			const bool was_ready = drop_daemon();
			// Refused: retry in a while (1 s, doubling up to a minute while
			// refused), not in a loop that floods the daemon.
			if (was_ready) {
				retry_ms_ = 1000;
			} else {
				pollfd p{wake_.get(), POLLIN, 0};
				busy.unlock();
				poll(&p, 1, retry_ms_);
				busy.lock();
				retry_ms_ = std::min(retry_ms_ * 2, 60000);
			}
		}
	}

	bool connect_and_hello()
	{
		for (const auto &dir : control::client_dirs()) {
			base::Fd s = control::connect_unix(control::socket_path(dir));
			if (!s)
				continue;
			timeval tv{1, 0}; // a daemon that stops reading never blocks us for long
			setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
			setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv,
			           sizeof tv); // nor holds fork() back mid-message
			std::lock_guard lock(mutex_);
			if (quit_)
				return false;
			// Its ids as its own namespaces see them, for `track -u`.
			control::Hello hello{
				program_invocation_short_name, {}, static_cast<uint32_t>(getpid()), getuid(), getgid()};
			for (auto *d : registered_events())
				hello.events.push_back(event::schema_of(*d));
			const json body = control::encode(hello);
			if (const size_t size = body.dump().size(); size > control::kDaemonLimits.program) {
				if (!too_large_) // said once: the program's events do not change while it waits
					base::diagnostic(
						"this program's %zu events take %zu bytes, over the session daemon's "
						"limit of %u for a program: it is not traced by the session daemon",
						hello.events.size(), size, control::kDaemonLimits.program);
				too_large_ = true;
				return false;
			}
			if (!control::send_message(s.get(), control::Kind::program, body))
				continue;
			sock_ = std::move(s);
			connected_ = true;
			ready_ = false;
			slow_ = false;
			link_serial_++;
			return true;
		}
		return false;
	}

	void serve(std::unique_lock<std::mutex> &busy)
	{
		for (;;) {
			if (take_statedump_request()) {
				record_statedump(); // here, never on a thread of the program's
				std::lock_guard lock(mutex_);
				statedump_running_ = false;
				cv_.notify_all();
			}
			pollfd p[3] = {
				{sock_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}, {triggers_.wake_fd(), POLLIN, 0}};
			busy.unlock();
			const int ready = poll(p, 3, -1);
			busy.lock();
			if (ready < 0 && errno != EINTR)
				return;
			if (quitting())
				return;
			if (p[1].revents & POLLIN) {
				uint64_t count;
				if (read(wake_.get(), &count, sizeof count) < 0) {
				}
			}
			if (p[2].revents & POLLIN)
				send_notifications();
			if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!receive_and_handle())
				return;
		}
	}

	// The notifications of the daemon's triggers that the program's events matched.
	void send_notifications()
	{
		std::lock_guard lock(mutex_);
		drain_notifications();
	}
	// Caller holds mutex_.
	void drain_notifications()
	{
		triggers_.drain([&](const control::Notification &n) {
			control::send_message(sock_.get(), control::Kind::program, control::encode(n));
		});
	}

	// Whether a session started since the last state dump (which clears it).
	bool take_statedump_request()
	{
		std::lock_guard lock(mutex_);
		statedump_running_ = std::exchange(statedump_wanted_, false);
		return statedump_running_;
	}

	void handle(control::Message &msg)
	{
		const std::string type = control::type_of(msg.body);
		std::lock_guard lock(mutex_);
		// A message that is not exactly what its type says comes from a
		// daemon of another build: said, and left unanswered.
		try {
			if (type == control::msg::kStartSession)
				start_session(control::decode<control::StartSession>(msg.body), msg.fds);
			else if (type == control::msg::kUpdate)
				update_session(control::decode<control::Update>(msg.body));
			else if (type == control::msg::kIds)
				take_ids(control::decode<control::Ids>(msg.body));
			else if (type == control::msg::kStopSession)
				stop_session(control::decode<control::StopSession>(msg.body));
			else if (type == control::msg::kTriggers)
				triggers_.set(control::decode<control::Triggers>(msg.body));
			else if (type == control::msg::kReady)
				registration_done(control::decode<control::Ready>(msg.body));
			else if (control::is<control::ErrorReply>(
					 msg.body)) // refused (a limit of the daemon's), then closed
				daemon_refused(control::decode<control::ErrorReply>(msg.body));
		} catch (const control::DecodeError &e) {
			base::diagnostic("session daemon link: %s", e.what());
		}
	}

	// Caller holds mutex_ (handle()), as for the others below.
	void start_session(const control::StartSession &start, std::vector<base::Fd> &buffers)
	{
		std::vector<int> fds;
		for (auto &f : buffers)
			fds.push_back(f.release());
		sessions_.erase(start.session);
		bool tracing = false;
		std::vector<control::FilterRefusal> refused;
		try {
			auto s = std::make_unique<DaemonSession>(start.channels, std::move(fds));
			s->start();
			refused = s->take_refusals();
			sessions_[start.session] = std::move(s);
			tracing = true;
			// The objects loaded so far, for the new session: recorded by the
			// control thread (woken if it waits) once this message is handled.
			if (statedump_enabled()) {
				statedump_wanted_ = true;
				wake();
			}
		} catch (const std::exception &e) {
			base::diagnostic("session '%s' cannot trace this program: %s", start.name.c_str(), e.what());
		}
		ack(start.seq, start.session, tracing, std::move(refused));
	}
	void update_session(const control::Update &update)
	{
		std::vector<control::FilterRefusal> refused;
		if (auto it = sessions_.find(update.session); it != sessions_.end()) {
			it->second->update(update.channels);
			refused = it->second->take_refusals();
		}
		ack(update.seq, update.session, false, std::move(refused));
	}
	void take_ids(const control::Ids &ids)
	{
		for (const control::SessionRules &s : ids.sessions)
			if (auto it = sessions_.find(s.session); it != sessions_.end())
				it->second->update(s.channels);
		pending_.erase(ids.req);
		slow_ = false;
		cv_.notify_all();
	}
	void stop_session(const control::StopSession &stop)
	{
		sessions_.erase(stop.session); // detaches and waits for writers first
		ack(stop.seq, stop.session, false);
	}
	void registration_done(const control::Ready &) { ready_ = true; }
	void daemon_refused(const control::ErrorReply &refusal)
	{
		// Said once: a retry is likely refused alike.
		if (refusal.error != refusal_) {
			base::diagnostic("the session daemon refused this program: %s", refusal.error.c_str());
			refusal_ = refusal.error;
		}
	}

	// Tells the daemon a request was carried out, and which filters were refused.
	void ack(uint64_t seq, uint64_t session, bool tracing, std::vector<control::FilterRefusal> refused = {})
	{
		control::send_message(sock_.get(), control::Kind::program,
		                      control::encode(control::Ack{seq, session, tracing, std::move(refused)}));
	}

	// Caller holds mutex_.
	void drop_sessions()
	{
		for (auto &[id, s] : sessions_)
			s->stop();
		sessions_.clear();
		triggers_.set({}); // the daemon's: a new link brings its own
	}

	// Returns whether the daemon had registered the program (ready).
	bool drop_daemon()
	{
		std::lock_guard lock(mutex_);
		drop_sessions();
		sock_.reset();
		connected_ = false;
		pending_.clear();
		cv_.notify_all();
		return ready_;
	}

	std::mutex busy_;  // held by the control thread while it works; taken before mutex_
	std::mutex mutex_; // state and sends on sock_
	std::condition_variable cv_;
	pthread_t thread_{};
	base::Fd wake_;
	base::Fd sock_;
	bool connected_ = false;
	bool quit_ = false;
	bool slow_ = false;              // the daemon let a request time out
	bool ready_ = false;             // the daemon registered the program on this link
	bool statedump_wanted_ = false;  // a session started: record_statedump() on the control thread
	bool statedump_running_ = false; // the control thread records it
	bool too_large_ = false;         // the hello is over the daemon's limit (said once)
	std::string refusal_;            // the daemon's last refusal (said once)
	int retry_ms_ = 1000;            // the wait before connecting again after a refusal
	int timeout_ms_ = 3000;
	uint64_t next_req_ = 1;
	uint64_t link_serial_ = 0;
	std::set<uint64_t> pending_;
	std::map<uint64_t, std::unique_ptr<DaemonSession>> sessions_;
	TriggerRules triggers_;
};

// Never deleted: the control thread may still run while the process exits.
DaemonClient *client = nullptr;

} // namespace

void daemon_client_start()
{
	if (client)
		return;
	client = new DaemonClient;
	add_listener(client); // first listener: announces new events before sessions attach them
	client->start();
}

void daemon_client_stop()
{
	if (client)
		client->stop();
}

void daemon_client_before_fork()
{
	if (client)
		client->before_fork();
}

void daemon_client_after_fork_parent()
{
	if (client)
		client->after_fork_parent();
}

void daemon_client_after_fork_child()
{
	if (client)
		client->after_fork_child();
}

} // namespace tracery::ust
