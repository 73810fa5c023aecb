// The C API's userspace probes (ctl.h): the request of `enable-event -k
// --userspace-probe=SPEC NAME`, the spec's path made absolute as the
// command makes it.
#include "ctl/c_api.hpp"

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_enable_userspace_probe(const char *session, const char *channel, const char *name,
                                                       const char *spec, const char *args, const char *filter,
                                                       char **json)
{
	return c_call([&] {
		control::KernelEnableEvent req;
		req.session = required(session, "session");
		req.channel = optional_text(channel, "channel").value_or("");
		req.probe_name = required(name, "name");
		req.probe = absolute_probe_spec(required(spec, "spec"));
		req.args = optional_text(args, "args");
		req.filter = optional_text(filter, "filter");
		const auto reply = request(req);
		if (json)
			give_reply(reply, json);
	});
}

} // extern "C"
