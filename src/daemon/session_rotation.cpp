// A session's trace chunks as the tracery command asks for them: `rotate`
// (the chunk being written archived, the trace going on in a new one),
// `enable-rotation` and `disable-rotation` (rotations on a timer or once the
// chunk holds a size, made by the rotator thread), `clear` (what the session
// recorded so far dropped, on disk and in its buffers), and the last chunk
// archived when a session that rotated is destroyed. The layout:
// session_chunks.hpp.
//
// A rotation does not stop anything: each buffer's consumer is asked to go
// on in the new chunk (consumer::ChannelConsumer::rotate), which it does at
// its next turn, after writing what its buffer holds (the partial
// sub-buffers closed) into the old one; the daemon waits for that with its
// lock released, then completes the old chunk's metadata (event classes may
// have been added meanwhile) and renames it into archives/.
#include "daemon/daemon.hpp"

#include "base/fs_creds.hpp"
#include "base/monotonic.hpp"
#include "daemon/log.hpp"

#include "ctf/trace_dir.hpp"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <mutex>
#include <system_error>

namespace tracery::daemon {

namespace {

// How long a rotation waits for the consumers to move to the new chunk
// (each does at its next turn, at most 100 ms away, after writing up to a
// buffer's worth); how often the rotator looks at the schedules.
constexpr auto kConsumersTimeout = std::chrono::seconds(10);
constexpr auto kRotatorPeriod = std::chrono::milliseconds(100);

// The consumers asked to rotate, counted down as each does (a consumer
// without a thread does it in the call, before they are all counted).
struct Countdown {
	std::mutex mutex;
	std::condition_variable done;
	int64_t left = 0;
	std::function<void()> then_; // once they all did, after wait() gave up
	void arrive() { add(-1); }
	void add(int64_t n)
	{
		std::function<void()> late;
		{
			std::lock_guard lock(mutex);
			if ((left += n) != 0)
				return;
			done.notify_all();
			late = std::move(then_);
		}
		if (late) // on the thread of the last consumer that moved, which holds no lock of the daemon's
			late();
	}
	bool wait()
	{
		std::unique_lock lock(mutex);
		return done.wait_for(lock, kConsumersTimeout, [&] { return left == 0; });
	}
	// f runs once every consumer moved: now if they all did.
	void then(std::function<void()> f)
	{
		{
			std::lock_guard lock(mutex);
			if (left != 0) {
				then_ = std::move(f);
				return;
			}
		}
		f();
	}
};

// A session whose chunk may have reached its rotation size: the chunk's
// directories, read by the rotator without the lock.
struct SizeCheck {
	uint64_t session, chunk;
	uid_t owner;
	gid_t group;
	std::vector<std::string> dirs;
	uint64_t limit;
	bool full = false;
};

// The refusals common to rotate, enable-rotation and clear; through_relay:
// the verb applies to the relay's copy too (rotation: the relay archives
// its chunks as they end).
void check_chunks_apply(const TraceSession &s, const char *verb, bool through_relay)
{
	const std::string name = s.name();
	if (!s.local() && !(through_relay && s.relay_link()))
		throw CommandError("session '" + name + "' has no local trace (it is only sent to a relay): `tracery " +
		                   verb + "` needs a session created with --output or --local-copy");
	if (s.relay_link() && !through_relay)
		throw CommandError("session '" + name + "' is sent to a relay: `tracery " + verb +
		                   "` through the relay is not supported");
	if (s.relay_link() && s.identity().relay.live_period_ns)
		throw CommandError("session '" + name +
		                   "' is live: its viewers read the streams the relay writes, which rotation would "
		                   "move (LTTng does not rotate live sessions either); create it without --live");
}

// The bytes of the chunk being written of a session only sent to a relay:
// those of the packets given to the relay since it began.
uint64_t relay_chunk_bytes(const TraceSession &s)
{
	return s.relay_link()->counts().bytes_taken - s.chunks().relay_bytes_begin;
}

// Whether the chunk being written has anything of a stream: a stream file
// here (as the owner), or for a session only sent, a packet for the relay.
bool chunk_has_streams(const TraceSession &s)
{
	if (!s.local())
		return relay_chunk_bytes(s) > 0;
	return s.chunks().has_streams(s.kernel_domain());
}

// Where the relay archived a chunk, for the reply and the log.
std::string relay_archive(const consumer::RelayLink &link, const std::string &name)
{
	const consumer::RelayLink::Counts c = link.counts();
	return c.relay_path + "/archives/" + name + " on the relay at " + link.config().host + ":" +
	       std::to_string(link.config().port);
}

} // namespace

std::string Daemon::end_chunk(TraceSession &s, Lock &lock, bool clear, uint64_t *removed)
{
	SessionChunks &chunks = s.chunks();
	if (rotations_over_)
		throw CommandError("the daemon is shutting down: session '" + s.name() + "' is not rotated");
	if (chunks.rotating)
		throw CommandError("session '" + s.name() + "' is being rotated or cleared: try again in a moment");
	const bool kernel_layout = s.kernel_domain();
	const bool local = s.local();
	const std::shared_ptr<consumer::RelayLink> relay = s.relay_link();
	const std::string old_user_dir = s.user_dir();
	const time_t now = time(nullptr);
	auto countdown = std::make_shared<Countdown>();
	const std::string root = chunks.next_root(now);
	{
		base::FsCreds as_owner(s.owner(), s.owner_gid());
		chunks.begin(root, now);
		if (relay)
			chunks.relay_bytes_begin = relay->counts().bytes_taken;
		try {
			if (local)
				ctf::make_directories(root, 0700);
			s.move_user_trace();
		} catch (const std::system_error &e) {
			chunks.abandon_next(); // no consumer was asked yet: the trace stays where it was
			throw CommandError("cannot begin a new trace chunk in '" + root + "': " + e.what() +
			                   "; free some space or check the output directory");
		}
	}
	// The kernel trace first (its readers read out what the kernel's buffers
	// hold, then go on in the new chunk), without the lock: destroy waits for
	// `rotating`, start, stop and the kernel commands for `moving_kernel`.
	if (s.kernel_session()) {
		chunks.rotating = chunks.moving_kernel = true;
		lock.unlock();
		const std::string kernel_error = s.rotate_kernel(root); // never throws
		lock.lock();
		chunks.moving_kernel = false;
		rotated_.notify_all();
		if (s.kernel_session()->trace_dir() != chunks.kernel_dir()) {
			chunks.rotating = false;
			rotated_.notify_all();
			base::FsCreds as_owner(s.owner(), s.owner_gid());
			chunks.abandon_next();
			try {
				s.move_user_trace_back(); // where its buffers still write
			} catch (const std::system_error &e) {
				log(Level::warn, "session %s: %s", s.name().c_str(), e.what());
			}
			throw CommandError("cannot begin a new trace chunk in '" + root + "': " + kernel_error);
		}
		if (!kernel_error.empty())
			log(Level::warn, "session %s: rotated, but %s", s.name().c_str(), kernel_error.c_str());
	}
	countdown->add(static_cast<int64_t>(s.rotate_user_buffers([countdown] { countdown->arrive(); })));
	// The consumers move at their next turn; stop and other commands may
	// run meanwhile (stop finishes the buffers, which moves them too), not
	// destroy (it waits for `rotating`), nor another rotation.
	chunks.rotating = true;
	lock.unlock();
	const bool moved = countdown->wait();
	lock.lock();
	// Buffers taken out before (programs that ended) still write into the old chunk.
	finished_.wait(lock, [&] { return !s.finishing_buffers(); });
	chunks.rotating = false;
	rotated_.notify_all();
	if (!moved)
		log(Level::warn, "session %s: some buffers did not move to the new chunk within %lld s%s",
		    s.name().c_str(), static_cast<long long>(kConsumersTimeout.count()),
		    relay ? "; the relay archives the chunk once they do" : "");
	chunks.last_rotation_ns = base::monotonic_ns();
	// The relay archives the old chunk's traces once their streams, closed
	// as the buffers moved, are written (the frames go in order): now, or
	// once the last buffer that still writes into it moves.
	std::string relay_where;
	if (relay) {
		const std::string name = chunks.previous_archive_name(now);
		relay_where = relay_archive(*relay, name);
		countdown->then([relay, chunk = chunks.previous_relay_chunk(), name, session = s.name(), moved] {
			relay->archive_chunk(chunk, name);
			if (!moved)
				log(Level::info, "session %s: its buffers moved: the relay archives %s",
				    session.c_str(), name.c_str());
		});
	}
	if (!local) {
		chunks.note_archived(relay_where);
		log(Level::info, "session %s rotated: %s", s.name().c_str(), relay_where.c_str());
		return relay_where;
	}
	base::FsCreds as_owner(s.owner(), s.owner_gid());
	try {
		if (const std::string metadata = s.user_metadata(); !metadata.empty())
			ctf::TraceDir(old_user_dir).write_metadata(metadata);
		if (clear) {
			const uint64_t n = chunks.remove_previous(kernel_layout);
			if (removed)
				*removed = n;
			log(Level::info, "session %s cleared (%llu files removed)", s.name().c_str(),
			    static_cast<unsigned long long>(n));
			return "";
		}
		const std::string archive = chunks.archive_previous(now, kernel_layout);
		log(Level::info, "session %s rotated: %s", s.name().c_str(), archive.c_str());
		return archive;
	} catch (const std::system_error &e) {
		throw CommandError(std::string("session '") + s.name() + "': " + e.what() +
		                   "; the new chunk is being written in " + chunks.root());
	}
}

control::RotateReply Daemon::cmd_rotate(const control::Rotate &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	check_chunks_apply(s, "rotate", true);
	if (s.snapshot())
		throw CommandError("session '" + s.name() +
		                   "' is in snapshot mode: its traces are its snapshots (`tracery snapshot record`)");
	if (!s.started()) {
		base::FsCreds as_owner(s.owner(), s.owner_gid());
		if (!chunk_has_streams(s))
			throw CommandError("session '" + s.name() + "' recorded nothing since " +
			                   (s.chunks().moved() ? "its last rotation" : "it was created") +
			                   ": `tracery start` it first");
	}
	if (req.no_wait) {
		if (s.chunks().rotating)
			throw CommandError("session '" + s.name() +
			                   "' is being rotated or cleared: try again in a moment");
		to_rotate_.push_back(s.id());
		rotate_wake_.notify_one();
		return {s.name(), std::nullopt};
	}
	return {s.name(), end_chunk(s, lock, false)};
}

control::EnableRotationReply Daemon::cmd_enable_rotation(const control::EnableRotation &req,
                                                         const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req.session, peer);
	check_chunks_apply(s, "enable-rotation", true);
	if (s.snapshot())
		throw CommandError("session '" + s.name() + "' cannot rotate: it is in snapshot mode");
	if (!req.timer_ns && !req.size_bytes)
		throw CommandError("enable-rotation: give --timer=PERIOD, --size=SIZE or both");
	if (req.timer_ns && *req.timer_ns < kMinRotationTimerNs)
		throw CommandError("--timer: rotate at most every 100 ms (e.g. --timer=30s)");
	if (req.size_bytes && *req.size_bytes < kMinRotationSize)
		throw CommandError("--size: at least 64 KiB (e.g. --size=64M)");
	RotationSchedule &schedule = s.chunks().schedule();
	if (req.timer_ns)
		schedule.timer_ns = req.timer_ns;
	if (req.size_bytes)
		schedule.size_bytes = req.size_bytes;
	s.chunks().last_rotation_ns = base::monotonic_ns();
	rotate_wake_.notify_one();
	return {{s.name(), s.chunks().status()}};
}

