// The state of traceryd: sessions and registered programs under one lock,
// the commands of the tracery command, and the conversation with programs
// (registration, buffers and enable states sent to them, quiescing them at
// stop, their end). The core is daemon.cpp; the commands are in
// session_commands.cpp (a session's life), user_commands.cpp (user space)
// and kernel_commands.cpp (-k).
#pragma once

#include "daemon/app.hpp"
#include "daemon/trace_journal.hpp"
#include "daemon/trace_session.hpp"
#include "daemon/triggers.hpp"

#include "control/messages.hpp"
#include "control/wire.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

namespace tracery::daemon {

struct DaemonOptions {
	std::string rundir;
	bool system = false; // root daemon: any user may register programs
	gid_t group = 0;     // system daemon: members may control it
	std::string group_name = "tracing";
	int quiesce_timeout_ms = 3000; // how long stop waits for programs to detach
	uint64_t buffer_quota = 0;     // bytes of buffers per user (quota.hpp); main sets the default
};

// Whether uid (primary group `primary`) is a member of `group`, its
// supplementary groups included.
bool in_group(uid_t uid, gid_t primary, gid_t group);

// A command refused: its one line, naming the problem and the fix, is the
// reply's error.
struct CommandError : std::runtime_error {
	using std::runtime_error::runtime_error;
};

// enable-channel --switch-timer and --monitor-timer (channel_monitor.cpp):
// microseconds, 0 (none) or a period from 10 ms to 24 h; missing:
// `fallback`. Throws CommandError naming `option`.
inline constexpr uint64_t kMinChannelTimerUs = 10'000, kMaxChannelTimerUs = uint64_t{24} * 3'600'000'000;
uint64_t timer_argument(const std::optional<uint64_t> &us, const char *option, uint64_t fallback);

class Daemon {
public:
	explicit Daemon(DaemonOptions options);
	// Finishes the buffers of programs that ended, then returns.
	~Daemon();
	Daemon(const Daemon &) = delete;
	Daemon &operator=(const Daemon &) = delete;

	const DaemonOptions &options() const { return options_; }

	// A request of the tracery command from a peer with these credentials;
	// the reply is its command's, or control::ErrorReply (one line; a
	// request that is not exactly its message names the field).
	// reply_fds: where `watch` puts the descriptor its reply carries (none: it is refused).
	nlohmann::json handle_command(const nlohmann::json &request, const control::PeerCred &peer,
	                              std::vector<base::Fd> *reply_fds = nullptr);

	// Programs: registration (hello), later messages, end of connection.
	// A message that is not exactly its struct throws control::DecodeError.
	void app_registered(const std::shared_ptr<App> &app, const nlohmann::json &hello);
	void app_message(App &app, const control::Message &msg);
	void app_gone(App &app);

	// Before serving: loads and starts the sessions saved in the auto/
	// folder of the sessions directory (control::default_sessions_dir()),
	// as the daemon's user; each failure logged (session_files.cpp).
	void load_auto_sessions();

	// Stops every session (their traces are complete on disk) at exit, and
	// removes the journal of open traces: nothing is left to repair.
	void shutdown();

private:
	using Lock = std::unique_lock<std::mutex>;
	// A command: its request decoded, carried out, its reply encoded.
	using Command =
		std::function<nlohmann::json(Daemon &, const nlohmann::json &, const control::PeerCred &, Lock &)>;
	// The command of `Request`, carried out by handler(daemon, request, peer, lock).
	template <class Request, class Handler>
	static std::pair<std::string, Command> command(Handler handler);

