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
	void arrive() { add(-1); }
	void add(int64_t n)
	{
		std::lock_guard lock(mutex);
		if ((left += n) == 0)
			done.notify_all();
	}
	bool wait()
	{
		std::unique_lock lock(mutex);
		return done.wait_for(lock, kConsumersTimeout, [&] { return left == 0; });
	}
};

// The refusals common to rotate, enable-rotation and clear.
void check_chunks_apply(const TraceSession &s, const char *verb)
{
	const std::string name = s.name();
	if (!s.local())
		throw CommandError("session '" + name + "' has no local trace (it is only sent to a relay): `tracery " +
		                   verb + "` needs a session created with --output or --local-copy");
	if (s.kernel_domain() || s.kernel_spec().any_events())
		throw CommandError("session '" + name + "' traces the kernel: `tracery " + verb +
		                   "` of sessions with kernel events is not supported yet; stop, destroy and create it "
		                   "again to begin a new trace");
}

} // namespace

std::string Daemon::end_chunk(TraceSession &s, Lock &lock, bool clear, uint64_t *removed)
{
	SessionChunks &chunks = s.chunks();
	if (chunks.rotating)
		throw CommandError("session '" + s.name() + "' is being rotated or cleared: try again in a moment");
	const bool kernel_layout = s.kernel_domain();
	const std::string old_user_dir = s.user_dir();
	const time_t now = time(nullptr);
	auto countdown = std::make_shared<Countdown>();
	{
		base::FsCreds as_owner(s.owner(), s.owner_gid());
		const std::string root = chunks.next_root(now);
		chunks.begin(root, now);
		try {
			ctf::make_directories(root, 0700);
			const size_t asked = s.rotate_user_trace([countdown] { countdown->arrive(); });
			countdown->add(static_cast<int64_t>(asked));
		} catch (const std::system_error &e) {
			chunks.abandon_next(); // no consumer was asked yet: the trace stays where it was
			throw CommandError("cannot begin a new trace chunk in '" + root + "': " + e.what() +
			                   "; free some space or check the output directory");
		}
	}
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
		log(Level::warn, "session %s: some buffers did not move to the new chunk within %lld s",
		    s.name().c_str(), static_cast<long long>(kConsumersTimeout.count()));
	chunks.last_rotation_ns = base::monotonic_ns();
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
	check_chunks_apply(s, "rotate");
	if (s.snapshot())
		throw CommandError("session '" + s.name() +
		                   "' is in snapshot mode: its traces are its snapshots (`tracery snapshot record`)");
	if (s.relay_link())
		throw CommandError("session '" + s.name() +
		                   "' is sent to a relay: rotation through the relay is not "
		                   "supported yet");
	if (!s.started()) {
		base::FsCreds as_owner(s.owner(), s.owner_gid());
		if (!s.chunks().has_streams(s.kernel_domain()))
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
	check_chunks_apply(s, "enable-rotation");
	if (s.snapshot() || s.relay_link())
		throw CommandError("session '" + s.name() + "' cannot rotate: " +
		                   (s.snapshot() ? "it is in snapshot mode" : "it is sent to a relay"));
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
	check_chunks_apply(s, "clear");
	if (s.snapshot())
		throw CommandError("session '" + s.name() +
		                   "' is in snapshot mode: clearing its buffers is not "
		                   "supported; destroy and create it again");
	if (s.relay_link())
		throw CommandError("session '" + s.name() +
		                   "' is sent to a relay: clear through the relay is not "
		                   "supported yet");
	control::ClearReply reply{s.name(), 0};
	if (s.started()) {
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
	if (!chunks.moved() || !s.local())
		return;
	base::FsCreds as_owner(s.owner(), s.owner_gid());
	try {
		if (chunks.has_streams(s.kernel_domain())) {
			log(Level::info, "session %s: its last chunk archived in %s", s.name().c_str(),
			    chunks.archive(time(nullptr), s.kernel_domain()).c_str());
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
		std::vector<uint64_t> due;
		due.swap(to_rotate_);
		const uint64_t now = base::monotonic_ns();
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
			bool rotate = schedule.timer_ns && now - chunks.last_rotation_ns >= *schedule.timer_ns;
			if (!rotate && schedule.size_bytes) {
				// A few directory entries of the owner's, read with the lock
				// held (as the output directory's checks are).
				base::FsCreds as_owner(s->owner(), s->owner_gid());
				rotate = chunks.bytes(s->kernel_domain()) >= *schedule.size_bytes;
			}
			if (rotate)
				due.push_back(s->id());
		}
		for (const uint64_t id : due) {
			// end_chunk lets other commands in: each session is looked up again.
			TraceSession *s = nullptr;
			for (auto &[key, t] : sessions_)
				if (t->id() == id)
					s = t.get();
			if (!s || s->in_use() || s->chunks().rotating ||
			    (!s->started() && !s->chunks().has_streams(s->kernel_domain())))
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
