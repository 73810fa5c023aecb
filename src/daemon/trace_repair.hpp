// Repair of the traces a killed daemon was writing, at the next start.
//
// A write() of a regular file stops between two pages when its writer gets
// SIGKILL (the kernel checks for a fatal signal before each page it copies),
// so a daemon killed while its consumer writes a packet leaves the start of
// that packet at the end of the stream file, and babeltrace2 then refuses
// the whole trace. No order of writes avoids it: the file grows page by page
// and only a whole packet is readable. So the next daemon, before it serves,
// truncates each stream file of the traces in the journal
// (trace_journal.hpp) back to its whole packets, and logs what it dropped.
//
// The system daemon runs as root, the traces belong to their users, and a
// user may change its trace directory meanwhile (make a stream file a
// symbolic link to /etc/shadow, a hard link, a FIFO). So the repair acts with
// the trace owner's filesystem credentials (base/fs_creds.hpp), walks the path
// from / one directory at a time without following a symbolic link, and
// touches only regular files with one link owned by that owner, in a
// directory owned by that owner, in a trace whose metadata Tracery wrote;
// it only ever truncates a packet that ctf::check_stream_fd() finds cut
// short (StreamCheck::cut), never another problem, which it reports.
#pragma once

#include "daemon/trace_journal.hpp"

#include <string>
#include <vector>

namespace tracery::daemon {

struct RepairNote {
	bool repaired;    // true: a stream file was truncated; false: something left alone
	std::string text; // one line, naming the file
};

// Repairs the stream files of the trace in entry.dir, of its ust/ and
// kernel/ traces, of the snapshot directories in it ("snapshot-*", each
// a trace or, with a kernel domain, ust/ and kernel/) and of the trace chunk
// being written after a rotation (BEGIN-ID/ust, BEGIN-ID/kernel:
// session_chunks.hpp). Never throws for what it finds on disk: each problem
// is a note.
std::vector<RepairNote> repair_trace(const JournalEntry &entry);

// At the daemon's start: repairs every trace in the journal left by a daemon
// that did not stop cleanly, logs each note and a summary, then removes the
// journal. Returns the number of stream files repaired.
size_t repair_journaled_traces(const TraceJournal &journal);

} // namespace tracery::daemon
