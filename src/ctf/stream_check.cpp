// ctf/stream_check.cpp — walks the packet headers of a stream file.
#include "ctf/stream_check.hpp"

#include "base/byte_order.hpp"
#include "base/fd.hpp"
#include "ctf/packet.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>

namespace tracery::ctf {

namespace {

[[noreturn]] void fail(const char *what, const std::string &path)
{
	throw std::system_error(errno, std::generic_category(), std::string("cannot ") + what + " " + path);
}

// Reads exactly n bytes at offset (the caller knows they are in the file).
void read_at(int fd, uint8_t *dst, size_t n, uint64_t offset, const std::string &path)
{
	size_t done = 0;
	while (done < n) {
		const ssize_t r = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO; // shrank while we read it
			fail("read", path);
		}
		done += static_cast<size_t>(r);
	}
}

// Whether the `left` (< a packet header) bytes at offset begin with as much
// of the packet magic as they hold.
bool begins_with_magic(int fd, uint64_t offset, uint64_t left, const std::string &path)
{
	uint8_t magic[4];
	base::store_le<uint32_t>(magic, kPacketMagic);
	uint8_t have[4];
	const size_t n = left < sizeof have ? static_cast<size_t>(left) : sizeof have;
	read_at(fd, have, n, offset, path);
	for (size_t i = 0; i < n; ++i)
		if (have[i] != magic[i])
			return false;
	return true;
}

// The packets' first bytes, read in blocks of kBlock when the packets are
// small (a kernel trace's: a pread per packet took more time than reading
// the trace), else as asked (the bytes of a large packet are not copied).
class PrefixReader {
public:
	PrefixReader(int fd, uint64_t size, const std::string &path) : fd_(fd), size_(size), path_(path) {}
	// The n bytes at offset (in the file; n <= kPacketSizeOffset + 8), when
	// the packet before it had `previous` bytes (0: none).
	const uint8_t *at(uint64_t offset, size_t n, uint64_t previous)
	{
		if (offset < start_ || offset - start_ > have_ || n > have_ - (offset - start_)) {
			const uint64_t block = previous && previous <= kBlock / 4 ? kBlock : n;
			have_ = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(block, n), size_ - offset));
			read_at(fd_, buf_, have_, offset, path_);
			start_ = offset;
		}
		return buf_ + (offset - start_);
	}

private:
	static constexpr size_t kBlock = 16384;
	int fd_;
	uint64_t size_;
	const std::string &path_;
	uint64_t start_ = 0;
	size_t have_ = 0;
	uint8_t buf_[kBlock];
};

std::string hex32(uint32_t v)
{
	char s[16];
	std::snprintf(s, sizeof s, "0x%08x", v);
	return s;
}

} // namespace

StreamCheck check_stream_file(const std::string &path)
{
	base::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		fail("open", path);
	return check_stream_fd(fd.get(), path);
}

StreamCheck check_stream_fd(int fd, const std::string &path)
{
	struct stat st;
	if (::fstat(fd, &st) < 0)
		fail("stat", path);
	StreamCheck c;
	c.size = static_cast<uint64_t>(st.st_size);
	if (c.size == 0) {
		c.problem = "it is empty (0 bytes)";
		return c;
	}
	// Every turn moves past a packet of at least kPacketPrefixSize bytes or
	// stops: at most size / 84 turns.
	PrefixReader prefixes(fd, c.size, path);
	uint64_t previous = 0; // the last packet's bytes
	while (c.whole < c.size) {
		const uint64_t left = c.size - c.whole;
		if (left < kPacketPrefixSize) {
			c.problem = "only " + std::to_string(left) +
			            " bytes remain there, less than a packet header (" +
			            std::to_string(kPacketPrefixSize) + ")";
			c.cut = begins_with_magic(fd, c.whole, left, path);
			return c;
		}
		const uint8_t *prefix = prefixes.at(c.whole, kPacketSizeOffset + 8, previous);
		const uint32_t magic = base::load_le<uint32_t>(prefix);
		if (magic != kPacketMagic) {
			c.problem =
				"no packet starts there (magic " + hex32(magic) + ", not " + hex32(kPacketMagic) + ")";
			return c;
		}
		const uint64_t content_bits = base::load_le<uint64_t>(prefix + kContentSizeOffset);
		const uint64_t packet_bits = base::load_le<uint64_t>(prefix + kPacketSizeOffset);
		if (packet_bits % 8 != 0 || packet_bits / 8 < kPacketPrefixSize || content_bits > packet_bits) {
			c.problem = "the packet there declares an impossible size (packet_size " +
			            std::to_string(packet_bits) + " bits, content_size " +
			            std::to_string(content_bits) + " bits)";
			return c;
		}
		const uint64_t bytes = packet_bits / 8;
		if (bytes > left) {
			c.problem = "the packet there declares " + std::to_string(bytes) + " bytes but only " +
			            std::to_string(left) + " remain";
			c.cut = true;
			return c;
		}
		c.whole += bytes;
		++c.packets;
		previous = bytes;
	}
	return c;
}

bool written_by_tracery(std::string_view metadata)
{
	// A kernel trace names lttng-modules, whose conventions it follows, and
	// the build that wrote it (kernel/kernel_events.hpp).
	return metadata.find("tracer_name = \"tracery\";") != std::string_view::npos ||
	       metadata.find("tracery_version = \"") != std::string_view::npos;
}

} // namespace tracery::ctf
