// A session's trace chunks: see session_chunks.hpp.
#include "daemon/session_chunks.hpp"

#include "ctf/trace_dir.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

namespace tracery::daemon {

namespace fs = std::filesystem;

namespace {

// The regular files directly in `dir` that are not hidden (a trace's
// metadata and stream files; the metadata's temporary files are hidden).
std::vector<fs::path> trace_files(const std::string &dir)
{
	std::vector<fs::path> out;
	std::error_code ec;
	fs::directory_iterator it(dir, ec);
	if (ec)
		return out; // none yet (a chunk whose trace was never written)
	for (const fs::directory_entry &e : it) {
		const std::string name = e.path().filename().string();
		if (name.empty() || name[0] == '.')
			continue;
		if (fs::is_regular_file(e.symlink_status(ec)) && !ec)
			out.push_back(e.path());
	}
	return out;
}

bool is_directory(const std::string &path)
{
	std::error_code ec;
	return fs::is_directory(fs::symlink_status(path, ec)) && !ec;
}

void rename_or_throw(const std::string &from, const std::string &to)
{
	if (::rename(from.c_str(), to.c_str()) != 0)
		throw std::system_error(errno, std::generic_category(), "cannot move " + from + " to " + to);
}

void unlink_or_throw(const fs::path &file)
{
	if (::unlink(file.c_str()) != 0 && errno != ENOENT)
		throw std::system_error(errno, std::generic_category(), "cannot remove " + file.string());
}

} // namespace

std::string chunk_time(time_t t)
{
	struct tm local {};
	localtime_r(&t, &local);
	char buf[64];
	strftime(buf, sizeof buf, "%Y%m%dT%H%M%S%z", &local);
	return buf;
}

bool is_chunk_name(std::string_view name)
{
	// YYYYmmddTHHMMSS+HHMM-ID
	constexpr std::string_view kShape = "dddddddd_dddddd_dddd-";
	if (name.size() <= kShape.size() || name.size() > kShape.size() + 20)
		return false;
	const auto digit = [](char c) { return c >= '0' && c <= '9'; };
	for (size_t i = 0; i < name.size(); i++) {
		const char c = name[i];
		const char want = i < kShape.size() ? kShape[i] : 'd';
		const bool ok = want == 'd' ? digit(c) : i == 8 ? c == 'T' : i == 15 ? c == '+' || c == '-' : c == want;
		if (!ok)
			return false;
	}
	return true;
}

SessionChunks::SessionChunks(std::string output, time_t created)
	: output_(std::move(output)), current_{0, output_, created}, previous_(current_)
{
}

std::string SessionChunks::user_dir(const Chunk &c, bool kernel_layout)
{
	return c.id > 0 || kernel_layout ? c.root + "/ust" : c.root;
}

std::vector<std::string> SessionChunks::trace_dirs(const Chunk &c, bool kernel_layout)
{
	if (kernel_layout)
		return {user_dir(c, true), c.root + "/kernel"};
	return {user_dir(c, false)};
}

std::string SessionChunks::next_root(time_t now) const
{
	return output_ + "/" + chunk_time(now) + "-" + std::to_string(current_.id + 1);
}

void SessionChunks::begin(std::string root, time_t now)
{
	previous_ = current_;
	current_ = {current_.id + 1, std::move(root), now};
}

void SessionChunks::abandon_next()
{
	std::error_code ignored;
	if (!output_.empty())                           // a session only sent to a relay makes no directory here
		fs::remove_all(current_.root, ignored); // made just now, by the owner's credentials
	current_ = previous_;
}

std::string SessionChunks::archive_name(const Chunk &c, time_t end)
{
	return chunk_time(c.begin) + "-" + chunk_time(end) + "-" + std::to_string(c.id);
}

std::string SessionChunks::relay_chunk(const Chunk &c)
{
	return c.id > 0 ? fs::path(c.root).filename().string() : std::string();
}

void SessionChunks::note_archived(std::string where)
{
	rotations_++;
	last_archive_ = std::move(where);
}

std::string SessionChunks::archive(const Chunk &c, time_t end, bool kernel_layout)
{
	const std::string dest = output_ + "/archives/" + archive_name(c, end);
	ctf::make_directories(output_ + "/archives", 0700);
	if (c.id > 0) {
		rename_or_throw(c.root, dest);
	} else {
		// Chunk 0 is OUTPUT itself, which holds the archives too.
		ctf::make_directories(dest, 0700);
		if (kernel_layout) {
			for (const char *sub : {"/ust", "/kernel"})
				if (is_directory(output_ + sub))
					rename_or_throw(output_ + sub, dest + sub);
		} else {
			ctf::make_directories(dest + "/ust", 0700);
			for (const fs::path &f : trace_files(output_))
				rename_or_throw(f.string(), dest + "/ust/" + f.filename().string());
		}
	}
	rotations_++;
	last_archive_ = dest;
	return dest;
}

uint64_t SessionChunks::remove(const Chunk &c, bool kernel_layout, bool keep_metadata) const
{
	uint64_t removed = 0;
	for (const std::string &dir : trace_dirs(c, kernel_layout)) {
		for (const fs::path &f : trace_files(dir)) {
			if (keep_metadata && f.filename() == ctf::TraceDir::kMetadataName)
				continue;
			unlink_or_throw(f);
			removed++;
		}
		// A directory of its own (not chunk 0's OUTPUT): gone with its trace.
		if (!keep_metadata && dir != output_ && is_directory(dir) && ::rmdir(dir.c_str()) != 0)
			throw std::system_error(errno, std::generic_category(), "cannot remove " + dir);
	}
	if (!keep_metadata && c.id > 0 && ::rmdir(c.root.c_str()) != 0 && errno != ENOENT)
		throw std::system_error(errno, std::generic_category(), "cannot remove " + c.root);
	return removed;
}

uint64_t SessionChunks::bytes_in(const std::vector<std::string> &dirs)
{
	uint64_t total = 0;
	for (const std::string &dir : dirs)
		for (const fs::path &f : trace_files(dir)) {
			struct stat st {};
			if (::lstat(f.c_str(), &st) == 0)
				total += static_cast<uint64_t>(st.st_size);
		}
	return total;
}

bool SessionChunks::has_streams(bool kernel_layout) const
{
	for (const std::string &dir : trace_dirs(current_, kernel_layout))
		for (const fs::path &f : trace_files(dir))
			if (f.filename() != ctf::TraceDir::kMetadataName)
				return true;
	return false;
}

control::RotationStatus SessionChunks::status() const
{
	// A session only sent to a relay has no directory here: its chunk is the relay's.
	const std::string current =
		output_.empty() ? "chunk " + std::to_string(current_.id) + " of the relay's copy" : current_.root;
	return {schedule_.timer_ns, schedule_.size_bytes, rotations_, current, last_archive_};
}

} // namespace tracery::daemon