control::DisableRotationReply Daemon::cmd_disable_rotation(const control::DisableRotation &req,
                                                           const control::PeerCred &peer, Lock &)
{
	TraceSession &s = session_for(req.session, peer);
	RotationSchedule &schedule = s.chunks().schedule();
	const bool both = !req.timer && !req.size;
	if (!schedule.any())
		throw CommandError("session '" + s.name() + "' has no rotation schedule");
	if ((req.timer || both) && schedule.timer_ns)
		schedule.timer_ns.reset();
	else if (req.timer)
		throw CommandError("session '" + s.name() + "' has no rotation timer");
	if ((req.size || both) && schedule.size_bytes)
		schedule.size_bytes.reset();
	else if (req.size)
		throw CommandError("session '" + s.name() + "' has no rotation size");
	return {{s.name(), s.chunks().status()}};
}

control::ClearReply Daemon::cmd_clear(const control::Clear &req, const control::PeerCred &peer, Lock &lock)
{
	TraceSession &s = session_for(req.session, peer);
	check_chunks_apply(s, "clear", false);
	if (s.snapshot())
		throw CommandError("session '" + s.name() +
		                   "' is in snapshot mode: clearing its buffers is not "
		                   "supported; destroy and create it again");
	control::ClearReply reply{s.name(), 0};
	// A kernel trace keeps its stream files open while stopped: its clear
	// begins a new chunk too.
	if (s.started() || s.kernel_session()) {
		end_chunk(s, lock, true, &reply.files_removed);
		return reply;
	}
	if (s.chunks().rotating)
		throw CommandError("session '" + s.name() + "' is being rotated or cleared: try again in a moment");
	base::FsCreds as_owner(s.owner(), s.owner_gid());
	try {
		reply.files_removed = s.chunks().remove(s.kernel_domain(), true);
	} catch (const std::system_error &e) {
		throw CommandError(std::string("session '") + s.name() + "': " + e.what());
	}
	log(Level::info, "session %s cleared (%llu files removed)", s.name().c_str(),
	    static_cast<unsigned long long>(reply.files_removed));
	return reply;
}

