// ctf/reader/tsdl_parser.hpp — reads a trace's metadata: the TSDL text
// (CTF 1.8) into a TraceClass, and the metadata file itself, plain text or
// in LTTng's metadata packets (magic 0x75D11D57).
//
// Covers what Tracery (ctf/metadata.cpp, kernel/kernel_events.cpp) and LTTng
// 2.x write: typealias/typedef, integer (any size, alignment, byte order,
// signedness, base, encoding, clock mapping), floating_point, string, enum,
// struct (align), variant, arrays and sequences, trace/env/clock/stream/event
// blocks; callsite blocks are skipped. Errors name the line and the byte
// offset in the text; nesting and sizes are bounded (hostile input).
//
// What the specification makes invalid is refused (a name declared twice in
// one scope, a keyword naming a field, an enumeration value its integer
// cannot hold, a version other than 1.8); an attribute or a type this reader
// does not know is skipped and kept as a warning (TraceClass::warnings), as
// babeltrace2 warns of it and goes on.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ctf/reader/trace_class.hpp"

namespace tracery::ctf::reader {

class TsdlError : public std::runtime_error {
public:
	TsdlError(size_t line, size_t offset, const std::string &what)
		: std::runtime_error("line " + std::to_string(line) + " (offset " + std::to_string(offset) +
	                             "): " + what),
		  line_(line), offset_(offset)
	{
	}
	size_t line() const noexcept { return line_; }
	size_t offset() const noexcept { return offset_; }

private:
	size_t line_, offset_;
};

// Deepest nesting of types and blocks accepted.
inline constexpr int kMaxTsdlDepth = 64;
// Most warnings kept for one metadata text (the rest are not said).
inline constexpr size_t kMaxMetadataWarnings = 100;
// Largest metadata accepted (text after unpacking).
inline constexpr size_t kMaxMetadataSize = size_t{256} << 20;

// Throws TsdlError.
TraceClass parse_tsdl(std::string_view text);

// The TSDL text of a metadata file's bytes: as is when it is text, the
// concatenated payloads when it is metadata packets. Throws ReadError
// (naming path and the offset) for a damaged packet.
std::string metadata_text(std::string_view bytes, const std::string &path);

// Parses metadata bytes (packets or text), as read from path (or what
// errors are to name). Throws ReadError: path and the line/offset.
TraceClass parse_metadata(const std::string &bytes, const std::string &path);

// Reads and parses the metadata file at path. Throws ReadError: the file and
// line/offset of the problem.
TraceClass load_metadata(const std::string &path);

} // namespace tracery::ctf::reader
