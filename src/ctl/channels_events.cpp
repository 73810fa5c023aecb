// The C API's channels, events, contexts, tracking and event listing (ctl.h),
// in either domain: the requests of `enable-channel`, `enable-event`,
// `disable-event`, `add-context`, `track`, `untrack` and `list`.
#include "ctl/c_api.hpp"

namespace tracery::ctl {

namespace {

std::string channel_or_default(const char *channel) { return optional_text(channel, "channel").value_or(""); }

template <class Request>
Request channel_request(const char *session, const char *channel, const tracery_ctl_channel_attr *attr,
                        uint32_t allowed_flags)
{
	Request req;
	req.session = required(session, "session");
	req.channel = required(channel, "channel");
	if (!attr)
		return req;
	check_struct_size(*attr, "attr");
	check_flags(attr->flags, allowed_flags, "attr->flags");
	req.overwrite = (attr->flags & TRACERY_CTL_OVERWRITE) != 0;
	if (attr->subbuf_size)
		req.subbuf_size = attr->subbuf_size;
	if (attr->num_subbuf)
		req.num_subbuf = attr->num_subbuf;
	if (attr->tracefile_size)
		req.tracefile_size = attr->tracefile_size;
	if (attr->tracefile_count)
		req.tracefile_count = attr->tracefile_count;
	return req;
}

control::KernelEvents kernel_events(const char *session, const char *channel, const char *const *patterns, size_t count,
                                    const char *filter)
{
	control::KernelEvents req;
	req.session = required(session, "session");
	req.channel = channel_or_default(channel);
	req.filter = optional_text(filter, "filter");
	// None named: every tracepoint and every system call, as `enable-event -k -a`.
	if (count == 0) {
		req.tracepoints = std::vector<std::string>{"*"};
		req.all_syscalls = true;
	} else {
		req.tracepoints = strings(patterns, count, "patterns");
		req.all_syscalls = false;
	}
	return req;
}

control::EventRules user_events(const char *session, const char *channel, const char *const *patterns, size_t count)
{
	control::EventRules req;
	req.session = required(session, "session");
	req.channel = channel_or_default(channel);
	req.patterns = strings(patterns, count, "patterns");
	req.all = count == 0;
	return req;
}

template <class Request>
void tracking(const char *session, int domain, const char *attribute, const uint64_t *values, size_t count)
{
	Request req;
	req.session = required(session, "session");
	req.domain = is_kernel(domain) ? "kernel" : "user";
	control::TrackingChange change;
	change.attribute = required(attribute, "attribute");
	change.all = count == 0;
	if (count) {
		if (!values)
			throw Error("values is NULL with a count of " + std::to_string(count));
		if (count > control::kDaemonLimits.command)
			throw Error("values: a count of " + std::to_string(count) +
			            " is more than a request can carry");
		change.values.assign(values, values + count);
	}
	req.changes.push_back(std::move(change));
	request(req);
}

} // namespace

} // namespace tracery::ctl

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_enable_channel(const char *session, int domain, const char *channel,
                                               const struct tracery_ctl_channel_attr *attr)
{
	return c_call([&] {
		if (is_kernel(domain)) {
			auto req = channel_request<control::KernelEnableChannel>(session, channel, attr,
			                                                         TRACERY_CTL_OVERWRITE);
			if (attr && attr->blocking_timeout_us)
				throw Error(
					"attr->blocking_timeout_us is for user space channels: the kernel's writers "
					"never wait");
			request(req);
			return;
		}
		auto req = channel_request<control::EnableChannel>(session, channel, attr,
		                                                   TRACERY_CTL_OVERWRITE | TRACERY_CTL_PER_PID);
		if (attr) {
			req.per_pid = (attr->flags & TRACERY_CTL_PER_PID) != 0;
			if (attr->blocking_timeout_us)
				req.blocking_timeout_us = attr->blocking_timeout_us;
		}
		request(req);
	});
}

TRACERY_CTL_API int tracery_ctl_enable_events(const char *session, int domain, const char *channel,
                                              const char *const *patterns, size_t count, const char *filter,
                                              const char *const *exclusions, size_t exclusion_count)
{
	return c_call([&] {
		if (is_kernel(domain)) {
			if (exclusion_count)
				throw Error("exclusions are for user space events: leave kernel events out with a "
				            "filter or narrower patterns");
			request(control::KernelEnableEvent{kernel_events(session, channel, patterns, count, filter)});
			return;
		}
		control::EnableEvent req{user_events(session, channel, patterns, count)};
		req.filter = optional_text(filter, "filter");
		if (exclusion_count)
			req.exclude = strings(exclusions, exclusion_count, "exclusions");
		request(req);
	});
}

TRACERY_CTL_API int tracery_ctl_disable_events(const char *session, int domain, const char *channel,
                                               const char *const *patterns, size_t count)
{
	return c_call([&] {
		if (is_kernel(domain))
			request(control::KernelDisableEvent{kernel_events(session, channel, patterns, count, nullptr)});
		else
			request(control::DisableEvent{user_events(session, channel, patterns, count)});
	});
}

TRACERY_CTL_API int tracery_ctl_enable_syscalls(const char *session, const char *channel, const char *const *names,
                                                size_t count, const char *filter)
{
	return c_call([&] {
		control::KernelEnableEvent req;
		req.session = required(session, "session");
		req.channel = channel_or_default(channel);
		req.filter = optional_text(filter, "filter");
		req.syscalls = strings(names, count, "names");
		req.all_syscalls = count == 0;
		request(req);
	});
}

TRACERY_CTL_API int tracery_ctl_add_context(const char *session, int domain, const char *channel,
                                            const char *const *types, size_t count)
{
	return c_call([&] {
		const std::string name = required(session, "session");
		const bool kernel = is_kernel(domain);
		if (count == 0)
			throw Error("no context type given (vpid, vtid, procname, ...: `tracery add-context --list`)");
		std::vector<std::string> contexts = strings(types, count, "types");
		if (kernel)
			request(control::KernelAddContext{name, channel_or_default(channel), std::move(contexts)});
		else
			request(control::AddContext{name, channel_or_default(channel), std::move(contexts)});
	});
}

TRACERY_CTL_API int tracery_ctl_track(const char *session, int domain, const char *attribute, const uint64_t *values,
                                      size_t count)
{
	return c_call([&] { tracking<control::Track>(session, domain, attribute, values, count); });
}

TRACERY_CTL_API int tracery_ctl_untrack(const char *session, int domain, const char *attribute, const uint64_t *values,
                                        size_t count)
{
	return c_call([&] { tracking<control::Untrack>(session, domain, attribute, values, count); });
}

TRACERY_CTL_API int tracery_ctl_list_events(int domain, char **json)
{
	return c_call([&] {
		const bool kernel = is_kernel(domain);
		if (!json)
			throw Error("json is NULL");
		if (kernel)
			give_reply(request(control::KernelList{}), json);
		else
			give_reply(request(control::ListEvents{}), json);
	});
}

} // extern "C"
