// consumer/relay_sink.cpp — see relay_sink.hpp.
#include "consumer/relay_sink.hpp"

#include "ctf/packet.hpp"

#include <stdexcept>

namespace tracery::consumer {

RelaySink::RelaySink(std::shared_ptr<RelayLink> link, uint32_t trace, StreamNames names, uint32_t num_cpus,
                     TracefileLimit limit)
	: link_(std::move(link)), trace_(trace), names_(std::move(names)), limit_(limit), streams_(num_cpus, 0),
	  dropped_events_(num_cpus, 0)
{
}

uint32_t RelaySink::stream(uint32_t cpu)
{
	if (cpu >= streams_.size())
		throw std::out_of_range("stream of CPU " + std::to_string(cpu) + " in a channel of " +
		                        std::to_string(streams_.size()) + " CPUs");
	if (streams_[cpu] == 0)
		streams_[cpu] = link_->add_stream(trace_, names_.file_prefix + "_" + std::to_string(cpu), limit_.size,
		                                  limit_.count);
	return streams_[cpu];
}

void RelaySink::write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size)
{
	const uint64_t instance = names_.instance_base + cpu;
	const uint32_t id = stream(cpu);
	// Counted events of the stream's packets the link dropped count as
	// discarded in the packets it sends.
	ctf::PacketInfo sent = info;
	sent.events_discarded += dropped_events_[cpu];
	uint8_t head[ctf::kPacketPrefixSize];
	ctf::write_packet_prefix(head, names_.uuid, names_.stream_id, instance, sent, size);
	control::relay::PacketIndex index;
	index.packet_size_bits = index.content_size_bits = (sizeof head + size) * 8;
	index.timestamp_begin = info.timestamp_begin;
	index.timestamp_end = info.timestamp_end;
	index.events_discarded = sent.events_discarded;
	index.stream_class_id = names_.stream_id;
	index.stream_instance_id = instance;
	index.packet_seq_num = info.seq;
	switch (link_->send_packet(id, index, head, {static_cast<const uint8_t *>(events), size}, info.events)) {
	case RelayLink::Sent::queued:
		break;
	case RelayLink::Sent::full: {
		const RelayLink::Counts c = link_->counts();
		const std::string relay = link_->config().host + ":" + std::to_string(link_->config().port);
		throw WriteRefused(!c.relay_write_error.empty() ? "the disk of the relay at " + relay +
		                                                          " refuses writes: " + c.relay_write_error
		                   : c.connected ? "the queue of packets for the relay at " + relay + " is full"
		                                 : "the relay at " + relay + " is not connected (" + c.error +
		                                           ") and the queue of packets for it is full");
	}
	case RelayLink::Sent::dropped:
		if (info.events != ctf::kEventsUnknown)
			dropped_events_[cpu] += info.events;
		break;
	}
}

void RelaySink::idle(uint32_t cpu, uint64_t timestamp)
{
	if (cpu < streams_.size() && streams_[cpu] != 0)
		link_->beacon(streams_[cpu], timestamp);
}

void RelaySink::close()
{
	for (uint32_t &s : streams_) {
		if (s != 0)
			link_->close_stream(s);
		s = 0;
	}
}

} // namespace tracery::consumer
