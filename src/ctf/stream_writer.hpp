// ctf/stream_writer.hpp — writes the packets of one CTF stream file.
//
// Each write_packet() appends one packet: the 84-byte packet header and
// context (packet.hpp), then the caller's event bytes, in one pwritev()
// straight from the caller's buffers (shared memory): the event bytes are
// never copied. packet_size == content_size: nothing is padded on disk.
// That pwritev() is not atomic against SIGKILL of the writer: the kernel
// stops a buffered write between two pages on a fatal signal, so a writer
// killed mid-packet leaves the start of it at the end of the file.
// stream_check.hpp finds it (StreamCheck::cut); traceryd truncates it at its
// next start (daemon/trace_repair.hpp).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>

#include "ctf/packet.hpp"
#include "ctf/uuid.hpp"

namespace tracery::ctf {

class StreamWriter {
public:
	StreamWriter() noexcept = default; // not open

	// Creates dir/name, which must not exist (O_CREAT|O_EXCL: a stream file
	// is never overwritten or appended to), with `mode` (umask applies).
	// Throws std::system_error (message names the path).
	StreamWriter(const std::string &dir, const std::string &name, const Uuid &trace_uuid, uint32_t stream_id,
	             uint64_t stream_instance_id, mode_t mode = 0600);
	~StreamWriter(); // closes, ignoring errors: call close() to see them

	StreamWriter(StreamWriter &&other) noexcept;
	StreamWriter &operator=(StreamWriter &&other) noexcept;
	StreamWriter(const StreamWriter &) = delete;
	StreamWriter &operator=(const StreamWriter &) = delete;

	// Appends one packet holding `size` bytes of events (whole encoded
	// events: header, context, payload). Short writes and EINTR are retried.
	// On error (ENOSPC, EIO...) the file is truncated back to its previous
	// end, so it still holds only whole packets, and std::system_error is
	// thrown with the path; the writer stays usable.
	void write_packet(const PacketInfo &info, const void *events, size_t size);
	// Same, with the event bytes in several pieces (e.g. a ring buffer
	// region that wraps around), written in order.
	void write_packet(const PacketInfo &info, std::span<const iovec> events);

	void sync();  // fdatasync(); throws std::system_error
	void close(); // throws std::system_error (e.g. deferred EIO); closes anyway

	bool is_open() const noexcept { return fd_ >= 0; }
	const std::string &path() const noexcept { return path_; }
	uint64_t bytes_written() const noexcept { return size_; } // file size
	uint32_t stream_id() const noexcept { return stream_id_; }
	uint64_t stream_instance_id() const noexcept { return stream_instance_id_; }

private:
	[[noreturn]] void fail(int err, const char *what);

	int fd_ = -1;
	std::string path_;
	Uuid uuid_;
	uint32_t stream_id_ = 0;
	uint64_t stream_instance_id_ = 0;
	uint64_t size_ = 0;
};

} // namespace tracery::ctf
