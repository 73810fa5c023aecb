// relay/live_session.hpp — what the relay knows of a live session (one whose
// HELLO has a live period) for its viewers: each trace's metadata size and
// each stream's packets as the writer thread reports them written (an
// in-memory index: offset, sizes, timestamps, events discarded, stream class),
// its latest beacon, whether it is closed, who may view it; and LiveViewer,
// one viewer connection's state and its answer to each request (lttng-live,
// 2.4). Any number of viewers (up to a cap) read a session at once, each
// from its own position.
// Both live on the relay's event loop thread only.
#pragma once

#include "base/fd.hpp"
#include "control/live_protocol.hpp"
#include "relay/write_queue.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tracery::relay {

namespace live = control::live; // the viewer protocol's bytes (shared with `tracery view --live`)

// One packet of a stream as a viewer is told of it.
struct LiveEntry {
	uint64_t offset = 0, packet_size = 0, content_size = 0;
	uint64_t timestamp_begin = 0, timestamp_end = 0, events_discarded = 0, stream_class_id = 0;
};

struct LiveStream {
	uint64_t viewer_id = 0; // the id viewers name it by (unique in the relay)
	uint32_t trace_id = 0;
	std::string file;
	std::vector<LiveEntry> entries; // whole packets, written, in file order
	uint64_t written = 0;           // bytes of the stream file those packets make
	std::optional<uint64_t> beacon; // the latest beacon since the last packet
	bool closed = false;
	bool warned = false; // a packet broke a rule for viewers (said once)
};

struct LiveTrace {
	uint64_t viewer_id = 0;   // the viewers' ctf_trace_id
	uint64_t metadata_id = 0; // the viewers' id of its metadata stream
	std::string path;         // relative to the session's directory
	uint64_t metadata_written = 0;
	// The stream class of its metadata when it declares exactly one (for a
	// beacon of a stream without packets), with the metadata size it was read at.
	std::optional<uint64_t> single_class;
	uint64_t single_class_at = 0;
	// The stream each (stream class, stream instance) of its packets came on:
	// a viewer takes them for one stream.
	std::map<std::pair<uint64_t, uint64_t>, uint32_t> instances;
};

struct LiveSession {
	uint64_t id = 0;
	std::string hostname, name;
	std::string dir; // absolute path of the session's directory
	uint64_t live_period_ns = 0;
	bool over = false; // the sender is gone (BYE or not): nothing more will come
	// Who may view it: anyone on the plain lttng-live port when its sender
	// marked it public (HELLO's flag); on the authenticated viewer port, the
	// viewers of its sender's identity (the key's name; "" for a sender that
	// did not authenticate: no viewer of that port sees it).
	bool public_live = false;
	std::string identity;
	uint32_t viewers = 0; // attached now, each with its own position
	std::map<uint32_t, LiveTrace> traces;
	std::map<uint32_t, LiveStream> streams;

	// Takes in what the writer thread wrote; next_id gives viewer ids.
	// Returns a line for the log when a packet breaks a rule viewers rely on
	// (once per stream): beginning before the stream's beacon, or carrying the
	// stream instance id of another stream of its trace.
	std::string apply(const Written &w, uint64_t &next_id);
	// The stream class a viewer is told for an INACTIVE stream without a
	// packet: read from its trace's metadata (once per metadata size).
	std::optional<uint64_t> class_of(LiveStream &s);
};

// The live sessions of the relay, by id, and the ids it gives out. A
// session's index is held by its sender's connection (and its writer thread
// until that is done) and by each viewer attached to it: it is dropped once
// they are all gone.
struct LiveRegistry {
	std::map<uint64_t, std::shared_ptr<LiveSession>> sessions; // listed while not over
	uint64_t next_id = 1;
	uint64_t next_viewer_session = 1;
	uint32_t max_viewers_per_session = 16;
};

// What one viewer connection may list and attach: on the plain lttng-live
// port (no authentication: babeltrace2), the sessions marked public; on the
// authenticated viewer port, those whose sender authenticated with the
// viewer's identity. Sessions it may not see are neither listed nor
// attachable (ATTACH says "unknown", as for a session that is not there).
struct ViewerAccess {
	bool plain = true;
	std::string identity; // when not plain: the key name the viewer authenticated with
	bool may_view(const LiveSession &s) const
	{
		return plain ? s.public_live : !s.identity.empty() && s.identity == identity;
	}
};

