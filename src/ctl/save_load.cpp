// The C API's saved sessions (ctl.h): `save`'s request, its reply written as
// the session file `tracery save` writes, and `load`'s request made of a
// session file's text. Reading and writing the files is the caller's.
#include "ctl/c_api.hpp"

#include "ctl/autostart.hpp"

#include "control/session_file.hpp"

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_save_session(const char *name, char **text)
{
	return c_call([&] {
		control::Save req;
		req.session = required(name, "name");
		if (!text)
			throw Error("text is NULL");
		const control::SaveReply reply = request(req);
		if (reply.sessions.size() != 1)
			throw Error(
				"the session daemon saved " + std::to_string(reply.sessions.size()) +
					" sessions for one name: libtracery-ctl and traceryd are from different releases",
				ErrorKind::protocol);
		give_string(control::session_file_text(reply.sessions[0]), text);
	});
}

TRACERY_CTL_API int tracery_ctl_load_session(const char *text, const char *origin, const char *name, uint32_t flags,
                                             char **json)
{
	return c_call([&] {
		const std::string file_text = required(text, "text");
		const std::string where = optional_text(origin, "origin").value_or("text");
		check_flags(flags, TRACERY_CTL_LOAD_START, "flags");
		if (file_text.size() > control::kMaxSessionFileBytes)
			throw Error(where + ": " + std::to_string(file_text.size()) + " bytes, more than the " +
			            std::to_string(control::kMaxSessionFileBytes) + " of a session file");
		control::Load req;
		try {
			req.session = control::parse_session_file(file_text);
		} catch (const control::DecodeError &e) {
			throw Error(where + ": " + e.what());
		}
		if (const auto renamed = optional_text(name, "name"))
			req.session.name = *renamed;
		req.file = where;
		if (flags & TRACERY_CTL_LOAD_START)
			req.start = true;
		ensure_daemon();
		const auto reply = request(req);
		if (json)
			give_reply(reply, json);
	});
}

} // extern "C"
