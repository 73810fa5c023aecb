// enable-channel's tracefile options: see tracefile_options.hpp.
#include "daemon/tracefile_options.hpp"

#include "base/sizes.hpp"
#include "daemon/daemon.hpp"

#include <string>

namespace tracery::daemon {

consumer::TracefileLimit tracefile_limit(const std::optional<uint64_t> &size, const std::optional<uint64_t> &count,
                                         uint64_t min_size, const SessionIdentity &session)
{
	if (!size && !count)
		return {};
	if (!size)
		throw CommandError("--tracefile-count needs --tracefile-size: the count is of files of that size");
	if (*size < min_size)
		throw CommandError("--tracefile-size " + base::format_size(*size) +
		                   " is less than a packet of the "
		                   "channel (" +
		                   base::format_size(min_size) + "): give at least the sub-buffer size");
	if (count && *count == 0)
		throw CommandError("--tracefile-count 0: give at least 1 (or leave it out: no limit on the number of "
		                   "files)");
	if (session.snapshot)
		throw CommandError("session '" + session.name +
		                   "' is a snapshot session: its buffers are written only by "
		                   "`snapshot record`, each snapshot a trace of its own; leave out --tracefile-size");
	if (session.relay.live_period_ns)
		throw CommandError("session '" + session.name +
		                   "' is live: its viewers read each stream's one file on the relay; leave out "
		                   "--tracefile-size, or create the session without --live");
	return {*size, count.value_or(0)};
}

} // namespace tracery::daemon
