// Repair of the traces a killed daemon was writing: see trace_repair.hpp.
#include "daemon/trace_repair.hpp"

#include "daemon/session_chunks.hpp"

#include "base/fs_creds.hpp"
#include "daemon/log.hpp"

#include "base/fd.hpp"
#include "ctf/stream_check.hpp"
#include "ctf/trace_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace tracery::daemon {

namespace {

// Bounds on what a directory of an untrusted user makes the daemon do.
constexpr size_t kMaxEntries = 1u << 16;     // names read in one directory
constexpr size_t kMetadataProbe = 64u << 10; // Tracery's env block is in the first few hundred bytes
constexpr const char *kSnapshotPrefix = "snapshot-";
// A session with kernel events: its user and kernel traces (TraceSession::user_dir(), KernelSession::trace_dir()).
constexpr const char *kUserTraceDir = "ust";
constexpr const char *kKernelTraceDir = "kernel";

class Repair {
public:
	explicit Repair(const JournalEntry &e) : uid_(e.uid) {}

	void trace_dir(const std::string &path);
	std::vector<RepairNote> notes;

private:
	// The session's OUTPUT (top), a snapshot directory in it (which holds
	// a trace, or ust/ and kernel/), or a trace directory.
	enum class Level { top, snapshot, trace };
	void dir(int dfd, const std::string &shown, Level level);
	void stream(int dfd, const std::string &name, const struct stat &seen, const std::string &shown);
	void left_alone(const std::string &text) { notes.push_back({false, text}); }
	std::string errno_text() const { return strerror(errno); }

