// ctf/fuzz/fuzz_tsdl.cpp — libFuzzer target: arbitrary bytes as a trace's
// metadata file (text or LTTng metadata packets), parsed (reader/
// tsdl_parser.hpp) and compiled into decode plans (reader/decoder.hpp). Every
// outcome is a TraceClass or an error naming a line and offset inside the
// text; never a crash, a hang or unbounded memory.
#include "base/fuzz_check.hpp"
#include "ctf/reader/decoder.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/tsdl_parser.hpp"

#include <string>

using namespace tracery::ctf::reader;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view bytes(reinterpret_cast<const char *>(data), size);
	std::string text;
	try {
		text = metadata_text(bytes, "fuzz-metadata");
	} catch (const ReadError &e) {
		tracery::base::fuzz_check(e.offset() <= size, "fuzz_tsdl", "packet error offset inside the input");
		return 0;
	}
	try {
		const TraceClass tc = parse_tsdl(text);
		const TracePlans plans(tc);
		(void)plans.registers();
	} catch (const TsdlError &e) {
		tracery::base::fuzz_check(e.offset() <= text.size(), "fuzz_tsdl", "error offset inside the text");
	} catch (const std::runtime_error &) {
		// a plan that cannot be made: named in the message
	}
	return 0;
}