// What begins each batch of metadata a viewer is given after the first
// (replies up to NO_NEW; the first one begins with the file's own):
// babeltrace2 before 2.0.5 checks every batch of plain-text metadata for this
// signature, and when it is missing, checks whatever its stack held as the
// version instead (an error most times, not always). A comment to others.
inline constexpr std::string_view kMetadataSignature = "/* CTF 1.8 */\n";

// The one stream class a TSDL text declares, or none (no stream class, or several).
std::optional<uint64_t> single_stream_class(std::string_view tsdl);

class LiveViewer {
public:
	LiveViewer(LiveRegistry &registry, std::string peer, ViewerAccess access)
		: registry_(registry), peer_(std::move(peer)), access_(std::move(access))
	{
	}
	~LiveViewer();
	LiveViewer(const LiveViewer &) = delete;
	LiveViewer &operator=(const LiveViewer &) = delete;

	// File bytes that follow a reply (GET_PACKET, GET_METADATA).
	struct FileRange {
		int fd = -1;
		uint64_t offset = 0, size = 0;
	};
	// Answers one request: its reply appended to out (and *file, when bytes of a
	// file follow). Returns "" or why the viewer is closed once out is sent (a
	// request out of order, naming what this viewer was not given, asking
	// beyond the index; a refused attach).
	std::string handle(const live::Request &r, std::vector<uint8_t> &out, FileRange *file);

	const std::string &peer() const { return peer_; }
	const ViewerAccess &access() const { return access_; }
	// CONNECT done.
	bool connected() const { return connected_; }

private:
	struct StreamView {
		uint64_t next = 0;  // the next entry to give
		uint64_t floor = 0; // the latest timestamp given (packet end or inactivity)
		bool hup = false;
	};
	struct TraceView {
		uint64_t metadata_sent = 0;
		// A batch of metadata replies is under way: bytes were given since the
		// last NO_NEW (a viewer asks for metadata until NO_NEW, then parses
		// what it got as one text).
		bool in_batch = false;
		// unannounced: its metadata stream not given (yet, or again); dropping:
		// its last stream hung up, so the viewer drops the trace, and may not
		// have done so yet: its new streams wait for the next GET_NEW_STREAMS.
		enum class State { unannounced, announced, dropping } state = State::unannounced;
	};
	struct Attached {
		std::shared_ptr<LiveSession> session;
		std::map<uint32_t, StreamView> streams; // announced
		std::map<uint32_t, TraceView> traces;
	};
	struct Named { // what a viewer id names
		uint64_t session = 0;
		uint32_t id = 0; // stream id, or trace id for a metadata stream
		bool metadata = false;
	};

	std::string attach(const live::Request &r, std::vector<uint8_t> &out);
	std::string new_streams(const live::Request &r, std::vector<uint8_t> &out);
	std::string next_index(const live::Request &r, std::vector<uint8_t> &out);
	std::string packet(const live::Request &r, std::vector<uint8_t> &out, FileRange *file);
	std::string metadata(const live::Request &r, std::vector<uint8_t> &out, FileRange *file);
	std::string detach(const live::Request &r, std::vector<uint8_t> &out);
	// Announces the streams of `a` not yet announced whose trace has metadata
	// and is not being dropped (with the trace's metadata stream when the
	// viewer does not have it): their entries in out, their count returned.
	// seek_last: they start after their last packet, and closed ones are skipped.
	uint32_t announce(Attached &a, bool seek_last, std::vector<uint8_t> &out);
	static bool announceable(const Attached &a, uint32_t stream_id);
	bool has_new_streams() const;
	const Named *named(uint64_t viewer_id, bool metadata) const;
	int open_file(uint64_t viewer_id, const LiveSession &s, const std::string &relative);

	LiveRegistry &registry_;
	std::string peer_;
	ViewerAccess access_;
	bool connected_ = false, created_ = false;
	std::map<uint64_t, Attached> attached_; // by session id
	std::map<uint64_t, Named> names_;       // by viewer id
	std::map<uint64_t, base::Fd> files_;    // by viewer id, opened for reading
};

} // namespace tracery::relay
