// A session's user trace: where it goes (a directory, the relay's "ust"
// trace, or both: consumer/trace_output.hpp), its metadata, and the ids its
// channels give to the events programs bring. The metadata is made at the
// first start (preamble, one stream class per channel, the event classes
// known so far); event classes are added as programs bring new events. The
// text is kept once: where it is written (the TraceOutput rewrites its local
// file from its copy, the relay link resends its own), or here in a snapshot
// session, which writes nothing until `snapshot record`.
#pragma once

#include "daemon/channel.hpp"
#include "daemon/session_identity.hpp"

#include "consumer/trace_output.hpp"
#include "ctf/metadata.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tracery::daemon {

class UserTrace {
public:
	explicit UserTrace(const SessionIdentity &session);

	// Where the user trace goes: made on first use (once the layout is
	// decided, see kernel_domain.hpp), in the local directory given last
	// (OUTPUT until then).
	consumer::TraceOutput &output();
	// The layout is decided: the user trace's local directory ("": none).
	void set_local_dir(std::string dir);
	// Rotation: the local trace goes on in `dir`, given the whole metadata
	// (consumer::TraceOutput::continue_in); a session that never started
	// only notes it. Throws std::system_error.
	void continue_in(std::string dir);
	// A rotation that failed after continue_in: the trace goes on in `dir`,
	// where it was (consumer::TraceOutput::go_back). Throws std::system_error.
	void go_back(std::string dir);
	// The whole metadata written so far ("" before the first start).
	std::string metadata() { return metadata_written_ ? output().metadata() : ""; }

	// At the first start: the metadata file (a snapshot session's is kept
	// for its snapshots), its env naming the processes tracked then
	// (`tracked`: ProcessTracking::tracked_env()). Throws std::runtime_error.
	void write_metadata(const std::vector<std::unique_ptr<Channel>> &channels,
	                    const std::vector<ctf::EnvEntry> &tracked = {});
	bool metadata_written() const { return metadata_written_; }
	// A snapshot session's whole metadata so far, which each snapshot writes.
	const std::string &snapshot_metadata() const { return held_; }

	// The ids in `ch` of the given events (schema key -> schema) that are
	// enabled in it, giving ids (and writing metadata) to new ones.
	std::map<std::string, uint32_t> ids_for(Channel &ch, const std::map<std::string, nlohmann::json> &events);

private:
	const SessionIdentity &session_;
	std::string local_dir_;
	std::optional<consumer::TraceOutput> output_;
	ctf::TraceInfo info_; // the metadata's, without the processes tracked
	// The metadata no TraceOutput keeps: a snapshot session's, all of it;
	// another session's event classes given before its first start (none in
	// practice).
	std::string held_;
	bool metadata_written_ = false;
};

} // namespace tracery::daemon