void Daemon::wait_rotation(const std::pair<uid_t, std::string> &key, Lock &lock)
{
	rotated_.wait(lock, [&] {
		const auto it = sessions_.find(key);
		return it == sessions_.end() || !it->second->chunks().rotating;
	});
}

void Daemon::archive_last_chunk(TraceSession &s)
{
	SessionChunks &chunks = s.chunks();
	if (!chunks.moved())
		return;
	const time_t end = time(nullptr);
	if (const std::shared_ptr<consumer::RelayLink> &relay = s.relay_link()) {
		// Its streams were closed as its buffers finished: the relay archives it, before BYE.
		const std::string name = chunks.archive_name(end);
		relay->archive_chunk(chunks.relay_chunk(), name);
		log(Level::info, "session %s: its last chunk archived in %s", s.name().c_str(),
		    relay_archive(*relay, name).c_str());
	}
	if (!s.local())
		return;
	base::FsCreds as_owner(s.owner(), s.owner_gid());
	try {
		if (chunks.has_streams(s.kernel_domain())) {
			log(Level::info, "session %s: its last chunk archived in %s", s.name().c_str(),
			    chunks.archive(end, s.kernel_domain()).c_str());
		} else {
			chunks.remove(s.kernel_domain(), false);
		}
	} catch (const std::system_error &e) {
		log(Level::warn, "session %s: its last chunk stays in %s: %s", s.name().c_str(), chunks.root().c_str(),
		    e.what());
	}
}

