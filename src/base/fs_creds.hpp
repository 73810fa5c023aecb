// base/fs_creds.hpp — the filesystem credentials (setfsuid/setfsgid, per
// thread) of a scope: files opened or made in it are checked against, and
// belong to, the given user, so a daemon running as root never opens or
// creates anything that user could not. Threads started inside the scope
// inherit the credentials.
#pragma once

#include <sys/fsuid.h>
#include <sys/types.h>

namespace tracery::base {

class FsCreds {
public:
	// uid (uid_t)-1: changes nothing.
	FsCreds(uid_t uid, gid_t gid) : active_(uid != static_cast<uid_t>(-1))
	{
		if (active_) {
			gid_ = static_cast<gid_t>(::setfsgid(gid));
			uid_ = static_cast<uid_t>(::setfsuid(uid));
		}
	}
	// Restores the credentials the scope began with.
	~FsCreds()
	{
		if (active_) {
			::setfsuid(uid_);
			::setfsgid(gid_);
		}
	}
	FsCreds(const FsCreds &) = delete;
	FsCreds &operator=(const FsCreds &) = delete;

private:
	bool active_;
	uid_t uid_ = 0;
	gid_t gid_ = 0;
};

} // namespace tracery::base
