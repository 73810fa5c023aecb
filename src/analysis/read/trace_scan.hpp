// analysis/read/trace_scan.hpp — what a reader finds in a directory before it
// reads it: the traces in it (as babeltrace2 finds them) and the stream files
// that will read as less than was traced.
//
// babeltrace2 skips an empty stream file without a word and refuses a whole
// trace for one packet that overruns its file; the reader (ctf/reader/)
// refuses it when it reaches that packet. The scan lets a command name the
// empty files first, and, when the reading fails, the files that are not
// whole packets with their fix (check_streams: every packet header read
// again, so only then).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "ctf/reader/trace_reader.hpp"

namespace tracery::analysis {

// A trace to read: its directory, and the name babeltrace2 gives it below
// what the user named.
struct TraceInput {
	std::string dir;         // a trace directory (one of TraceScan::traces)
	std::string name_suffix; // its path relative to what the user named ("" for that directory)
};

struct TraceScan {
	// The directories at or below the one scanned that hold a `metadata`
	// file (sorted): each is a trace.
	std::vector<std::string> traces;
	// One line per stream file of those traces that is empty: "FILE is empty
	// (0 bytes): ...", and per trace that has no stream file: "DIR has a
	// metadata file but no stream file: ..." (for a user trace, the likely
	// cause: its programs' buffers were never flushed). A directory's files
	// by name, then its subdirectories.
	std::vector<std::string> warnings;
	// The stream files of the traces Tracery wrote, in the same order: their
	// packets have the layout check_streams() walks.
	std::vector<std::string> ours;
};

// Scans dir and the directories below it (at most kMaxDepth levels, symbolic
// links not followed). Throws std::system_error (naming dir) if dir cannot
// be read; what cannot be read below it becomes a warning.
TraceScan scan_traces(const std::string &dir);

// One line per file of `files` (TraceScan::ours) that is not made of whole
// packets (ctf/stream_check.hpp), "FILE: at offset N, ...: ... truncate -s N
// FILE ...", or that cannot be read; in their order.
std::vector<std::string> check_streams(const std::vector<std::string> &files);

// Writes to err, one line each, what the metadata of the traces opened in
// set says that the reader ignores (an unknown attribute), as babeltrace2
// warns of it: "tracery: warning: PATH: metadata line L (offset O): WHAT".
void print_metadata_warnings(const ctf::reader::TraceSet &set, FILE *err);

inline constexpr int kMaxDepth = 8;

} // namespace tracery::analysis
