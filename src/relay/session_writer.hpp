// relay/session_writer.hpp — what tracery-relayd does with the frames of one
// sender's connection: the session's checks that depend on what came before
// (order, ids, counts, metadata size; docs/relay-protocol.md) and the files
// they become under OUTPUT/HOSTNAME/SESSION-DATE/: each trace's metadata,
// stream files and LTTng-format index (index/STREAM.idx). A frame the disk
// refuses (full, over quota, an I/O error) leaves no trace of itself (files
// cut back, files it created removed) and can be applied again.
#pragma once

#include "base/fd.hpp"
#include "control/relay_protocol.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace tracery::relay {

inline constexpr size_t kMaxTraces = 64;
inline constexpr size_t kMaxStreams = 4096;
inline constexpr uint64_t kMaxMetadata = 16u * 1024 * 1024;
// Ids of the traces and streams archived (ARCHIVE_TRACE) in a session, which
// no frame may use again; the limits above count those not archived.
inline constexpr size_t kMaxArchivedIds = 1u << 20;

// LTTng's CTF index file (all big-endian): a 16-byte header, then 72-byte entries.
inline constexpr uint32_t kIndexMagic = 0xC1F1DCC1;
inline constexpr uint32_t kIndexMajor = 1, kIndexMinor = 1;
inline constexpr uint32_t kIndexHeaderSize = 16, kIndexEntrySize = 72;

class SessionWriter {
public:
	// output: the relay's output directory (exists).
	explicit SessionWriter(std::string output) : output_(std::move(output)) {}

	// Applies one decoded frame: "" or why not. Only HELLO makes a reply; it
	// is then in *reply. When the disk refused it (disk_refused()), nothing
	// of the frame was kept and it may be applied again later; any other
	// failure closes the connection.
	std::string apply(const control::relay::Frame &f, control::relay::HelloReply *reply);
	// The last apply() failed because the disk refused a write or a new
	// file (ENOSPC, EDQUOT, EFBIG, EIO); its message names the file.
	bool disk_refused() const { return disk_refused_; }

	bool said_hello() const { return session_dir_.has_value(); }
	bool said_bye() const { return bye_; }
	// Packets written so far.
	uint64_t packets() const { return packets_; }
	// Where the last packet written went in its stream file.
	uint64_t last_packet_offset() const { return last_packet_offset_; }
	// "HOSTNAME/SESSION-DATE" once HELLO was accepted, else "".
	const std::string &relative_dir() const { return relative_dir_; }
	// A trace's path in the session, a stream's ("TRACE/FILE"); "" when not declared.
	std::string trace_path(uint32_t id) const;
	std::string stream_path(uint32_t id) const;

private:
	struct TraceState {
		std::string path;
		base::Fd dir, metadata;
		uint64_t metadata_bytes = 0;
	};
	struct StreamState {
		uint32_t trace_id = 0;
		std::string file;
		base::Fd data, index;
		uint64_t size = 0;                      // the stream file's length: the next packet's offset
		uint64_t index_size = kIndexHeaderSize; // the index file's length
		bool closed = false;
		// STREAM_FILES: files of at most file_size bytes, FILE_N (N = file_index
		// now), the newest file_count kept (0: all); kept: their N, oldest first.
		uint64_t file_size = 0, file_count = 0, file_index = 0;
		std::deque<uint64_t> kept;
	};

	std::string hello(const control::relay::Hello &m, control::relay::HelloReply *reply);
	std::string trace(const control::relay::Trace &m);
	std::string metadata(const control::relay::Metadata &m);
	std::string stream(const control::relay::Stream &m);
	std::string packet(const control::relay::Packet &m);
	std::string archive(const control::relay::ArchiveTrace &m);
	std::string stream_files(const control::relay::StreamFiles &m);
	// A stream with STREAM_FILES whose file is full: the next one begun, the
	// oldest beyond the count deleted.
	std::string next_file(StreamState &s);
	StreamState *open_stream(uint32_t id, const char *what, std::string &why);
	// Why a write or creation of `path` (in the session) failed, with errno;
	// notes whether the disk refused it.
	std::string failed(const std::string &path, const char *what);

	std::string output_;
	std::optional<base::Fd> session_dir_;
	std::string relative_dir_;
	bool bye_ = false, disk_refused_ = false;
	bool live_ = false; // HELLO gave a live period: its streams are served as written, never moved
	uint64_t packets_ = 0, last_packet_offset_ = 0;
	std::map<uint32_t, TraceState> traces_;
	std::map<uint32_t, StreamState> streams_;
	std::set<uint32_t> archived_traces_, archived_streams_;
};

// Writes all of buf at `offset` in the file: 0, or the errno of the write that failed.
int write_all_at(int fd, const void *buf, size_t size, uint64_t offset);

} // namespace tracery::relay
