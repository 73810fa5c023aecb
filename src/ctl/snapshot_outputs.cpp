// The C API's snapshot outputs (ctl.h): the requests of `snapshot
// add-output`, `del-output` and `list-output`, each answered with the
// session's outputs now.
#include "ctl/c_api.hpp"

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_snapshot_add_output(const char *session, const char *url, const char *name,
                                                    uint64_t max_size, char **json)
{
	return c_call([&] {
		control::SnapshotAddOutput req;
		req.session = required(session, "session");
		req.output.path = snapshot_destination(required(url, "url"));
		req.output.name = optional_text(name, "name").value_or("");
		req.output.max_size = max_size;
		const auto reply = request(req);
		if (json)
			give_reply(reply, json);
	});
}

TRACERY_CTL_API int tracery_ctl_snapshot_del_output(const char *session, const char *output, char **json)
{
	return c_call([&] {
		const auto reply =
			request(control::SnapshotDelOutput{required(session, "session"), required(output, "output")});
		if (json)
			give_reply(reply, json);
	});
}

TRACERY_CTL_API int tracery_ctl_snapshot_list_outputs(const char *session, char **json)
{
	return c_call([&] {
		if (!json)
			throw Error("json is NULL");
		give_reply(request(control::SnapshotListOutput{{required(session, "session")}}), json);
	});
}

} // extern "C"
