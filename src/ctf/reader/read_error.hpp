// ctf/reader/read_error.hpp — the one error the trace reader throws: what is
// wrong, in which file, at which byte offset (or metadata line).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tracery::ctf::reader {

class ReadError : public std::runtime_error {
public:
	// "FILE: at offset N: what"
	ReadError(const std::string &file, uint64_t offset, const std::string &what)
		: std::runtime_error(file + ": at offset " + std::to_string(offset) + ": " + what), file_(file),
		  offset_(offset)
	{
	}
	// Already formatted (metadata errors name a line too).
	ReadError(const std::string &file, uint64_t offset, const std::string &message, bool)
		: std::runtime_error(message), file_(file), offset_(offset)
	{
	}
	const std::string &file() const noexcept { return file_; }
	uint64_t offset() const noexcept { return offset_; }

private:
	std::string file_;
	uint64_t offset_;
};

} // namespace tracery::ctf::reader
