// consumer/ring_config.hpp — the ring buffer of a trace channel, as the
// session daemon and the daemonless mode both make it: one per-CPU buffer per
// possible CPU, record headers sized for our CTF event header
// (ctf/event_header.hpp), written through rseq where the creating process has
// it. It is here, not in ringbuf/, because ringbuf knows nothing of CTF; the
// daemon's channels (daemon/channel.hpp) and ust/local both build on it.
#pragma once

#include "ringbuf/ring_buffer.hpp"

#include <memory>
#include <string>

namespace tracery::consumer {

// The Config create_ring uses: what to validate, and to size, before making one.
ringbuf::Config ring_config(uint32_t num_subbuf, uint32_t subbuf_size, ringbuf::Mode mode);

// A new ring buffer of that Config, its memfd named `name`.
std::unique_ptr<ringbuf::Channel> create_ring(uint32_t num_subbuf, uint32_t subbuf_size, ringbuf::Mode mode,
                                              const std::string &name);

} // namespace tracery::consumer
