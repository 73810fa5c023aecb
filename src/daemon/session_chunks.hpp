// A session's trace chunks: the directory its traces are written in now, and
// the archives of the chunks before it (`rotate`, `enable-rotation`,
// `clear`), laid out as LTTng lays them out (lttng-concepts(7), "trace
// chunk archive naming"):
//
//   OUTPUT/                               chunk 0, in the session's usual layout
//                                         (the user trace in OUTPUT, or OUTPUT/ust
//                                         and OUTPUT/kernel), until it ends
//   OUTPUT/BEGIN-ID/ust                   chunk ID (1, 2, ...) while it is written
//   OUTPUT/archives/BEGIN-END-ID/ust      each chunk once it ended: a whole trace
//
// BEGIN and END are local time, YYYYmmddTHHMMSS+HHMM. A chunk that ended is
// renamed into archives/ whole (chunk 0: its files moved, the user trace
// into ust/), once no buffer writes into it any more. The file operations
// run as the caller is (the daemon takes the session owner's filesystem
// credentials), touch only regular files and directories (lstat), and
// follow no symbolic link.
#pragma once

#include "control/messages.hpp"

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::daemon {

// "20261129T001139+0000": `t` in local time, as LTTng names chunks.
std::string chunk_time(time_t t);

// Whether `name` is that of a chunk being written, BEGIN-ID (the crash
// repair looks into them).
bool is_chunk_name(std::string_view name);

// What makes a session rotate by itself (enable-rotation).
struct RotationSchedule {
	std::optional<uint64_t> timer_ns;
	std::optional<uint64_t> size_bytes;
	bool any() const { return timer_ns || size_bytes; }
};

class SessionChunks {
public:
	// Chunk 0 of a session writing to OUTPUT, begun at `created`.
	SessionChunks(std::string output, time_t created);

	uint64_t id() const { return current_.id; }
	// Whether the chunk being written is not chunk 0 (its directory is OUTPUT/BEGIN-ID).
	bool moved() const { return current_.id > 0; }
	// The directory of the chunk being written.
	const std::string &root() const { return current_.root; }
	// Its user trace and kernel trace; kernel_layout: the session has both.
	std::string user_dir(bool kernel_layout) const { return user_dir(current_, kernel_layout); }
	std::string kernel_dir() const { return current_.root + "/kernel"; }
	// The root the next chunk will have, begun at `now`.
	std::string next_root(time_t now) const;
	// The next chunk begins: written in `root` (next_root) from now on. The
	// one before stays the previous chunk until archive_previous() or
	// remove_previous().
	void begin(std::string root, time_t now);
	// A chunk begun that could not be made: the previous one is the chunk
	// being written again, and what was made of the other is removed.
	void abandon_next();

	// The name of the previous chunk's archive, BEGIN-END-ID, and of the
	// chunk being written's, were they to end at `end`.
	std::string previous_archive_name(time_t end) const { return archive_name(previous_, end); }
	std::string archive_name(time_t end) const { return archive_name(current_, end); }
	// The previous chunk, and the chunk being written, as the paths of their
	// traces on a relay name them (consumer::RelayLink::archive_chunk):
	// BEGIN-ID, "" for chunk 0.
	std::string previous_relay_chunk() const { return relay_chunk(previous_); }
	std::string relay_chunk() const { return relay_chunk(current_); }
	// A chunk archived elsewhere (by the relay, in its copy of a session
	// that is only sent there): counted, and `where` shown as the last archive.
	void note_archived(std::string where);
	// The relay's bytes taken (consumer::RelayLink::Counts::bytes_taken)
	// when the chunk being written began: a session only sent measures its
	// chunk with them.
	uint64_t relay_bytes_begin = 0;

	// The previous chunk, which ended at `end`, moved into
	// OUTPUT/archives/BEGIN-END-ID, whose path is returned. Throws
	// std::system_error naming the file.
	std::string archive_previous(time_t end, bool kernel_layout) { return archive(previous_, end, kernel_layout); }
	// The chunk being written, which ends at `end` (destroy), likewise.
	std::string archive(time_t end, bool kernel_layout) { return archive(current_, end, kernel_layout); }
	// The previous chunk dropped (clear): its files and directories (not
	// chunk 0's OUTPUT itself). Returns the files removed. Throws
	// std::system_error naming the file.
	uint64_t remove_previous(bool kernel_layout) { return remove(previous_, kernel_layout, false); }
	// The chunk being written dropped: its stream files, and with
	// keep_metadata false its metadata and directories too.
	uint64_t remove(bool kernel_layout, bool keep_metadata)
	{
		return remove(current_, kernel_layout, keep_metadata);
	}
	// The bytes of the chunk being written so far (its regular files).
	uint64_t bytes(bool kernel_layout) const { return bytes_in(dirs(kernel_layout)); }
	// Its trace directories; the bytes of the regular files in `dirs`.
	std::vector<std::string> dirs(bool kernel_layout) const { return trace_dirs(current_, kernel_layout); }
	static uint64_t bytes_in(const std::vector<std::string> &dirs);
	// Whether a stream file of the chunk being written exists.
	bool has_streams(bool kernel_layout) const;

	RotationSchedule &schedule() { return schedule_; }
	const RotationSchedule &schedule() const { return schedule_; }
	// CLOCK_MONOTONIC ns of the last rotation (or of the schedule's
	// setting, or of the last time the session did not trace), for the timer.
	uint64_t last_rotation_ns = 0;
	// A rotation or clear is under way (the daemon's lock released).
	bool rotating = false;
	// Its first part, the kernel trace's move: start, stop and the kernel
	// commands wait for it or refuse.
	bool moving_kernel = false;

	control::RotationStatus status() const;

private:
	struct Chunk {
		uint64_t id;
		std::string root; // OUTPUT for chunk 0
		time_t begin;
	};
	static std::string user_dir(const Chunk &c, bool kernel_layout);
	static std::string archive_name(const Chunk &c, time_t end);
	static std::string relay_chunk(const Chunk &c);
	// The trace directories of a chunk.
	static std::vector<std::string> trace_dirs(const Chunk &c, bool kernel_layout);
	std::string archive(const Chunk &c, time_t end, bool kernel_layout);
	uint64_t remove(const Chunk &c, bool kernel_layout, bool keep_metadata) const;

	std::string output_;
	Chunk current_, previous_;
	uint64_t rotations_ = 0;
	std::optional<std::string> last_archive_;
	RotationSchedule schedule_;
};

} // namespace tracery::daemon
