// consumer/file_sink.cpp — see file_sink.hpp.
#include "consumer/file_sink.hpp"

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <system_error>

namespace tracery::consumer {

namespace {
// What an errno of a refused write means to whoever reads status or stop.
const char *refusal_kind(int err)
{
	switch (err) {
	case ENOSPC:
		return "disk full";
	case EDQUOT:
		return "disk quota exceeded";
	case EFBIG:
		return "file too large";
	case EIO:
		return "I/O error";
	default:
		return "write failed";
	}
}
} // namespace

std::string write_refusal(int err, const std::string &path)
{
	return std::string(refusal_kind(err)) + " (" + strerror(err) + ") writing " + path;
}

FileSink::FileSink(std::string dir, StreamNames names, uint32_t num_cpus)
	: dir_(std::move(dir)), names_(std::move(names)), streams_(num_cpus)
{
}

std::string FileSink::path(uint32_t cpu) const
{
	const std::string name = names_.file_prefix + "_" + std::to_string(cpu);
	return dir_.empty() ? name : dir_ + "/" + name;
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
	try {
		// A failed write is cut back to the file's previous end
		// (ctf::StreamWriter): the file keeps whole packets only.
		stream(cpu).write_packet(info, events, size);
	} catch (const std::system_error &e) {
		throw WriteRefused(write_refusal(e.code().value(), path(cpu)));
	}
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
