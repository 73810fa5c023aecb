// analysis/trace_scan.hpp — what a reader finds in a directory before it
// reads it: the traces in it (as babeltrace2 finds them) and the stream files
// that will read as less than was traced.
//
// `tracery view` runs babeltrace2, which skips an empty stream file without a
// word and refuses a whole trace for one packet that overruns its file: the
// scan lets the command say so first, naming the file and the offset.
#pragma once

#include <string>
#include <vector>

namespace tracery::analysis {

struct TraceScan {
	// The directories at or below the one scanned that hold a `metadata`
	// file (sorted): each is a trace.
	std::vector<std::string> traces;
	// One line per stream file of those traces that is empty or, in a trace
	// Tracery wrote, not made of whole packets (ctf/stream_check.hpp):
	// "FILE is empty (0 bytes): ...", "FILE: at offset N, ...: ... truncate
	// -s N FILE ...". A directory's files by name, then its subdirectories.
	std::vector<std::string> warnings;
};

// Scans dir and the directories below it (at most kMaxDepth levels, symbolic
// links not followed). Throws std::system_error (naming dir) if dir cannot
// be read; what cannot be read below it becomes a warning.
TraceScan scan_traces(const std::string &dir);

inline constexpr int kMaxDepth = 8;

} // namespace tracery::analysis
