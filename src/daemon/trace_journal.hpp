// The daemon's journal of the traces it writes (RUNDIR/open-traces): the
// output directory and owner of every session that has been started and not
// destroyed, rewritten (temporary file + rename) when that set changes and
// removed when the daemon stops cleanly. A daemon killed while writing
// leaves it behind, so the next one knows which traces to check and repair
// (trace_repair.hpp) before it serves.
//
// One line per trace: "UID GID PATH", PATH absolute, its bytes '%', control
// characters and DEL written as %XX. The run directory belongs to the daemon
// and is not writable by others (main.cpp), yet the journal is read as
// untrusted input all the same: bounded in size, bad lines skipped.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tracery::daemon {

struct JournalEntry {
	uid_t uid = 0;
	gid_t gid = 0;
	std::string dir; // absolute
	bool operator==(const JournalEntry &) const = default;
};

inline constexpr const char *kJournalName = "open-traces";
// More than any daemon writes (4096-byte paths of a thousand sessions).
inline constexpr size_t kMaxJournalBytes = 8u << 20;

std::string format_journal(const std::vector<JournalEntry> &entries);
// The entries of a journal's text; each line that is not an entry (a path
// that is not absolute or holds a NUL, a bad number or escape) is skipped and
// counted in *skipped.
std::vector<JournalEntry> parse_journal(std::string_view text, size_t *skipped);

class TraceJournal {
public:
	explicit TraceJournal(const std::string &rundir);

	const std::string &path() const { return path_; }
	// The entries on disk (none if there is no journal). Throws
	// std::runtime_error (one line naming the file) if it cannot be read or
	// is larger than kMaxJournalBytes; *skipped as parse_journal.
	std::vector<JournalEntry> read(size_t *skipped) const;
	// Replaces the journal with these entries, atomically; none: removes it.
	// Throws std::runtime_error (one line naming the file).
	void write(const std::vector<JournalEntry> &entries) const;

private:
	std::string path_;
};

} // namespace tracery::daemon
