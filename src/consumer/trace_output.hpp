// consumer/trace_output.hpp — where one trace goes: a local directory, a
// relay (the trace at a relative path of the session on it), or both. Its
// metadata and the sinks of its channel buffers go there alike, so the
// daemon's user trace and the kernel trace are written the same way whether
// they are kept, sent or both.
#pragma once

#include "consumer/channel_consumer.hpp"
#include "consumer/event_count.hpp"
#include "consumer/file_sink.hpp"
#include "consumer/relay_link.hpp"
#include "consumer/sink.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace tracery::consumer {

class TraceOutput {
public:
	TraceOutput() = default;
	// local_dir: "" for no local copy (else an existing directory, or one
	// create_local() makes); link: nullptr for none, else the trace is
	// added to it at relay_path.
	TraceOutput(std::string local_dir, std::shared_ptr<RelayLink> link, const std::string &relay_path);

	// mkdir -p of the local directory, if any. Throws std::system_error.
	void create_local() const;
	// The whole metadata (locally: the file, replaced); then appends. Throw
	// std::system_error for the local file (the relay's copy has the text
	// anyway). The local file is replaced by each append too, from the text
	// kept here, never read: it is in a directory of the session's owner, who
	// may have put anything there (a FIFO whose open would block the daemon,
	// a huge file it would copy).
	void write_metadata(std::string_view text);
	void append_metadata(std::string_view text);
	// The sink of one channel buffer's streams; their local files limited as
	// `limit` says (file_sink.hpp), by default as set_tracefile_limit did.
	std::unique_ptr<PacketSink> sink(const StreamNames &names, uint32_t num_cpus) const
	{
		return sink(names, num_cpus, tracefile_limit_);
	}
	std::unique_ptr<PacketSink> sink(const StreamNames &names, uint32_t num_cpus,
	                                 const TracefileLimit &limit) const;
	// The local files of the sinks made from here on, unless sink() says otherwise.
	void set_tracefile_limit(const TracefileLimit &limit) { tracefile_limit_ = limit; }
	// What counts the events of their packets that cannot be written, with
	// the metadata given so far (when it counts); any thread.
	ChannelConsumer::EventCounter event_counter(const StreamNames &names) const;

	const std::string &local_dir() const { return local_dir_; }
	// Rotation: the local trace, if any, goes on in `dir` (made if missing,
	// given the whole metadata so far); the relay's, if any, goes on at the
	// same place in the relay's session: the trace's name in the chunk's
	// directory, the last component of dir's parent ("CHUNK/ust";
	// RelayLink::continue_trace). Sinks made from now on write there. Throws
	// std::system_error, changing nothing.
	void continue_in(std::string dir);
	// Undoes the last continue_in (a rotation that failed after it): the
	// trace goes on where it was, given the metadata appended since (the
	// relay's: RelayLink::discontinue). Throws std::system_error for the
	// local file; the place is restored all the same.
	void go_back();
	// The whole metadata so far.
	std::string metadata() const { return metadata_->text(); }
	// Before anything is written: another local directory ("": none).
	void set_local_dir(std::string dir) { local_dir_ = std::move(dir); }
	bool relayed() const { return link_ != nullptr; }

private:
	std::string local_dir_;
	std::string previous_dir_; // before the last continue_in
	std::shared_ptr<RelayLink> link_;
	TracefileLimit tracefile_limit_;
	uint32_t trace_ = 0;     // on link_
	std::string relay_name_; // the last component of its relay path: "ust", "kernel"
	// All given so far: the local file's text, and the counters'.
	std::shared_ptr<SharedMetadata> metadata_ = std::make_shared<SharedMetadata>();
};

} // namespace tracery::consumer
