// consumer/event_count.hpp — the events of a packet that could not be
// written, counted by decoding it (ctf/reader) with the trace's metadata:
// what a consumer reports lost when its sink still refuses a sub-buffer at
// the end (channel_consumer.hpp), and a relay link the packets it could not
// deliver. Only these failure paths decode; the consumer never reads what
// it writes otherwise.
#pragma once

#include "consumer/channel_consumer.hpp"
#include "consumer/sink.hpp"
#include "ctf/packet.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace tracery::consumer {

// A trace's metadata text as it grows, shared by whoever writes it and the
// counters that decode with it (from other threads).
class SharedMetadata {
public:
	void assign(std::string_view text);
	void append(std::string_view text);
	std::string text() const;

private:
	mutable std::mutex mutex_;
	std::string text_;
};

// The events in one whole packet (header, context, events) of a stream of
// the trace of `metadata`. Throws std::exception (ctf::reader::ReadError)
// when the packet or the metadata cannot be decoded.
uint64_t count_events(const std::string &metadata, std::span<const uint8_t> packet);

// The same for a packet of the stream of CPU buffer `cpu` of a channel
// (names), given as a consumer has it: header and context fields, events.
uint64_t count_events(const std::string &metadata, const StreamNames &names, uint32_t cpu, const ctf::PacketInfo &info,
                      const void *events, size_t size);

// A consumer's counter (ChannelConsumer::set_event_counter) for the streams
// `names`, decoding with the metadata as it is when it counts.
ChannelConsumer::EventCounter event_counter(std::shared_ptr<const SharedMetadata> metadata, StreamNames names);

} // namespace tracery::consumer
