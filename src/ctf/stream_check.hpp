// ctf/stream_check.hpp — the reader's side of stream files: does a stream
// file hold whole packets only?
//
// A stream file is packets back to back (packet.hpp), each saying its own
// size in bits at offset 56 of its header. A file cut short (a writer that
// died in the middle of a packet) or empty (one that died before its first
// packet) reads as less than was traced, or not at all: babeltrace2 rejects a
// whole trace for one packet that overruns its file. check_stream_file()
// walks the packet headers (64 bytes read per packet, never the events) and
// says where the whole packets end, so a reader can warn, naming the file
// and the offset, and a repair can truncate there.
//
// The layout checked is the one Tracery writes; traces of other tracers put
// their packet sizes elsewhere (their metadata says where): check only a
// trace whose metadata written_by_tracery() recognizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracery::ctf {

struct StreamCheck {
	uint64_t size = 0;    // the file's size in bytes
	uint64_t whole = 0;   // bytes from the start that are whole packets (== size when sound)
	uint64_t packets = 0; // how many whole packets
	// Empty when the file is whole packets only and not empty; else one
	// phrase saying what is found at offset `whole`, e.g. "the packet there
	// declares 4096 bytes but only 100 remain".
	std::string problem;
	// The problem is the last packet cut short, as a writer killed in the
	// middle of a packet leaves it (a write of a regular file stops between
	// two pages when its writer gets SIGKILL): the bytes after `whole` begin
	// like a packet (its magic, as far as they go) and are fewer than a
	// packet header or than the size that header declares. Truncating the
	// file at `whole` repairs it. False for other problems (not a packet
	// there, impossible sizes): those are not what a crash of ours leaves.
	bool cut = false;
	bool ok() const { return problem.empty(); }
};

// Walks the stream file at path. Throws std::system_error (naming the path)
// if it cannot be opened or read.
StreamCheck check_stream_file(const std::string &path);
// Same on a descriptor open for reading (from offset 0, by pread: the file
// position is not used); path only names the file in errors.
StreamCheck check_stream_fd(int fd, const std::string &path);

// Whether a trace's metadata text is Tracery's (its env block names the
// tracer, or, in a kernel trace, Tracery's version), so that its stream
// files have the layout of packet.hpp.
bool written_by_tracery(std::string_view metadata);

} // namespace tracery::ctf
