// control/fuzz/fuzz_session_file.cpp — libFuzzer target: the text of a
// session file (control/session_file.hpp), as `tracery load` and the daemon's
// auto/ sessions read it from a file anyone may have edited. Checks that the
// parser throws nothing but DecodeError, with a one-line message that says it
// is about a session file, and that what it accepts is written back to a text
// that parses to the same session.
#include "base/fuzz_check.hpp"
#include "control/session_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace tracery;

namespace {

void check(bool ok, const char *what) { tracery::base::fuzz_check(ok, "fuzz_session_file", what); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string text(reinterpret_cast<const char *>(data), size);
	control::SavedSession session;
	try {
		session = control::parse_session_file(text);
	} catch (const control::DecodeError &e) {
		const std::string why = e.what();
		check(why.rfind("session file", 0) == 0 && why.find('\n') == std::string::npos,
		      "a refusal is one line naming the session file");
		return 0;
	}
	check(session.format >= 1 && session.format <= control::kSessionFileFormat, "a format out of range");
	check(control::parse_session_file(control::session_file_text(session)) == session,
	      "a parsed session file written back parses to the same session");
	return 0;
}
