// traceryd's socket: one event loop (epoll, non-blocking I/O) accepts every
// connection, takes its peer's credentials (SO_PEERCRED) at accept, reads
// frames incrementally (control::FrameDecoder) and judges each connection
// from its first frame's 12-byte header (a command from a peer that may not
// control the daemon is refused before its body is read). Whole messages go
// to bounded thread pools served round-robin per user (FairQueue): commands
// to a few workers (Daemon::handle_command may wait for programs' acks),
// programs' messages, in order, to one thread. Per-user limits bound what a
// user's connections hold; src/daemon/README.md states them and the delay
// one user's flood can cause another's command.
#pragma once

#include "daemon/daemon.hpp"
#include "daemon/fair_queue.hpp"

#include "control/wire.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tracery::daemon {

struct ServerLimits {
	// A connection's first message must be whole within this; a command's
	// reply read within it too. A program may be silent for ever after its hello.
	int request_timeout_ms = 10000;
	// Connections of one user that are not registered programs: not yet
	// judged, or commands waiting, running or being answered.
	unsigned pending_per_user = 64;
	// Registered programs of one user (0: a quarter of max_connections).
	unsigned programs_per_user = 0;
	// Every connection (0: half the descriptors the daemon may open).
	unsigned max_connections = 0;
	// Bytes of one user's messages the daemon holds before handling them.
	size_t buffered_per_user = 64u << 20;
	// Bytes of the hello and new_events messages (the event schemas the
	// daemon keeps) of one user's registered programs.
	size_t schemas_per_user = 128u << 20;
	unsigned command_workers = 4;
	unsigned commands_per_user = 2; // of those workers, at most this many busy with one user's commands
};

class Server {
public:
	Server(Daemon &daemon, base::Fd listener, ServerLimits limits = {});
	~Server();
	Server(const Server &) = delete;
	Server &operator=(const Server &) = delete;
	// Serves until stop_fd becomes readable, then stops accepting and runs
	// at_stop on another thread while it serves the connections it has
	// (programs acknowledge their sessions' stop through them); returns
	// once at_stop has returned.
	void run(int stop_fd, const std::function<void()> &at_stop);

private:
	using Clock = std::chrono::steady_clock;
	enum class Stage {
		fresh,    // nothing judged yet
		request,  // a command: reading its request
		running,  // a command: its request is with a worker
		replying, // writing a reply (or a refusal), then closing
		hello,    // a program: reading its hello
		program,  // a registered program: reading its messages
	};
	struct Conn {
		uint64_t id = 0;
		control::PeerCred peer;
		base::Fd fd; // until a program registers: then app->sock
		std::shared_ptr<App> app;
		control::FrameDecoder decoder{control::kDaemonLimits};
		Stage stage = Stage::fresh;
		control::Kind kind = control::Kind::command; // from its first header on; refusals are sent in it
		bool program = false; // counted in its user's programs (from its first header on)
		bool busy = false;    // a message of it is being handled: not reading
		bool ended = false;   // the peer hung up while busy
		Clock::time_point deadline = Clock::time_point::max();
		std::string out; // the reply being written
		size_t out_sent = 0;
		size_t charged = 0;  // bytes counted in its user's buffered
		size_t in_hand = 0;  // of them, the message being handled
		uint32_t events = 0; // epoll interest
		// Sent with the reply's first byte (watch's socket).
		std::vector<base::Fd> out_fds;
		int sock() const { return app ? app->sock.get() : fd.get(); }
	};
	struct UserCount {
		unsigned pending = 0;
		unsigned programs = 0;
		size_t buffered = 0;
	};
	// What the pools hand back to the loop.
	struct Completion {
		enum What { reply, resume, writable } what;
		uint64_t conn;
		std::string frame;         // reply
		std::vector<base::Fd> fds; // with it
	};
	struct CommandJob {
		uint64_t conn;
		control::PeerCred peer;
		control::Frame frame;
	};
	struct ProgramJob {
		enum What { hello, message, gone } what;
		uint64_t conn;
		std::shared_ptr<App> app;
		control::Frame frame;
	};

	bool may_control(const control::PeerCred &peer) const;
	std::string permission_denied() const;
	void accept_all();
	void note_refusal(const control::PeerCred &peer, const std::string &why);
	void refuse_at_accept(base::Fd fd, const control::PeerCred &peer, const std::string &why);
	void on_events(Conn &c, uint32_t events);
	void read_from(Conn &c);
	bool judge(Conn &c);
	void message_complete(Conn &c);
	void refuse(Conn &c, const std::string &why);
	void start_reply(Conn &c, std::string frame, std::vector<base::Fd> fds = {});
	void write_out(Conn &c);
	// Watches for reading unless a message is being handled (or a reply
	// written), for writing while something waits to be sent.
	void set_interest(Conn &c);
	void recharge(Conn &c);
	void close(Conn &c);
	void complete(Completion done);
	void take_completions();
	void sweep();
	// The reply frame to a command, and the descriptors it carries.
	std::string answer(CommandJob &job, std::vector<base::Fd> *fds);
	void command_worker();
	void program_worker();
	// The programs' thread: one message of a program (its hello first), or its end.
	void handle_program(uid_t uid, ProgramJob &job);
	// Counts a program's schema message against its user; why not, if over the limit.
	std::string take_schemas(uid_t uid, uint64_t app, size_t bytes);
	void forget_schemas(uid_t uid, uint64_t app);
	void post(Completion done);

	Daemon &daemon_;
	base::Fd listener_;
	ServerLimits limits_;
	base::Fd epoll_;
	base::Fd wake_; // eventfd: completions are waiting
	bool accepting_ = true;
	bool stopping_ = false;
	std::atomic<bool> stopped_ = false;
	Clock::time_point accept_again_{};
	std::unordered_map<uint64_t, Conn> conns_;
	std::unordered_map<uid_t, UserCount> users_;
	size_t buffered_ = 0; // over all users
	size_t buffered_peak_ = 0;
	struct Said {
		Clock::time_point at; // the last refusal of a user logged
		unsigned unsaid;      // refusals since, not logged
	};
	std::unordered_map<uid_t, Said> said_;
	uint64_t next_conn_ = 1;
	uint64_t next_app_id_ = 1;
	FairQueue<CommandJob> commands_;
	FairQueue<ProgramJob> programs_;
	std::mutex done_mutex_;
	std::vector<Completion> done_;
	// The programs' thread's: schema bytes by user, and by program.
	std::unordered_map<uid_t, size_t> schema_bytes_;
	std::unordered_map<uint64_t, size_t> app_schema_bytes_;
	std::vector<std::thread> threads_;
};

} // namespace tracery::daemon
