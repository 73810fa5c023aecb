// The C API's snapshots, rotation and clear (ctl.h): the requests of
// `snapshot record`, `rotate`, `enable-rotation`, `disable-rotation` and
// `clear`.
#include "ctl/c_api.hpp"

using namespace tracery;
using namespace tracery::ctl;

extern "C" {

TRACERY_CTL_API int tracery_ctl_snapshot_record(const char *session, const char *path, uint64_t max_size,
                                                char **snapshot_dir)
{
	return c_call([&] {
		control::SnapshotRecord req;
		req.session = required(session, "session");
		if (const auto dir = optional_text(path, "path"))
			req.path = absolute_path(*dir);
		if (max_size)
			req.max_size = max_size;
		give_string(request(req).path, snapshot_dir);
	});
}

TRACERY_CTL_API int tracery_ctl_rotate(const char *session, char **archive)
{
	return c_call([&] {
		control::Rotate req;
		req.session = required(session, "session");
		give_string(request(req).archive.value_or(""), archive);
	});
}

TRACERY_CTL_API int tracery_ctl_enable_rotation(const char *session, uint64_t timer_ns, uint64_t size_bytes)
{
	return c_call([&] {
		control::EnableRotation req;
		req.session = required(session, "session");
		if (!timer_ns && !size_bytes)
			throw Error("neither timer_ns nor size_bytes given: rotate by time, by size or both");
		if (timer_ns)
			req.timer_ns = timer_ns;
		if (size_bytes)
			req.size_bytes = size_bytes;
		request(req);
	});
}

TRACERY_CTL_API int tracery_ctl_disable_rotation(const char *session, uint32_t which)
{
	return c_call([&] {
		control::DisableRotation req;
		req.session = required(session, "session");
		check_flags(which, TRACERY_CTL_ROTATION_TIMER | TRACERY_CTL_ROTATION_SIZE, "which");
		req.timer = (which & TRACERY_CTL_ROTATION_TIMER) != 0;
		req.size = (which & TRACERY_CTL_ROTATION_SIZE) != 0;
		request(req);
	});
}

TRACERY_CTL_API int tracery_ctl_clear(const char *session)
{
	return c_call([&] { request(control::Clear{{required(session, "session")}}); });
}

} // extern "C"
