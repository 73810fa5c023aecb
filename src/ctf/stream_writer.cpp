// ctf/stream_writer.cpp — packet writes with pwritev, retry and rollback.
#include "ctf/stream_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <system_error>
#include <utility>
#include <vector>

namespace tracery::ctf {

StreamWriter::StreamWriter(const std::string &dir, const std::string &name, const Uuid &trace_uuid, uint32_t stream_id,
                           uint64_t stream_instance_id, mode_t mode)
	: path_(dir.empty() ? name : dir + "/" + name), uuid_(trace_uuid), stream_id_(stream_id),
	  stream_instance_id_(stream_instance_id)
{
	do {
		fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	} while (fd_ < 0 && errno == EINTR);
	if (fd_ < 0)
		throw std::system_error(errno, std::generic_category(), "tracery ctf: create " + path_);
}

StreamWriter::~StreamWriter()
{
	if (fd_ >= 0)
		::close(fd_);
}

StreamWriter::StreamWriter(StreamWriter &&o) noexcept
	: fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)), uuid_(o.uuid_), stream_id_(o.stream_id_),
	  stream_instance_id_(o.stream_instance_id_), size_(o.size_)
{
}

StreamWriter &StreamWriter::operator=(StreamWriter &&o) noexcept
{
	if (this != &o) {
		if (fd_ >= 0)
			::close(fd_);
		fd_ = std::exchange(o.fd_, -1);
		path_ = std::move(o.path_);
		uuid_ = o.uuid_;
		stream_id_ = o.stream_id_;
		stream_instance_id_ = o.stream_instance_id_;
		size_ = o.size_;
	}
	return *this;
}

void StreamWriter::fail(int err, const char *what)
{
	throw std::system_error(err, std::generic_category(), std::string("tracery ctf: ") + what + " " + path_);
}

void StreamWriter::write_packet(const PacketInfo &info, const void *events, size_t size)
{
	const iovec iov{const_cast<void *>(events), size};
	write_packet(info, std::span<const iovec>(&iov, 1));
}

void StreamWriter::write_packet(const PacketInfo &info, std::span<const iovec> events)
{
	if (fd_ < 0)
		fail(EBADF, "write");
	uint64_t event_bytes = 0;
	for (const iovec &v : events)
		event_bytes += v.iov_len;

	uint8_t prefix[kPacketPrefixSize];
	write_packet_prefix(prefix, uuid_, stream_id_, stream_instance_id_, info, event_bytes);

	// iovecs still to write; advanced in place after a short write.
	iovec small[8];
	std::vector<iovec> large;
	iovec *iov = small;
	if (events.size() + 1 > std::size(small)) {
		large.resize(events.size() + 1);
		iov = large.data();
	}
	size_t n = 0;
	iov[n++] = {prefix, sizeof prefix};
	for (const iovec &v : events)
		if (v.iov_len)
			iov[n++] = v;

	uint64_t offset = size_;
	size_t i = 0;
	while (i < n) {
		const int count = static_cast<int>(std::min<size_t>(n - i, IOV_MAX));
		const ssize_t r = ::pwritev(fd_, iov + i, count, static_cast<off_t>(offset));
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			const int err = r < 0 ? errno : EIO;
			// Drop the partial packet so the file keeps only whole packets.
			if (offset != size_)
				(void)!::ftruncate(fd_, static_cast<off_t>(size_));
			fail(err, "write");
		}
		offset += static_cast<uint64_t>(r);
		auto left = static_cast<size_t>(r);
		while (i < n && left >= iov[i].iov_len) {
			left -= iov[i].iov_len;
			++i;
		}
		if (left) {
			iov[i].iov_base = static_cast<uint8_t *>(iov[i].iov_base) + left;
			iov[i].iov_len -= left;
		}
	}
	size_ = offset;
}

void StreamWriter::sync()
{
	if (fd_ < 0)
		fail(EBADF, "sync");
	int r;
	do {
		r = ::fdatasync(fd_);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		fail(errno, "sync");
}

void StreamWriter::close()
{
	if (fd_ < 0)
		return;
	const int fd = std::exchange(fd_, -1);
	// Linux closes the descriptor even when close() fails: never retry.
	if (::close(fd) < 0 && errno != EINTR)
		fail(errno, "close");
}

} // namespace tracery::ctf
