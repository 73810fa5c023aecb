// consumer/event_count.cpp — see event_count.hpp.
#include "consumer/event_count.hpp"

#include "ctf/reader/trace_reader.hpp"

#include <cstring>
#include <vector>

namespace tracery::consumer {

void SharedMetadata::assign(std::string_view text)
{
	std::lock_guard lock(mutex_);
	text_.assign(text);
}

void SharedMetadata::append(std::string_view text)
{
	std::lock_guard lock(mutex_);
	text_.append(text);
}

std::string SharedMetadata::text() const
{
	std::lock_guard lock(mutex_);
	return text_;
}

uint64_t count_events(const std::string &metadata, std::span<const uint8_t> packet)
{
	ctf::reader::TraceSet set;
	set.decode_fields_of([](const ctf::reader::Trace &, const ctf::reader::EventClass &) { return false; });
	ctf::reader::Trace &trace = set.add_text_trace(metadata, "metadata", "unwritten");
	ctf::reader::Stream &stream = set.add_memory_stream(trace, "unwritten packet");
	set.append_packet(stream, packet);
	uint64_t events = 0;
	// One item per event at most, and a packet holds fewer events than bytes.
	for (size_t items = 0; items <= packet.size(); items++) {
		const ctf::reader::Item *it = set.next_of(stream);
		if (!it)
			break;
		if (it->kind == ctf::reader::ItemKind::event)
			events++;
	}
	return events;
}

uint64_t count_events(const std::string &metadata, const StreamNames &names, uint32_t cpu, const ctf::PacketInfo &info,
                      const void *events, size_t size)
{
	std::vector<uint8_t> packet(ctf::kPacketPrefixSize + size);
	ctf::write_packet_prefix(packet.data(), names.uuid, names.stream_id, names.instance_base + cpu, info, size);
	if (size)
		std::memcpy(packet.data() + ctf::kPacketPrefixSize, events, size);
	return count_events(metadata, packet);
}

ChannelConsumer::EventCounter event_counter(std::shared_ptr<const SharedMetadata> metadata, StreamNames names)
{
	return [metadata = std::move(metadata), names = std::move(names)](uint32_t cpu, const ctf::PacketInfo &info,
	                                                                  const void *events, size_t size) {
		return count_events(metadata->text(), names, cpu, info, events, size);
	};
}

} // namespace tracery::consumer
