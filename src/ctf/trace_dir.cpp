// ctf/trace_dir.cpp — mkdir -p and atomic metadata publication (temp + rename).
#include "ctf/trace_dir.hpp"

#include "base/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

namespace tracery::ctf {

namespace {

[[noreturn]] void throw_errno(int err, const std::string &what)
{
	throw std::system_error(err, std::generic_category(), "tracery ctf: " + what);
}

// Closes an fd and removes a temporary file unless released.
struct TempFile {
	std::string path;
	int fd = -1;
	bool keep = false;

	~TempFile()
	{
		if (fd >= 0)
			::close(fd);
		if (!keep && !path.empty())
			::unlink(path.c_str());
	}
};

void write_all(int fd, const char *data, size_t size, const std::string &path)
{
	while (size) {
		const ssize_t r = ::write(fd, data, size);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			throw_errno(errno, "write " + path);
		}
		if (r == 0)
			throw_errno(EIO, "write " + path);
		data += r;
		size -= static_cast<size_t>(r);
	}
}

// Copies all of `in` (from offset 0) to the current position of `out`.
void copy_all(int in, int out, const std::string &in_path, const std::string &out_path)
{
	off_t in_off = 0;
	bool kernel_copy = true;
	for (;;) {
		if (kernel_copy) {
			const ssize_t r = ::copy_file_range(in, &in_off, out, nullptr, 1 << 30, 0);
			if (r > 0)
				continue;
			if (r == 0)
				return;
			if (errno == EINTR)
				continue;
			if (in_off == 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
			                    errno == EOPNOTSUPP || errno == EBADF)) {
				kernel_copy = false;
				continue;
			}
			throw_errno(errno, "copy " + in_path + " to " + out_path);
		}
		char buf[65536];
		const ssize_t r = ::pread(in, buf, sizeof buf, in_off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			throw_errno(errno, "read " + in_path);
		}
		if (r == 0)
			return;
		write_all(out, buf, static_cast<size_t>(r), out_path);
		in_off += r;
	}
}

void fsync_or_throw(int fd, const std::string &path)
{
	if (::fsync(fd) < 0)
		throw_errno(errno, "fsync " + path);
}

// Writes [old contents of old_fd] + text to a hidden temporary file in dir,
// then renames it to dir/metadata.
void publish(const std::string &dir, const std::string &target, int old_fd, std::string_view text, mode_t mode,
             bool durable)
{
	static std::atomic<uint64_t> counter{0};
	const Uuid nonce = Uuid::random();
	TempFile tmp;
	tmp.path = dir + "/.metadata." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)) + "." +
	           nonce.to_string().substr(0, 8) + ".tmp";
	do {
		tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	} while (tmp.fd < 0 && errno == EINTR);
	if (tmp.fd < 0) {
		const int err = errno;
		tmp.path.clear();
		throw_errno(err, "create " + dir + "/.metadata.*.tmp");
	}
	if (old_fd >= 0) {
		// Keep the existing file's permission bits exactly.
		if (::fchmod(tmp.fd, mode) < 0)
			throw_errno(errno, "chmod " + tmp.path);
		copy_all(old_fd, tmp.fd, target, tmp.path);
	}
	write_all(tmp.fd, text.data(), text.size(), tmp.path);
	if (durable)
		fsync_or_throw(tmp.fd, tmp.path);
	if (::close(std::exchange(tmp.fd, -1)) < 0 && errno != EINTR)
		throw_errno(errno, "close " + tmp.path);
	if (::rename(tmp.path.c_str(), target.c_str()) < 0)
		throw_errno(errno, "rename " + tmp.path + " to " + target);
	tmp.keep = true;
	if (durable) {
		const base::Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (!d)
			throw_errno(errno, "open " + dir);
		fsync_or_throw(d.get(), dir);
	}
}

} // namespace

void make_directories(const std::string &path, mode_t mode)
{
	if (path.empty())
		throw_errno(ENOENT, "mkdir (empty path)");
	// Every prefix ending before a '/', then the whole path.
	size_t pos = 0;
	for (;;) {
		pos = path.find('/', pos + 1);
		const std::string prefix = path.substr(0, pos);
		if (!prefix.empty() && prefix.find_first_not_of('/') != std::string::npos) {
			if (::mkdir(prefix.c_str(), mode) < 0) {
				const int err = errno;
				struct stat st;
				if (err != EEXIST || ::stat(prefix.c_str(), &st) < 0)
					throw_errno(err, "mkdir " + prefix);
				if (!S_ISDIR(st.st_mode))
					throw_errno(ENOTDIR, "mkdir " + prefix);
			}
		}
		if (pos == std::string::npos)
			break;
	}
}

TraceDir::TraceDir(std::string path) : path_(std::move(path))
{
	while (path_.size() > 1 && path_.back() == '/')
		path_.pop_back();
}

TraceDir TraceDir::create(std::string path, mode_t mode)
{
	make_directories(path, mode);
	return TraceDir(std::move(path));
}

void TraceDir::write_metadata(std::string_view text, mode_t mode, bool durable) const
{
	publish(path_, metadata_path(), -1, text, mode, durable);
}

void TraceDir::append_metadata(std::string_view blocks, bool durable) const
{
	const std::string target = metadata_path();
	// A regular file only: no symbolic link followed, and an open that does
	// not wait (a FIFO's would, for a writer).
	const base::Fd old(::open(target.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
	if (!old)
		throw_errno(errno, "open " + target);
	struct stat st;
	if (::fstat(old.get(), &st) < 0)
		throw_errno(errno, "stat " + target);
	if (!S_ISREG(st.st_mode))
		throw_errno(EINVAL, target + " is not a regular file");
	publish(path_, target, old.get(), blocks, st.st_mode & 07777, durable);
}

} // namespace tracery::ctf
