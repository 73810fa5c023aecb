// consumer/trace_channel.hpp — creating the ring buffer of a trace channel: one per-CPU buffer per
// possible CPU, record headers sized for our CTF event header, written
// through rseq where the creating process has it. Used by the daemonless mode
// and by the session daemon.
#pragma once

#include "ringbuf/ring_buffer.hpp"

#include <memory>
#include <string>

namespace tracery::consumer {

// The Config create_trace_channel uses: what to validate, and to size, before making one.
ringbuf::Config trace_channel_config(uint32_t num_subbuf, uint32_t subbuf_size, ringbuf::Mode mode);

std::unique_ptr<ringbuf::Channel> create_trace_channel(uint32_t num_subbuf, uint32_t subbuf_size, ringbuf::Mode mode,
                                                       const std::string &name);

} // namespace tracery::consumer