	uid_t uid_;
};

// Opens the directory at the absolute path one component at a time,
// following no symbolic link; invalid Fd (errno set) on failure.
base::Fd open_dir_nofollow(const std::string &path)
{
	base::Fd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	size_t pos = 1;
	bool any = false;
	while (cur && pos < path.size()) {
		size_t end = path.find('/', pos);
		if (end == std::string::npos)
			end = path.size();
		const std::string name = path.substr(pos, end - pos);
		pos = end + 1;
		if (name.empty() || name == ".")
			continue;
		if (name == "..") {
			errno = EINVAL; // a journal of canonical paths has none
			return {};
		}
		const bool last = path.find_first_not_of('/', end) == std::string::npos;
		const int flags = (last ? O_RDONLY : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
		cur = base::Fd(::openat(cur.get(), name.c_str(), flags));
		any = true;
	}
	if (cur && !any) {
		errno = EINVAL; // "/" is no trace directory
		return {};
	}
	return cur;
}

std::string read_head(int fd, size_t max)
{
	std::string text(max, '\0');
	size_t done = 0;
	while (done < max) {
		const ssize_t r = ::pread(fd, text.data() + done, max - done, static_cast<off_t>(done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += static_cast<size_t>(r);
	}
	text.resize(done);
	return text;
}

void Repair::trace_dir(const std::string &path)
{
	const base::Fd d = open_dir_nofollow(path);
	if (!d) {
		if (errno == ENOENT)
			return; // removed since: nothing to repair
		left_alone(path + ": cannot open it (" + errno_text() +
		           "; symbolic links are not followed): not checked");
		return;
	}
	dir(d.get(), path, Level::top);
}

void Repair::dir(int dfd, const std::string &shown, Level level)
{
	struct stat st;
	if (::fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid_) {
		left_alone(shown + ": not a directory of the trace's owner (uid " + std::to_string(uid_) +
		           "): not checked");
		return;
	}
	bool ours = false;
	bool has_metadata = false;
	if (const base::Fd m(
		    ::openat(dfd, ctf::TraceDir::kMetadataName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	    m) {
		struct stat ms;
		has_metadata = true;
		ours = ::fstat(m.get(), &ms) == 0 && S_ISREG(ms.st_mode) &&
		       ctf::written_by_tracery(read_head(m.get(), kMetadataProbe));
	}
	if (has_metadata && !ours) {
		left_alone(shown + ": its metadata is not Tracery's: not checked");
		return;
	}
	// The names first (bounded), then each by name: the listing holds no fd
	// of ours while a file is repaired.
	std::vector<std::string> names;
	{
		DIR *listing = ::fdopendir(::dup(dfd));
		if (!listing) {
			left_alone(shown + ": cannot list it (" + errno_text() + "): not checked");
			return;
		}
		while (const dirent *e = ::readdir(listing)) {
			if (e->d_name[0] == '.' || !strcmp(e->d_name, ctf::TraceDir::kMetadataName))
				continue; // hidden files (the metadata's temporaries) are no stream files
			if (names.size() == kMaxEntries) {
				left_alone(shown + ": more than " + std::to_string(kMaxEntries) +
				           " files: the others are not checked");
				break;
			}
			names.emplace_back(e->d_name);
		}
		::closedir(listing);
	}
	std::sort(names.begin(), names.end());
	for (const std::string &name : names) {
		const std::string path = shown + "/" + name;
		struct stat es;
		if (::fstatat(dfd, name.c_str(), &es, AT_SYMLINK_NOFOLLOW) < 0)
			continue; // gone since the listing
		if (S_ISDIR(es.st_mode)) {
			const bool domain = name == kUserTraceDir || name == kKernelTraceDir;
			// A snapshot, or the trace chunk being written (archived ones are whole).
			const bool snapshot =
				level == Level::top && (name.rfind(kSnapshotPrefix, 0) == 0 || is_chunk_name(name));
			if (level == Level::trace || !(domain || snapshot))
				continue; // not a trace of this session
			const base::Fd sub(
				::openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			if (sub)
				dir(sub.get(), path, snapshot ? Level::snapshot : Level::trace);
			else
				left_alone(path + ": cannot open it (" + errno_text() + "): not checked");
			continue;
		}
		if (!has_metadata)
			continue; // no trace here (a snapshot session's directory): no stream files
		if (S_ISLNK(es.st_mode))
			left_alone(path + ": a symbolic link where a stream file should be: left alone");
		else if (!S_ISREG(es.st_mode))
			left_alone(path + ": not a regular file: left alone");
		else
			stream(dfd, name, es, path);
	}
}

void Repair::stream(int dfd, const std::string &name, const struct stat &seen, const std::string &shown)
{
	const auto owner_and_links = [&](const struct stat &st) {
		if (st.st_uid != uid_) {
			left_alone(shown + ": belongs to uid " + std::to_string(st.st_uid) +
			           ", not to the trace's owner (" + std::to_string(uid_) + "): left alone");
			return false;
		}
		if (st.st_nlink != 1) {
			left_alone(shown + ": has " + std::to_string(st.st_nlink) + " hard links: left alone");
			return false;
		}
		return true;
	};
	if (!owner_and_links(seen) || seen.st_size == 0)
		return; // an empty stream file reads as no packets
	const base::Fd fd(::openat(dfd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
	if (!fd) {
		left_alone(shown + ": cannot open it (" + errno_text() + "): not checked");
		return;
	}
	struct stat st;
	if (::fstat(fd.get(), &st) < 0 || st.st_dev != seen.st_dev || st.st_ino != seen.st_ino ||
	    !S_ISREG(st.st_mode)) {
		left_alone(shown + ": replaced while it was checked: left alone");
		return;
	}
	if (!owner_and_links(st))
		return;
	ctf::StreamCheck c;
	try {
		c = ctf::check_stream_fd(fd.get(), shown);
	} catch (const std::system_error &e) {
		left_alone(std::string(e.what()) + ": not checked");
		return;
	}
	if (c.ok())
		return;
	const std::string at = std::to_string(c.whole);
	if (!c.cut) {
		left_alone(shown + ": at offset " + at + ", " + c.problem +
		           ": not a packet cut short by a crash, left alone (readers may reject the trace)");
		return;
	}
	if (::ftruncate(fd.get(), static_cast<off_t>(c.whole)) < 0) {
		left_alone(shown + ": cannot truncate it to " + at + " bytes (" + errno_text() +
		           "): readers may reject the trace");
		return;
	}
	notes.push_back({true, shown + ": its last packet was cut short by the crash (at offset " + at + ", " +
	                               c.problem + "): truncated to " + at + " bytes, dropping " +
	                               std::to_string(c.size - c.whole) + " bytes; " + std::to_string(c.packets) +
	                               " whole packets kept"});
}

} // namespace

std::vector<RepairNote> repair_trace(const JournalEntry &entry)
{
	base::FsCreds as_owner(entry.uid, entry.gid);
	Repair r(entry);
	r.trace_dir(entry.dir);
	return std::move(r.notes);
}

size_t repair_journaled_traces(const TraceJournal &journal)
{
	std::vector<JournalEntry> entries;
	size_t skipped = 0;
	try {
		entries = journal.read(&skipped);
	} catch (const std::exception &e) {
		log(Level::error, "%s; the traces of the previous daemon are not checked", e.what());
	}
	if (skipped)
		log(Level::warn, "%s: %zu lines that name no trace skipped", journal.path().c_str(), skipped);
	size_t repaired = 0;
	for (const JournalEntry &e : entries) {
		for (const RepairNote &n : repair_trace(e)) {
			log(n.repaired ? Level::info : Level::warn, "repair: %s", n.text.c_str());
			repaired += n.repaired;
		}
	}
	if (!entries.empty())
		log(Level::info,
		    "the previous daemon did not stop cleanly: checked its %zu traces, repaired %zu "
		    "stream files",
		    entries.size(), repaired);
	try {
		journal.write({});
	} catch (const std::exception &e) {
		log(Level::error, "%s", e.what());
	}
	return repaired;
}

} // namespace tracery::daemon
