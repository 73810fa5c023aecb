// The C API's sessions (ctl.h): the simplest path (setup, start, stop,
// cleanup, state, dropped count) and create, destroy, list, status. Each is
// the request the `tracery` verb of the same name sends.
#include "ctl/c_api.hpp"

#include "ctl/autostart.hpp"

#include <cstddef>

namespace tracery::ctl {

namespace {

// struct tracery_ctl_session_attr of release 0.1, before the relay's key and CA files.
constexpr size_t kSessionAttrFirstSize = offsetof(tracery_ctl_session_attr, relay_key_file);

// The channel tracery_ctl_setup makes (the daemon's default channel's name).
constexpr char kSetupChannel[] = "channel0";

control::StatusReply status_of(const char *name) { return request(control::Status{{required(name, "name")}}); }

int state_code(const std::string &state)
{
	if (state == "created")
		return TRACERY_CTL_STATE_CREATED;
	if (state == "started")
		return TRACERY_CTL_STATE_STARTED;
	if (state == "stopping")
		return TRACERY_CTL_STATE_STOPPING;
	if (state == "stopped")
		return TRACERY_CTL_STATE_STOPPED;
	throw Error("the session daemon names a state '" + state +
	                    "' this library does not know: libtracery-ctl and traceryd are from different releases",
	            ErrorKind::protocol);
}

void destroy(const std::string &name)
{
	control::Destroy req;
	req.session = name;
	request(req);
}

} // namespace

} // namespace tracery::ctl

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_setup(const char *root_dir, const char *name, uint64_t buf_size, uint32_t buf_nr,
                                      uint32_t flags)
{
	return c_call([&] {
		const std::string root = required(root_dir, "root_dir");
		const std::string session = required(name, "name");
		check_flags(flags, TRACERY_CTL_OVERWRITE | TRACERY_CTL_PER_PID | TRACERY_CTL_SNAPSHOT, "flags");
		control::Create create;
		create.session = session;
		create.snapshot = (flags & TRACERY_CTL_SNAPSHOT) != 0;
		create.output = absolute_path(root) + "/" + session;
		control::EnableChannel channel;
		channel.session = session;
		channel.channel = kSetupChannel;
		if (buf_size)
			channel.subbuf_size = buf_size;
		if (buf_nr)
			channel.num_subbuf = buf_nr;
		channel.overwrite = (flags & (TRACERY_CTL_OVERWRITE | TRACERY_CTL_SNAPSHOT)) != 0;
		channel.per_pid = (flags & TRACERY_CTL_PER_PID) != 0;
		control::EnableEvent events;
		events.session = session;
		events.channel = kSetupChannel;
		events.all = true;
		ensure_daemon();
		request(create);
		try {
			request(channel);
			request(events);
		} catch (const Error &) {
			try {
				destroy(session);
			} catch (const Error &) {
				// The first error is the one to tell; the session stays, named in it.
			}
			throw;
		}
	});
}

TRACERY_CTL_API int tracery_ctl_start(const char *name)
{
	return c_call([&] { request(control::Start{{required(name, "name")}}); });
}

TRACERY_CTL_API int tracery_ctl_stop(const char *name)
{
	return c_call([&] { request(control::Stop{{required(name, "name")}}); });
}

TRACERY_CTL_API int tracery_ctl_cleanup(const char *name)
{
	return c_call([&] { destroy(required(name, "name")); });
}

TRACERY_CTL_API int tracery_ctl_destroy_session(const char *name) { return tracery_ctl_cleanup(name); }

TRACERY_CTL_API int tracery_ctl_get_state(const char *name, int *state)
{
	return c_call([&] {
		if (!state)
			throw Error("state is NULL");
		*state = state_code(status_of(name).state);
	});
}

TRACERY_CTL_API int tracery_ctl_get_dropped(const char *name, uint64_t *dropped)
{
	return c_call([&] {
		if (!dropped)
			throw Error("dropped is NULL");
		const control::StatusReply status = status_of(name);
		uint64_t total = 0;
		for (const control::ChannelStatus &c : status.channels)
			total += c.lost;
		if (status.kernel && status.kernel->lost)
			total += *status.kernel->lost;
		*dropped = total;
	});
}

TRACERY_CTL_API int tracery_ctl_create_session(const char *name, const struct tracery_ctl_session_attr *attr)
{
	return c_call([&] {
		control::Create req;
		req.session = required(name, "name");
		if (!attr)
			throw Error("attr is NULL: give an output directory, a relay URL or both");
		check_struct_size(attr, attr->struct_size, kSessionAttrFirstSize, sizeof *attr, "attr");
		check_flags(attr->flags, TRACERY_CTL_SNAPSHOT, "attr->flags");
		req.snapshot = (attr->flags & TRACERY_CTL_SNAPSHOT) != 0;
		if (const auto output = optional_text(attr->output, "attr->output"))
			req.output = absolute_path(*output);
		req.url = optional_text(attr->url, "attr->url");
		if (!req.output && !req.url)
			throw Error(
				"attr gives neither an output directory nor a relay URL: the trace would go nowhere");
		if (req.url && req.output)
			req.local_copy = true;
		if (attr->live_period_ns) {
			if (!req.url)
				throw Error(
					"attr->live_period_ns is for a session sent to a relay: give attr->url too");
			req.live_period_ns = attr->live_period_ns;
		}
		if (has_field(attr->struct_size, offsetof(tracery_ctl_session_attr, relay_ca_file) + sizeof(char *))) {
			const auto key = optional_text(attr->relay_key_file, "attr->relay_key_file");
			const auto ca = optional_text(attr->relay_ca_file, "attr->relay_ca_file");
			if ((key || ca) && !req.url && !req.snapshot)
				throw Error("attr->relay_key_file and attr->relay_ca_file are for a session sent to a "
				            "relay, or the snapshots of a snapshot session: give attr->url or "
				            "TRACERY_CTL_SNAPSHOT too");
			add_relay_security(key.value_or(""), ca.value_or(""), req, "attr->relay_key_file",
			                   "attr->relay_ca_file");
		}
		ensure_daemon();
		request(req);
	});
}

TRACERY_CTL_API int tracery_ctl_list_sessions(char **json)
{
	return c_call([&] {
		if (!json)
			throw Error("json is NULL");
		give_reply(request(control::List{}), json);
	});
}

TRACERY_CTL_API int tracery_ctl_session_status(const char *name, char **json)
{
	return c_call([&] {
		if (!json)
			throw Error("json is NULL");
		give_reply(status_of(name), json);
	});
}

} // extern "C"
