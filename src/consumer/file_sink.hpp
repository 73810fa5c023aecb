// consumer/file_sink.hpp — the sink of a local trace: one CTF stream file per
// CPU buffer, DIR/PREFIX_CPU, created when its first packet comes. A write
// the file system refuses (full, over quota, I/O error) is cut back to the
// file's previous end and thrown as WriteRefused naming the file.
#pragma once

#include "consumer/sink.hpp"
#include "ctf/stream_writer.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tracery::consumer {

// The reason of a refused write of errno `err` to `path`, in one line: "disk
// full (No space left on device) writing PATH".
std::string write_refusal(int err, const std::string &path);

class FileSink final : public PacketSink {
public:
	// Files DIR/PREFIX_CPU.
	FileSink(std::string dir, StreamNames names, uint32_t num_cpus);

	void write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size) override;
	void close() override;
	void abandon_after_fork() override;

private:
	ctf::StreamWriter &stream(uint32_t cpu);
	std::string path(uint32_t cpu) const;

	std::string dir_;
	StreamNames names_;
	std::vector<std::unique_ptr<ctf::StreamWriter>> streams_;
};

} // namespace tracery::consumer