void Daemon::rotator()
{
	pthread_setname_np(pthread_self(), "rotate-chunks");
	Lock lock(mutex_);
	while (!closing_) {
		rotate_wake_.wait_for(lock, kRotatorPeriod);
		if (closing_)
			return;
		if (rotations_over_)
			continue;
		std::vector<uint64_t> due;
		due.swap(to_rotate_);
		const uint64_t now = base::monotonic_ns();
		std::vector<SizeCheck> sizes;
		for (auto &[key, s] : sessions_) {
			SessionChunks &chunks = s->chunks();
			if (!chunks.schedule().any())
				continue;
			if (!s->started() || s->in_use() || chunks.rotating) {
				if (!s->started())
					chunks.last_rotation_ns = now; // the timer counts while it traces
				continue;
			}
			const RotationSchedule &schedule = chunks.schedule();
			if (schedule.timer_ns && now - chunks.last_rotation_ns >= *schedule.timer_ns)
				due.push_back(s->id());
			else if (schedule.size_bytes && !s->local()) {
				if (relay_chunk_bytes(*s) >= *schedule.size_bytes)
					due.push_back(s->id());
			} else if (schedule.size_bytes)
				sizes.push_back({s->id(), chunks.id(), s->owner(), s->owner_gid(),
				                 chunks.dirs(s->kernel_domain()), *schedule.size_bytes});
		}
		// The owners' directories are read without the lock (a directory
		// the owner controls may make a read wait), the sessions looked up
		// again after.
		if (!sizes.empty()) {
			lock.unlock();
			for (SizeCheck &c : sizes) {
				base::FsCreds as_owner(c.owner, c.group);
				c.full = SessionChunks::bytes_in(c.dirs) >= c.limit;
			}
			lock.lock();
			if (closing_)
				return;
			for (const SizeCheck &c : sizes)
				for (auto &[key, s] : sessions_)
					if (c.full && s->id() == c.session && s->chunks().id() == c.chunk)
						due.push_back(c.session);
		}
		for (const uint64_t id : due) {
			// end_chunk lets other commands in: each session is looked up again.
			TraceSession *s = nullptr;
			for (auto &[key, t] : sessions_)
				if (t->id() == id)
					s = t.get();
			if (!s || s->in_use() || s->chunks().rotating || (!s->started() && !chunk_has_streams(*s)))
				continue;
			try {
				end_chunk(*s, lock, false);
			} catch (const std::exception &e) {
				log(Level::warn, "session %s: rotation failed: %s", s->name().c_str(), e.what());
			}
			if (closing_)
				return;
		}
	}
}

} // namespace tracery::daemon
