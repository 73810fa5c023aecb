// consumer/file_sink.cpp — see file_sink.hpp.
#include "consumer/file_sink.hpp"

#include <exception>
#include <stdexcept>

namespace tracery::consumer {

FileSink::FileSink(std::string dir, StreamNames names, uint32_t num_cpus)
	: dir_(std::move(dir)), names_(std::move(names)), streams_(num_cpus)
{
}

ctf::StreamWriter &FileSink::stream(uint32_t cpu)
{
	if (cpu >= streams_.size())
		throw std::out_of_range("stream of CPU " + std::to_string(cpu) + " in a channel of " +
		                        std::to_string(streams_.size()) + " CPUs");
	if (!streams_[cpu]) {
		streams_[cpu] =
			std::make_unique<ctf::StreamWriter>(dir_, names_.file_prefix + "_" + std::to_string(cpu),
		                                            names_.uuid, names_.stream_id, names_.instance_base + cpu);
	}
	return *streams_[cpu];
}

void FileSink::write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size)
{
	stream(cpu).write_packet(info, events, size);
}

void FileSink::close()
{
	std::exception_ptr first;
	for (auto &s : streams_) {
		if (!s)
			continue;
		try {
			s->close();
		} catch (...) {
			if (!first)
				first = std::current_exception();
		}
	}
	if (first)
		std::rethrow_exception(first);
}

void FileSink::abandon_after_fork()
{
	for (auto &s : streams_)
		s.reset(); // closes the child's copy of the descriptor, writes nothing
}

} // namespace tracery::consumer
