// consumer/ring_config.cpp — see ring_config.hpp.
#include "consumer/ring_config.hpp"

#include "base/cpu.hpp"
#include "ctf/event_header.hpp"

namespace tracery::consumer {

ringbuf::Config ring_config(uint32_t num_subbuf, uint32_t subbuf_size, ringbuf::Mode mode)
{
	ringbuf::Config c{};
	c.num_cpus = base::possible_cpus();
	c.num_subbuf = num_subbuf;
	c.subbuf_size = subbuf_size;
	c.mode = mode;
	c.compact_header_size = ctf::kCompactHeaderSize;
	c.extended_header_size = ctf::kExtendedHeaderSize;
	c.compact_ts_bits = ctf::kCompactTsBits;
	// Without rseq here (valgrind, glibc.pthread.rseq=0), writers fall back to atomic instructions.
	c.sync = ringbuf::Channel::rseq_available() ? ringbuf::Sync::rseq : ringbuf::Sync::atomic;
	return c;
}

std::unique_ptr<ringbuf::Channel> create_ring(uint32_t num_subbuf, uint32_t subbuf_size, ringbuf::Mode mode,
                                              const std::string &name)
{
	return ringbuf::Channel::create(ring_config(num_subbuf, subbuf_size, mode), name.c_str());
}

} // namespace tracery::consumer
