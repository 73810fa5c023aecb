// consumer/tee_sink.hpp — one channel buffer's packets to two sinks (the
// local copy and the relay of `tracery create --set-url ... --local-copy`):
// each packet goes to both, and one failing does not keep it from the other.
// A packet one of them refused (WriteRefused) is offered again by the
// consumer: then it goes only to the one that did not take it.
#pragma once

#include "consumer/sink.hpp"

#include <array>
#include <memory>
#include <vector>

namespace tracery::consumer {

class TeeSink final : public PacketSink {
public:
	TeeSink(std::unique_ptr<PacketSink> first, std::unique_ptr<PacketSink> second);

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override;
	void idle(uint32_t cpu, uint64_t timestamp) override;
	uint64_t streams_started() const override;
	void close() override;
	void abandon_after_fork() override;

private:
	// Calls f on both sinks; rethrows the first exception once both ran.
	template <class F>
	void both(F &&f);

	std::unique_ptr<PacketSink> first_, second_;
	// Per sink, per CPU: the packet_seq_num after the last packet it took.
	std::array<std::vector<uint64_t>, 2> taken_;
};

} // namespace tracery::consumer