	// Runs `work` without the lock, `s` marked busy meanwhile (other
	// commands keep off it: work that reads files or /proc, or waits for the
	// kernel); the lock is held again when it returns or rethrows what
	// `work` threw.
	template <class Work>
	static void without_lock(TraceSession &s, Lock &lock, Work &&work)
	{
		std::exception_ptr failed;
		s.begin_busy();
		lock.unlock();
		try {
			work();
		} catch (...) {
			failed = std::current_exception();
		}
		lock.lock();
		s.end_busy();
		if (failed)
			std::rethrow_exception(failed);
	}
	bool may_access(const TraceSession &s, const control::PeerCred &peer) const;
	bool traces(const TraceSession &s, const App &app) const;
	// The session a request names: the peer's own of that name; for root,
	// failing that, another user's if only one user has one of that name.
	// Throws (one line) if there is none the peer may see, or it is busy.
	TraceSession &session_for(const std::string &name, const control::PeerCred &peer);
	// The buffer `app` writes into in each channel of `s`, made where
	// missing; nullptr for a channel that does not trace it (over its user's
	// buffer quota, or a buffer that could not be made), with the reason
	// added to *refused. With `made` (start), a buffer that cannot be made
	// throws instead, and `made` lists the buffers made, to undo them.
	struct Refusal {
		Channel *channel;
		Channel::NotTraced what;
	};
	std::vector<Buffer *> buffers_for(TraceSession &s, App &app, std::vector<Refusal> *refused,
	                                  std::vector<TraceSession::NewBuffer> *made = nullptr);
	// Logs each refusal and keeps it for `tracery status`.
	void note(TraceSession &s, const std::vector<Refusal> &refused);
	// Sends the session's buffers (one per channel, or none where nullptr)
	// and ids to a program; returns the sequence number its ack will carry
	// (0 if nothing was sent: no buffer at all, or the send failed).
	uint64_t join(TraceSession &s, App &app, const std::vector<Buffer *> &buffers);
	// Sends a request about session s that the program acknowledges
	// (StartSession, Update, StopSession: given its session and seq);
	// returns the seq, 0 if the send failed.
	template <class Message>
	uint64_t request(App &app, const TraceSession &s, Message msg, std::span<const int> fds = {});
	// What a program's ack says, if it acknowledges a request of ours: the
	// filters it refused (kept for refusals(), bounded) and whether it writes
	// into the session's buffers. Other acks are ignored.
	void take_ack(App &app, const control::Ack &ack);
	// Keeps the events a program declares (its hello, new_events), each
	// schema checked and rebuilt (event::checked_schema); one that describes
	// no valid event is logged and left out.
	void add_events(App &app, const std::vector<nlohmann::json> &schemas);
	// Waits (lock released, at most quiesce_timeout_ms) until every program
	// acknowledged its sequence number or is gone; returns the pids of late ones.
	std::vector<int32_t> wait_acks(const std::vector<std::pair<uint64_t, uint64_t>> &pending, Lock &lock);
	// The ids and filters of the program's events in each channel of s.
	std::vector<control::ChannelRules> session_ids(TraceSession &s, App &app);
	// Sends the session's new event rules to its programs and waits (bounded)
	// until they apply them. Returns the filters they refused (see refusals).
	std::vector<control::ProgramRefusal> update_members(TraceSession &s, Lock &lock);
	// A started session's programs joined to it or detached from it as its
	// tracking now says: those it now includes join it (buffers and ids sent,
	// as at registration), those it excludes are sent StopSession (they stop
	// writing into its buffers; what they wrote before stays in the trace).
	// Returns once they acknowledge (bounded).
	void retrack_members(TraceSession &s, Lock &lock);
	// The filters refused in the acknowledgements of these requests (taken:
	// each is reported once).
	std::vector<control::ProgramRefusal> refusals(const std::vector<std::pair<uint64_t, uint64_t>> &pending);
	// Stops a started session: quiesces its programs, waits for the buffers
	// being finished elsewhere, finishes the rest (lock released) and
	// returns the reply of `stop`. `s` stays valid: it is `stopping`
	// meanwhile, which keeps every other command off it.
	control::StopReply stop_session(TraceSession &s, Lock &lock);
	// Finishes retired buffers with the lock released (TraceSession::Retired).
	// Their sessions count them as finishing until they are accounted.
	using RetiredWork = std::vector<std::pair<TraceSession *, TraceSession::Retired>>;
	void finish_unlocked(RetiredWork work, Lock &lock);
	// The thread that finishes the buffers of programs that ended
	// (app_gone), so that a program's end holds up no other program's
	// messages.
	void finisher();
	std::vector<control::LostCount> lost_report(const TraceSession &s) const;
	// Rewrites the journal of open traces (trace_journal.hpp) if the set of
	// sessions that have been started and not destroyed changed: call it
	// before a session's first packet is written and after one is destroyed.
	void note_open_traces();

	// A session's life (session_commands.cpp).
	control::CreateReply cmd_create(const control::Create &, const control::PeerCred &, Lock &);
	// `create --set-url`: the URL checked, the connection made and HELLO
	// answered (lock released meanwhile); --public-live: HELLO marks the live
	// session for the relay's plain lttng-live port. Throws (one line) otherwise.
	SessionRelay open_relay(const std::string &session, const std::string &url, const control::Create &req,
	                        Lock &lock);
	static constexpr int kRelayConnectTimeoutMs = 3000;
	// stop and destroy wait at most this for the relay to confirm what was queued.
	static constexpr int kRelayStopTimeoutMs = 10000;
	static constexpr size_t kRelayQueueBytes = 64u << 20; // per session
	static constexpr uint64_t kMinLivePeriodNs = 10'000'000, kMaxLivePeriodNs = 3'600'000'000'000;
	control::DestroyReply cmd_destroy(const control::Destroy &, const control::PeerCred &, Lock &);
	control::StartReply cmd_start(const control::Start &, const control::PeerCred &, Lock &);
	control::StopReply cmd_stop(const control::Stop &, const control::PeerCred &, Lock &);
	control::StatusReply cmd_status(const control::Status &, const control::PeerCred &, Lock &);
	control::ListReply cmd_list(const control::List &, const control::PeerCred &, Lock &);
	control::SnapshotRecordReply cmd_snapshot(const control::SnapshotRecord &, const control::PeerCred &, Lock &);

