// Session files: see session_file.hpp.
#include "control/session_file.hpp"

#include "control/codec_impl.hpp"
#include "control/paths.hpp"

#include <unistd.h>

#include <cstdlib>

namespace tracery::control {

namespace {
constexpr char kWhat[] = "session file";
}

nlohmann::json session_file_json(const SavedSession &session) { return codec_detail::write(session); }

std::string session_file_text(const SavedSession &session) { return session_file_json(session).dump(2) + "\n"; }

SavedSession session_from_json(const nlohmann::json &j)
{
	// The format first: a later one's fields are not errors, just unknown here.
	if (j.is_object()) {
		const auto it = j.find("format");
		if (it != j.end() && it->is_number_unsigned() && it->get<uint64_t>() > kSessionFileFormat)
			throw DecodeError(std::string(kWhat) + ": format " + std::to_string(it->get<uint64_t>()) +
			                  " is later than this tracery reads (" + std::to_string(kSessionFileFormat) +
			                  "): load it with a newer tracery");
	}
	SavedSession out;
	codec_detail::read(kWhat, nullptr, j, out);
	if (out.format == 0)
		throw DecodeError(std::string(kWhat) + ": field 'format' is 0, expected 1 to " +
		                  std::to_string(kSessionFileFormat));
	return out;
}

SavedSession parse_session_file(const std::string &text)
{
	if (text.size() > kMaxSessionFileBytes)
		throw DecodeError(std::string(kWhat) + ": " + std::to_string(text.size()) + " bytes, more than the " +
		                  std::to_string(kMaxSessionFileBytes) + " a session file may have");
	nlohmann::json j;
	try {
		j = nlohmann::json::parse(text);
	} catch (const nlohmann::json::exception &e) {
		throw DecodeError(std::string(kWhat) + ": not JSON: " + e.what());
	}
	return session_from_json(j);
}

std::string default_sessions_dir()
{
	if (const char *dir = getenv("TRACERY_SESSIONS_DIR"); dir && *dir)
		return dir;
	if (geteuid() == 0)
		return kSystemSessionsDir;
	return home_dir() + "/.tracery/sessions";
}

} // namespace tracery::control
