// Where a tracing session is in its life: see session_lifecycle.hpp.
#include "daemon/session_lifecycle.hpp"

namespace tracery::daemon {

const char *state_name(SessionState s)
{
	// clang-format off
	switch (s) {
	case SessionState::created: return "created";
	case SessionState::started: return "started";
	case SessionState::stopping: return "stopping";
	case SessionState::stopped: return "stopped";
	}
	// clang-format on
	return "?";
}

} // namespace tracery::daemon
