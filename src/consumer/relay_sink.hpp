// consumer/relay_sink.hpp — the sink of a channel buffer whose packets go to
// a relay (relay_link.hpp): one stream per CPU buffer, PREFIX_CPU in the
// relay's copy of the trace as in a local one, declared with its first
// packet; each packet is built (header, context) and queued with its index
// fields. A packet the link cannot take now (its queue is full) is refused
// (WriteRefused: the consumer offers it again later). A packet the link
// drops (larger than its queue, or after its end) leaves a gap in the stream's
// packet_seq_num, which readers report as discarded packets; when its events
// were counted (the kernel's), the stream's later packets count them in
// their events_discarded as well, which readers report as discarded events.
#pragma once

#include "consumer/file_sink.hpp"
#include "consumer/relay_link.hpp"
#include "consumer/sink.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tracery::consumer {

class RelaySink final : public PacketSink {
public:
	// limit: the relay writes each stream as a ring of files (file_sink.hpp's semantics).
	RelaySink(std::shared_ptr<RelayLink> link, uint32_t trace, StreamNames names, uint32_t num_cpus,
	          TracefileLimit limit = {});

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override;
	void idle(uint32_t cpu, uint64_t timestamp) override;
	uint64_t streams_started() const override { return link_->streams_started(); }
	void close() override;
	void abandon_after_fork() override {}

private:
	uint32_t stream(uint32_t cpu); // its id on the link, declared on first use

	std::shared_ptr<RelayLink> link_;
	uint32_t trace_;
	StreamNames names_;
	TracefileLimit limit_;
	std::vector<uint32_t> streams_; // per CPU; 0: none yet
	// Per CPU: the events of its packets the link dropped, where counted
	// (added to the events_discarded of the packets after them).
	std::vector<uint64_t> dropped_events_;
};

} // namespace tracery::consumer
