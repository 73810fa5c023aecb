// consumer/file_sink.hpp — the sink of a local trace: one CTF stream file per
// CPU buffer, DIR/PREFIX_CPU, created when its first packet comes.
#pragma once

#include "consumer/sink.hpp"
#include "ctf/stream_writer.hpp"
#include "ctf/uuid.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tracery::consumer {

struct StreamFiles {
	std::string dir;
	std::string file_prefix; // files are DIR/PREFIX_CPU
	uint32_t stream_id;      // stream class in the metadata
	uint64_t instance_base;  // stream_instance_id = instance_base + cpu
	ctf::Uuid uuid;
};

class FileSink final : public PacketSink {
public:
	FileSink(StreamFiles files, uint32_t num_cpus);

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override;
	void close() override;
	void abandon_after_fork() override;

private:
	ctf::StreamWriter &stream(uint32_t cpu);

	StreamFiles files_;
	std::vector<std::unique_ptr<ctf::StreamWriter>> streams_;
};

} // namespace tracery::consumer
