// consumer/file_sink.hpp — the sink of a local trace: one CTF stream file per
// CPU buffer, DIR/PREFIX_CPU, created when its first packet comes; or, with a
// TracefileLimit, a series of files per CPU buffer, PREFIX_CPU_0,
// PREFIX_CPU_1, ..., the oldest deleted beyond a count. A write the file
// system refuses (full, over quota, I/O error) is cut back to the file's
// previous end and thrown as WriteRefused naming the file.
#pragma once

#include "consumer/sink.hpp"
#include "ctf/stream_writer.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace tracery::consumer {

// enable-channel --tracefile-size/--tracefile-count, LTTng's semantics: each
// stream is written to files of at most `size` bytes (a file's first packet
// goes in whatever its size), PREFIX_CPU_0, PREFIX_CPU_1, ...; with a
// `count`, a stream keeps its newest `count` files only (the oldest is
// deleted when another begins), so that it takes at most count x (size + one
// packet header) on disk. Readers (babeltrace2, tracery view) take the files
// of a stream as one stream. size 0: no limit (one file per stream).
struct TracefileLimit {
	uint64_t size = 0;
	uint64_t count = 0; // 0: no limit; only with a size
	bool operator==(const TracefileLimit &) const = default;
};

// The reason of a refused write of errno `err` to `path`, in one line: "disk
// full (No space left on device) writing PATH".
std::string write_refusal(int err, const std::string &path);

class FileSink final : public PacketSink {
public:
	// Files DIR/PREFIX_CPU, or DIR/PREFIX_CPU_N with a limit.
	FileSink(std::string dir, StreamNames names, uint32_t num_cpus, TracefileLimit limit = {});

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override;
	void close() override;
	void abandon_after_fork() override;

private:
	struct Stream {
		std::unique_ptr<ctf::StreamWriter> file; // the file written now
		uint64_t next_index = 0;                 // with a limit: N of the next file
		std::deque<std::string> kept;            // with a count: the stream's files, oldest first
	};
	// The file of `cpu` that takes a packet of `bytes` (header included): the
	// current one, or a new one when the limit says so.
	ctf::StreamWriter &stream(uint32_t cpu, uint64_t bytes);
	// Ends the stream's current file and deletes the oldest one beyond the
	// count, before the next file is made.
	void next_file(Stream &s);
	std::string name(uint32_t cpu, uint64_t index) const;
	std::string path(const std::string &name) const;

	std::string dir_;
	StreamNames names_;
	TracefileLimit limit_;
	std::vector<Stream> streams_;
};

} // namespace tracery::consumer
