// `track` and `untrack` as traceryd answers them: a session's user space
// tracking rules (process_tracking.hpp) changed, and applied at once to a
// started session's programs (Daemon::retrack_members). The kernel domain's
// are kernel_commands.cpp's.
#include "daemon/daemon.hpp"

#include <stdexcept>

namespace tracery::daemon {

control::TrackingReply Daemon::cmd_track(const control::Tracking &req, bool untrack, const control::PeerCred &peer,
                                         Lock &lock)
{
	if (req.domain == "kernel")
		return cmd_kernel_process_attrs(req, untrack, peer, lock);
	if (req.domain != "user")
		throw CommandError("unknown tracking domain: give -u (user space) or -k (the kernel)");
	if (req.follow_children)
		throw CommandError("--follow-children is for the kernel's --pid (-k): user space programs are "
		                   "tracked by --vpid, --vuid and --vgid");
	TraceSession &s = session_for(req.session, peer);
	try {
		s.edit_user_tracking().apply(req.changes, untrack);
	} catch (const std::invalid_argument &e) {
		throw CommandError(e.what());
	}
	if (s.started())
		retrack_members(s, lock);
	return {s.name(), s.user_tracking().status()};
}

} // namespace tracery::daemon