	// User space (user_commands.cpp).
	control::EnableChannelReply cmd_enable_channel(const control::EnableChannel &, const control::PeerCred &,
	                                               Lock &);
	// enable-event, and disable-event with `disable`.
	control::EventRulesReply cmd_event_rules(const control::EventRules &, bool disable, const control::PeerCred &,
	                                         Lock &);
	void check_filter(const std::string &expression, const std::vector<std::string> &patterns,
	                  const control::PeerCred &peer) const;
	control::AddContextReply cmd_add_context(const control::AddContext &, const control::PeerCred &, Lock &);
	control::ListEventsReply cmd_list_events(const control::ListEvents &, const control::PeerCred &, Lock &);
	// track and untrack (user_tracking.cpp), either domain; the kernel's
	// attributes are kernel_commands.cpp's.
	control::TrackingReply cmd_track(const control::Tracking &, bool untrack, const control::PeerCred &, Lock &);

	// Session files (session_files.cpp): what a session is, as saved; a
	// session made again from it (the requests that made it, in order).
	control::SavedSession describe(const TraceSession &s) const;
	control::SaveReply cmd_save(const control::Save &, const control::PeerCred &, Lock &);
	control::LoadReply cmd_load(const control::Load &, const control::PeerCred &, Lock &);
	void replay(const control::Load &req, const control::PeerCred &peer, Lock &lock);
	void load_trigger(const control::SavedTrigger &t, const control::PeerCred &peer, Lock &lock);
	// snapshot add-output, del-output, list-output (snapshot_outputs.cpp).
	control::SnapshotAddOutputReply cmd_snapshot_add_output(const control::SnapshotAddOutput &,
	                                                        const control::PeerCred &, Lock &);
	control::SnapshotDelOutputReply cmd_snapshot_del_output(const control::SnapshotDelOutput &,
	                                                        const control::PeerCred &, Lock &);
	control::SnapshotListOutputReply cmd_snapshot_list_output(const control::SnapshotListOutput &,
	                                                          const control::PeerCred &, Lock &);

	// The kernel domain (kernel_commands.cpp).
	// Throws (one line) unless the peer may trace the kernel: root, or a
	// member of the daemon's group.
	void check_kernel_access(const control::PeerCred &peer) const;
	// The session a kernel request names, if its kernel domain may change
	// now (not while tracing; see kernel_commands.cpp).
	TraceSession &kernel_session_for(const std::string &name, const control::PeerCred &peer);
	// enable-event -k, and disable-event -k with `disable`.
	control::KernelEventsReply cmd_kernel_event(const control::KernelEvents &, bool disable,
	                                            const control::PeerCred &, Lock &);
	// enable-event -k --userspace-probe: resolved without the lock.
	control::KernelEventsReply enable_probe(TraceSession &s, const control::KernelEvents &req,
	                                        const control::PeerCred &peer, Lock &lock);
	control::KernelEnableChannelReply cmd_kernel_channel(const control::KernelEnableChannel &,
	                                                     const control::PeerCred &, Lock &);
	// track -k, and untrack -k with `untrack`.
	control::KernelTrackingReply cmd_kernel_track(const control::KernelTracking &, bool untrack,
	                                              const control::PeerCred &, Lock &);
	control::KernelListReply cmd_kernel_list(const control::KernelList &, const control::PeerCred &, Lock &);
	// track -k and untrack -k with the tracking message (cmd_track's kernel half).
	control::TrackingReply cmd_kernel_process_attrs(const control::Tracking &, bool untrack,
	                                                const control::PeerCred &, Lock &);
	control::KernelAddContextReply cmd_kernel_context(const control::KernelAddContext &, const control::PeerCred &,
	                                                  Lock &);

	// A channel's timers and disable-channel (channel_monitor.cpp).
	control::DisableChannelReply cmd_disable_channel(const control::DisableChannel &, const control::PeerCred &,
	                                                 Lock &);
	control::DisableChannelReply disable_kernel_channel(const control::DisableChannel &, const control::PeerCred &);
	// enable-channel of a disabled channel's name, with no option: enabled again.
	control::EnableChannelReply enable_channel_again(TraceSession &s, Channel &ch,
	                                                 const control::EnableChannel &req, Lock &lock);
	control::KernelEnableChannelReply enable_kernel_channel_again(TraceSession &s,
	                                                              const control::KernelEnableChannel &req);
	// The thread that runs the channels' switch and monitor timers and
	// evaluates the triggers on their samples.
	void monitor();

