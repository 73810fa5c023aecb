// What a tracing session is, fixed when it is created: its id and name, its
// owner, where its traces go (an output directory, a relay, or both), whether
// it is a snapshot session, and the identity of its trace (uuid, what its
// timestamps count). Every other part of a session (trace_session.hpp) reads
// it; nothing changes it.
#pragma once

#include "consumer/relay_link.hpp"

#include "clock/trace_clock.hpp"
#include "ctf/uuid.hpp"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace tracery::daemon {

// A session streamed to a relay (`tracery create --set-url`): its link,
// connected, and its live period (0: not live).
struct SessionRelay {
	std::shared_ptr<consumer::RelayLink> link;
	std::string url; // HOST:PORT, for status
	uint64_t live_period_ns = 0;
	bool public_live = false; // --public-live
	// The key and CAs (--relay-key, --relay-ca) of a snapshot session's
	// snapshots sent to a relay: to its snapshot output's URL (`create
	// --snapshot --set-url`, LTTng's form: no link; `snapshot add-output`),
	// or `snapshot record`'s.
	control::relay::ClientSecurity snapshot_security;
};

// The host name the relay files this host's sessions under: the protocol's
// name characters only (anything else becomes '-').
std::string relay_host_name();

struct SessionIdentity {
	uint64_t id;
	std::string name;
	uid_t owner;
	gid_t owner_gid;
	std::string output; // "": only sent to the relay
	bool snapshot;
	SessionRelay relay;
	ctf::Uuid uuid = ctf::Uuid::random();
	// What the trace's timestamps count; every program writing into it is
	// told (clock/trace_clock.hpp).
	clock::TickUnit tick_unit = clock::preferred_tick_unit();
	// The user trace's clock, written identically in the kernel trace's metadata.
	base::TickScale clock_scale = clock::tick_scale(tick_unit);

	// Whether its traces are written to disk here (not only sent to a relay).
	bool local() const { return !output.empty(); }
};

// Creates (or checks) a local session's output directory, as its owner: it
// must be new or empty, and writable. Throws std::runtime_error with a
// one-line message naming the fix.
void prepare_output_directory(const SessionIdentity &session);

} // namespace tracery::daemon
