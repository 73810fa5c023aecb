// Files of a session are made with its owner's filesystem credentials
// (setfsuid/setfsgid, per thread), so the system daemon never creates or
// writes anything a user could not, and the files belong to that user.
// Consumer threads started inside the guard inherit them.
#pragma once

#include <sys/fsuid.h>
#include <unistd.h>

namespace tracery::daemon {

class AsOwner {
public:
	AsOwner(uid_t uid, gid_t gid) : active_(uid != geteuid())
	{
		if (active_) {
			setfsgid(gid);
			setfsuid(uid);
		}
	}
	~AsOwner()
	{
		if (active_) {
			setfsuid(geteuid());
			setfsgid(getegid());
		}
	}
	AsOwner(const AsOwner &) = delete;
	AsOwner &operator=(const AsOwner &) = delete;

private:
	bool active_;
};

} // namespace tracery::daemon