	// Triggers (trigger_commands.cpp, triggers.hpp).
	void start_trigger_actions();
	// A kernel event trigger's instance (kernel/event_watch.hpp); removes
	// the trigger and throws CommandError if it cannot be made.
	void watch_kernel_events(Trigger &t);
	// Ends every kernel trigger's instance (their readers may need the lock).
	void stop_kernel_triggers();
	// The monitor's sample of a session's kernel buffer usage, when its
	// --monitor-timer period is over (*next: when the next one is due;
	// *sampled set when it took one).
	std::vector<ActionRun> sample_kernel(TraceSession &s, uint64_t now, uint64_t *next, bool *sampled);
	// Sends the trigger rules to the programs a change of `owner`'s triggers concerns.
	void send_trigger_rules(uid_t owner);
	void run_actions(const std::vector<ActionRun> &runs);
	control::AddTriggerReply cmd_add_trigger(const control::AddTrigger &, const control::PeerCred &, Lock &);
	control::ListTriggersReply cmd_list_triggers(const control::ListTriggers &, const control::PeerCred &, Lock &);
	control::RemoveTriggerReply cmd_remove_trigger(const control::RemoveTrigger &, const control::PeerCred &,
	                                               Lock &);
	nlohmann::json cmd_watch(const nlohmann::json &body, const control::PeerCred &peer,
	                         std::vector<base::Fd> *reply_fds);
	void take_notification(App &app, const control::Notification &n);
	// Trace chunks: rotation and clear (session_rotation.cpp).
	control::RotateReply cmd_rotate(const control::Rotate &, const control::PeerCred &, Lock &);
	control::EnableRotationReply cmd_enable_rotation(const control::EnableRotation &, const control::PeerCred &,
	                                                 Lock &);
	control::DisableRotationReply cmd_disable_rotation(const control::DisableRotation &, const control::PeerCred &,
	                                                   Lock &);
	control::ClearReply cmd_clear(const control::Clear &, const control::PeerCred &, Lock &);
	static constexpr uint64_t kMinRotationTimerNs = 100'000'000, kMinRotationSize = 64 << 10;
	// Ends the chunk being written: a new one begins, its buffers' consumers
	// move to it (lock released meanwhile, `rotating` set), then the old one
	// is archived, or with `clear` removed (*removed: its files). Returns the
	// archive's directory ("" when cleared). Throws CommandError.
	std::string end_chunk(TraceSession &s, Lock &lock, bool clear, uint64_t *removed = nullptr);
	// Until no rotation of the session `key` is under way (destroy).
	void wait_rotation(const std::pair<uid_t, std::string> &key, Lock &lock);
	// destroy: the last chunk of a session that left chunk 0 archived
	// (removed if it holds no stream file).
	void archive_last_chunk(TraceSession &s);
	// Until a rotation's move of the session's kernel trace is over (the
	// session stays: destroy waits for the rotation).
	void wait_kernel_move(TraceSession &s, Lock &lock)
	{
		rotated_.wait(lock, [&] { return !s.chunks().moving_kernel; });
	}
	// The thread that rotates sessions on their schedule, and those rotated
	// with --no-wait (to_rotate_, by session id).
	void rotator();

	DaemonOptions options_;
	BufferQuota quota_; // before sessions_: their buffers give their charges back to it
	TraceJournal journal_;
	std::vector<JournalEntry> journaled_; // what journal_ holds
	std::mutex mutex_;
	std::condition_variable acks_;
	std::condition_variable finished_; // a session's retired buffers were accounted
	std::condition_variable retired_;  // work for finisher()
	std::deque<RetiredWork> to_finish_;
	bool closing_ = false; // the finisher ends once to_finish_ is empty
	std::thread finisher_;
	std::condition_variable rotate_wake_; // work for rotator()
	std::condition_variable rotated_;     // a session's rotation ended
	std::vector<uint64_t> to_rotate_;
	bool rotations_over_ = false; // shutdown: no rotation begins
	std::thread rotator_;
	std::condition_variable monitor_wake_; // monitor() ends (closing_)
	std::thread monitor_;
	// Sessions by (owner, name): each user names its sessions in a space of
	// its own, so a name says nothing of other users' sessions. session_for()
	// is how a request's name finds one.
	using SessionKey = std::pair<uid_t, std::string>;
	std::map<SessionKey, std::unique_ptr<TraceSession>> sessions_;
	std::map<uint64_t, std::shared_ptr<App>> apps_;
	std::map<uint64_t, std::set<uint64_t>> members_; // session id -> programs tracing into it
	uint64_t next_session_id_ = 1;
	uint64_t next_seq_ = 1;
	TriggerTable triggers_;
	std::unique_ptr<ActionRunner> actions_; // stopped first: its actions are commands
};

} // namespace tracery::daemon
