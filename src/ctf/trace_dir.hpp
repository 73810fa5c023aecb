// ctf/trace_dir.hpp — a CTF trace directory: creation, the metadata file,
// stream files.
//
// The metadata file is only ever replaced by rename(2) of a complete hidden
// temporary file (".metadata.*.tmp", which readers such as babeltrace2 skip),
// so a reader opening it sees the whole old text or the whole new text,
// never part of a block, even after a crash. The price: an append copies
// the file (in the kernel, copy_file_range), so append blocks in batches
// where possible (e.g. all the events of a dlopen()ed library at once).
// Appends are not serialized here: with several writers (threads or
// processes) the caller holds its lock around append_metadata(), or one
// writer's block can be lost.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "ctf/stream_writer.hpp"
#include "ctf/uuid.hpp"

namespace tracery::ctf {

// mkdir -p: creates path and its missing parents with `mode` (umask
// applies); existing directories are left as they are. Throws
// std::system_error (e.g. ENOTDIR if a component is a file).
void make_directories(const std::string &path, mode_t mode = 0700);

class TraceDir {
public:
	static constexpr const char *kMetadataName = "metadata";

	// An existing directory (not checked).
	explicit TraceDir(std::string path);
	// make_directories(path, mode), then TraceDir(path).
	static TraceDir create(std::string path, mode_t mode = 0700);
	// A random (version 4) trace UUID.
	static Uuid generate_uuid() { return Uuid::random(); }

	const std::string &path() const noexcept { return path_; }
	std::string metadata_path() const { return path_ + "/" + kMetadataName; }

	// Creates or replaces the metadata file with `text`, atomically.
	// durable: fsync the file and the directory before returning.
	void write_metadata(std::string_view text, mode_t mode = 0600, bool durable = false) const;
	// Appends `blocks` (whole TSDL blocks) to the metadata file, atomically:
	// readers see all of them or none. Keeps the file's mode. The metadata
	// file must exist (else std::system_error ENOENT).
	void append_metadata(std::string_view blocks, bool durable = false) const;

	// A new stream file in this directory (see StreamWriter).
	StreamWriter create_stream(const std::string &name, const Uuid &trace_uuid, uint32_t stream_id,
	                           uint64_t stream_instance_id, mode_t mode = 0600) const
	{
		return StreamWriter(path_, name, trace_uuid, stream_id, stream_instance_id, mode);
	}

private:
	std::string path_;
};

} // namespace tracery::ctf
