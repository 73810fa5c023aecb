// See trace_channel.hpp.
#include "runtime/trace_channel.hpp"

#include "ctf/event_header.hpp"

#include <sys/sysinfo.h>

namespace tracery::runtime {

std::unique_ptr<ringbuf::Channel> create_trace_channel(uint32_t num_subbuf, uint32_t subbuf_size,
                                                       ringbuf::Mode mode, const std::string &name)
{
	ringbuf::Config c{};
	c.num_cpus = static_cast<uint32_t>(get_nprocs_conf());
	c.num_subbuf = num_subbuf;
	c.subbuf_size = subbuf_size;
	c.mode = mode;
	c.compact_header_size = ctf::kCompactHeaderSize;
	c.extended_header_size = ctf::kExtendedHeaderSize;
	c.compact_ts_bits = ctf::kCompactTsBits;
	// Without rseq here (valgrind, glibc.pthread.rseq=0), writers fall back to atomic instructions.
	c.sync = ringbuf::Channel::rseq_available() ? ringbuf::Sync::rseq : ringbuf::Sync::atomic;
	return ringbuf::Channel::create(c, name.c_str());
}

} // namespace tracery::runtime
