// consumer/sink.hpp — where a channel consumer's packets go.
//
// A consumer turns each complete sub-buffer of a channel into one CTF packet
// and hands it to its sink: the packet's header and context fields
// (ctf::PacketInfo) and the event bytes, which are still in the shared
// mapping and must be consumed before write_packet returns. A sink owns the
// streams of one channel, one per CPU buffer. FileSink (file_sink.hpp) writes
// stream files, RelaySink (relay_sink.hpp) queues them for a relay, TeeSink
// (tee_sink.hpp) does both.
#pragma once

#include "ctf/packet.hpp"
#include "ctf/uuid.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tracery::consumer {

// The streams of one channel buffer, wherever they go.
struct StreamNames {
	std::string file_prefix; // streams are PREFIX_CPU
	uint32_t stream_id;      // stream class in the metadata
	uint64_t instance_base;  // stream_instance_id = instance_base + cpu
	ctf::Uuid uuid;
};

// Thrown by PacketSink::write_packet when the destination refuses writes for
// now (a full disk, a quota, a file too large, an I/O error, a relay link
// whose queue is full): nothing of the packet was taken, and the same packet
// may be offered again later. what() is the reason in one line, with the
// path: "disk full (No space left on device) writing /t/ust/channel0_0".
class WriteRefused : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

class PacketSink {
public:
	virtual ~PacketSink() = default;

	// One packet of the stream of CPU buffer `cpu`: `size` bytes of whole
	// records at `events` (nullptr when size is 0: a packet that only carries
	// a lost-events count). Throws WriteRefused when the packet was not
	// taken (the stream holds whole packets only, as before the call), or
	// another std::exception on failure; the sink must stay usable for later
	// packets, and the consumer offers a refused packet again (see
	// channel_consumer.hpp).
	virtual void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) = 0;
	// Live sessions: the stream of CPU buffer `cpu` had nothing new up to
	// `timestamp` (the packets' clock). Only a relay has a use for it.
	virtual void idle(uint32_t /*cpu*/, uint64_t /*timestamp*/) {}
	// Live sessions: how many streams of the session (all its channels) have
	// had a packet queued so far. An idle stream that has had no packet since
	// this grew gets an empty packet instead of a beacon: babeltrace2 before
	// 2.1 looks for new streams only when a stream it knows has a packet, so
	// with only beacons it would never see a program started beside idle ones.
	virtual uint64_t streams_started() const { return 0; }
	// Ends every stream: what was written is complete and durable as far as
	// the sink can tell. Throws std::exception (after ending them all) on a
	// deferred error.
	virtual void close() = 0;
	// In a child made by fork(): lets go of the parent's streams without
	// writing or ending anything.
	virtual void abandon_after_fork() = 0;
};

} // namespace tracery::consumer
