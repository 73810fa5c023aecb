// consumer/file_sink.cpp — see file_sink.hpp.
#include "consumer/file_sink.hpp"

#include <unistd.h>

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

FileSink::FileSink(std::string dir, StreamNames names, uint32_t num_cpus, TracefileLimit limit)
	: dir_(std::move(dir)), names_(std::move(names)), limit_(limit), streams_(num_cpus)
{
}

std::string FileSink::name(uint32_t cpu, uint64_t index) const
{
	std::string name = names_.file_prefix + "_" + std::to_string(cpu);
	return limit_.size ? name + "_" + std::to_string(index) : name;
}

std::string FileSink::path(const std::string &name) const { return dir_.empty() ? name : dir_ + "/" + name; }

void FileSink::next_file(Stream &s)
{
	std::unique_ptr<ctf::StreamWriter> done = std::move(s.file);
	done->close(); // throws std::system_error naming the file (a deferred I/O error)
	while (limit_.count && s.kept.size() >= limit_.count) {
		if (::unlink(s.kept.front().c_str()) != 0 && errno != ENOENT)
			throw std::system_error(errno, std::generic_category(), "cannot delete " + s.kept.front());
		s.kept.pop_front();
	}
}

ctf::StreamWriter &FileSink::stream(uint32_t cpu, uint64_t bytes)
{
	if (cpu >= streams_.size())
		throw std::out_of_range("stream of CPU " + std::to_string(cpu) + " in a channel of " +
		                        std::to_string(streams_.size()) + " CPUs");
	Stream &s = streams_[cpu];
	if (s.file && limit_.size && s.file->bytes_written() > 0 && s.file->bytes_written() + bytes > limit_.size)
		next_file(s);
	if (!s.file) {
		const std::string file = name(cpu, s.next_index);
		s.file = std::make_unique<ctf::StreamWriter>(dir_, file, names_.uuid, names_.stream_id,
		                                             names_.instance_base + cpu);
		s.next_index++;
		if (limit_.count)
			s.kept.push_back(path(file));
	}
	return *s.file;
}

void FileSink::write_packet(uint32_t cpu, const ctf::PacketInfo &info, const void *events, size_t size)
{
	try {
		// A failed write is cut back to the file's previous end
		// (ctf::StreamWriter): the file keeps whole packets only.
		stream(cpu, ctf::kPacketPrefixSize + size).write_packet(info, events, size);
	} catch (const std::system_error &e) {
		const Stream &s = streams_[cpu];
		throw WriteRefused(
			write_refusal(e.code().value(), s.file ? s.file->path() : path(name(cpu, s.next_index))));
	}
}

void FileSink::close()
{
	std::exception_ptr first;
	for (auto &s : streams_) {
		if (!s.file)
			continue;
		try {
			s.file->close();
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
		s.file.reset(); // closes the child's copy of the descriptor, writes nothing
}

} // namespace tracery::consumer
