// ctf/fuzz/fuzz_stream_check.cpp — libFuzzer target: arbitrary bytes as a
// stream file (a trace left by a crash, or a hostile one), walked by
// check_stream_file() (stream_check.hpp). Checks that the walk ends, that the
// whole packets it counts lie inside the file, each at least a packet header
// long, that it calls the file sound exactly when the whole packets
// cover it all, and that a packet it calls cut (what traceryd truncates)
// begins with the magic and is shorter than it declares.
#include "base/fuzz_check.hpp"
#include "ctf/packet.hpp"
#include "ctf/stream_check.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

using namespace tracery::ctf;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_stream_check", what); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const int fd = ::memfd_create("fuzz-stream", MFD_CLOEXEC);
	check(fd >= 0, "memfd_create");
	check(::write(fd, data, size) == static_cast<ssize_t>(size), "write");
	const StreamCheck c = check_stream_fd(fd, "fuzz-stream");
	::close(fd);
	check(c.size == size, "the size read is not the file's");
	check(c.whole <= c.size, "whole packets beyond the end of the file");
	check(c.packets * kPacketPrefixSize <= c.whole, "a packet shorter than its header");
	check(c.ok() == (c.size > 0 && c.whole == c.size), "sound exactly when whole packets cover the file");
	check(c.ok() || !c.problem.empty(), "a problem without words");
	if (c.cut) {
		check(!c.ok() && c.whole < c.size, "cut, but nothing to truncate");
		const uint8_t magic[4] = {0xC1, 0x1F, 0xFC, 0xC1};
		for (size_t i = 0; i < 4 && c.whole + i < size; ++i)
			check(data[c.whole + i] == magic[i], "cut, but no packet magic where the whole packets end");
		if (c.size - c.whole >= kPacketPrefixSize) {
			uint64_t bits = 0;
			for (size_t i = 0; i < 8; ++i)
				bits |= uint64_t{data[c.whole + kPacketSizeOffset + i]} << (8 * i);
			check(bits / 8 > c.size - c.whole, "cut, but the packet there fits in the file");
		}
	}
	return 0;
}
