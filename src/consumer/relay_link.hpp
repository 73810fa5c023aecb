// consumer/relay_link.hpp — one session's link to tracery-relayd: the
// RelayConnection (control/relay_connection.hpp), a bounded send queue and
// the sender thread that drains it.
//
// Consumer threads never wait on the network: send_packet() copies the
// packet into the queue (under a mutex held only for the bookkeeping) and
// returns; when the queue holds its limit of bytes (the relay is slow, not
// connected, or its disk refuses writes), the packet is not taken, and the
// caller offers it again later (RelaySink throws WriteRefused: its consumer
// keeps the sub-buffer, and the ring buffer counts what its programs drop
// meanwhile). Only a packet larger than the whole queue, or one given after
// the link ended, is dropped and counted.
// The sender thread alone talks to the relay, with no lock held while it
// does.
//
// What the relay must know besides packets is state kept here, not queued:
// the traces (TRACE), each trace's whole metadata text (METADATA: the part
// not yet sent goes before the next packet of that trace, and on a new
// connection the whole text again), and the streams (STREAM: declared on a
// connection before its first packet there). So a reconnection (after the
// relay went away: a new HELLO, tried again with a growing delay up to
// kMaxRetryMs, which starts again from kMinRetryMs only after a connection
// that lasted kStableMs: a relay that accepts and fails at once gets a
// handful of sessions a minute, not a storm) makes the relay's new session
// directory readable on its own. A relay whose disk refuses writes says so
// (NOTICE write_failed, then write_resumed): counts() shows it meanwhile.
// No packet is sent meanwhile: they wait in the queue. Packets sent on a
// connection that broke before the relay confirmed them (SYNC, sent every
// kSyncIntervalMs while packets flow) are counted as unconfirmed: they may
// or may not be on the relay's disk. So that the end is exact when the
// relay's disk still refuses, the link keeps what it needs to count the
// events of each packet sent and not yet confirmed (the count, or for a user
// packet its bytes, charged to queue_bytes with the queue); flush() then
// asks the relay to drop what it has not written (DROP_UNWRITTEN), and its
// answer says which of those packets were written: the others' events are
// counted as not written.
#pragma once

#include "control/relay_connection.hpp"
#include "ctf/packet.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tracery::consumer {

struct RelayLinkConfig {
	std::string host;
	uint16_t port = 0;
	std::optional<control::serial::LineSettings> serial; // set: over this serial line, not host and port
	control::relay::Hello hello;                         // hostname, session, creation time, live period
	size_t queue_bytes = 64 * 1024 * 1024;               // packets waiting to be sent, at most
	control::relay::ClientSecurity security;             // TLS and the key, when the relay asks for them
	// Lines for the daemon's log (connected, lost, reconnected): from the
	// sender thread.
	std::function<void(const std::string &)> log;
};

class RelayLink {
public:
	static constexpr int kSyncIntervalMs = 250;
	static constexpr int kMinRetryMs = 200;
	static constexpr int kMaxRetryMs = 30000;
	static constexpr int kRetryGrowth = 4;
	static constexpr int kStableMs = 10000;
	// How long flush() waits on a relay whose disk refuses before it asks it
	// to drop what it has not written, and for the relay's answer.
	static constexpr int kRefusedFlushWaitMs = 2000;
	static constexpr int kDropReplyTimeoutMs = 5000;

	explicit RelayLink(RelayLinkConfig config);
	~RelayLink(); // ends the sender thread (without BYE: see bye())
	RelayLink(const RelayLink &) = delete;
	RelayLink &operator=(const RelayLink &) = delete;

	// Connects and says HELLO, waiting at most timeout_ms: "" or why not
	// (one line). Then starts the sender thread, which keeps the connection
	// (or makes a new one). Call once, first.
	std::string open(int timeout_ms);

	// A trace of the session at `path` (relative: "ust", "kernel"); its id.
	uint32_t add_trace(const std::string &path);
	// Appends to the trace's metadata (whole TSDL blocks).
	void append_metadata(uint32_t trace, std::string_view text);
	// A stream file `name` of a trace; its id. file_size: the relay writes it
	// as a ring of files of that size, the newest file_count kept (0: all)
	// (--tracefile-size/--tracefile-count: STREAM_FILES); 0: one file.
	uint32_t add_stream(uint32_t trace, const std::string &name, uint64_t file_size = 0, uint64_t file_count = 0);
	// Queues a packet of `stream`: the parts are copied one after the other
	// (the packet's header and context, then its events; event_count of them,
	// or ctf::kEventsUnknown). Never waits for the network. full: not taken
	// (the queue holds its limit: offer it again later); dropped: larger than
	// the whole queue, or the link ended (counted).
	enum class Sent { queued, full, dropped };
	Sent send_packet(uint32_t stream, const control::relay::PacketIndex &index, std::span<const uint8_t> head,
	                 std::span<const uint8_t> events, uint64_t event_count = ctf::kEventsUnknown);
	// The stream has nothing new up to `timestamp` (live); dropped with the
	// packets when the queue is full.
	void beacon(uint32_t stream, uint64_t timestamp);
	// No more packets on the stream (sent after those queued).
	void close_stream(uint32_t stream);
	// Rotation: the trace goes on as a new trace at `path` (the next chunk's:
	// "CHUNK/ust"), given the whole metadata so far; its id. The old one is
	// superseded: its streams are closed as its buffers move (close_stream).
	// The new trace is declared to the relay with its first packet, or to be
	// archived (a chunk with no packet of it).
	uint32_t continue_trace(uint32_t trace, const std::string &path);
	// Undoes continue_trace (a rotation that failed after it): the trace
	// `successor` is dropped, its predecessor goes on, given the metadata
	// appended to the successor meanwhile; the predecessor's id. The
	// successor's packets not sent yet are dropped and counted (a program
	// that registered meanwhile); unless one was sent, the relay never
	// heard of it.
	uint32_t discontinue(uint32_t successor);
	// After what is queued, each trace of the trace chunk `chunk` (the first
	// component of its path, "BEGIN-ID"; "" for the session's first chunk,
	// whose paths have none) not archived yet is completed (given the
	// metadata its successor got since) and moved by the relay into the
	// session's archives/ARCHIVE/ (ARCHIVE_TRACE); it is not declared on
	// later connections. Call once its streams are closed.
	void archive_chunk(const std::string &chunk, const std::string &archive);
	// Streams whose first packet is queued (PacketSink::streams_started): a
	// packet queued after reading it goes after those streams' first packets.
	uint64_t streams_started() const { return streams_started_.load(std::memory_order_acquire); }

	// Waits, at most timeout_ms, until everything queued before the call is
	// sent and the relay has confirmed it (SYNC). "" or what is not
	// confirmed (one line: why, the packets still queued and their events,
	// decoded with their trace's metadata). When the relay's disk refuses
	// writes (for kRefusedFlushWaitMs of the wait, at most timeout_ms), it
	// asks the relay to drop what it has not written, drops what is queued,
	// and counts both in events (packets_not_written, packets_dropped); the
	// next connection waits for the next packet.
	std::string flush(int timeout_ms);
	// flush(), then BYE; the sender thread ends. What was not sent is
	// counted as dropped, with its events (decoded).
	std::string bye(int timeout_ms);

	struct Counts {
		uint64_t packets_sent = 0;      // on a connection
		uint64_t packets_confirmed = 0; // written by the relay, as its SYNC replies say
		uint64_t packets_dropped = 0;   // never sent: the queue was full, or at bye()
		uint64_t bytes_dropped = 0;     // theirs
		// Of those, the packets whose events were counted (the kernel's), and
		// their events: a user packet's are not counted.
		uint64_t packets_dropped_counted = 0, events_dropped = 0;
		uint64_t packets_unconfirmed = 0; // sent on a connection that broke before the relay confirmed them
		// Sent, then dropped by the relay when its disk still refused them
		// as the session ended (flush()), and their events; the packets whose
		// events could not be counted are in packets_not_written only.
		uint64_t packets_not_written = 0, packets_not_written_uncounted = 0, events_not_written = 0;
		uint64_t packets_queued = 0, bytes_queued = 0;
		uint64_t bytes_taken = 0; // of the packets queued so far, in all (what rotation by size counts)
		uint64_t connections = 0; // HELLOs accepted
		bool connected = false;
		std::string relay_path; // the relay's directory of the session on the current (last) connection
		std::string error;      // why the last connection ended, or the last attempt failed
		// While the relay says that its disk refuses the session's writes
		// (NOTICE write_failed, until write_resumed or a new connection): its text.
		std::string relay_write_error;
	};
	Counts counts() const;
	const RelayLinkConfig &config() const { return config_; }

private:
	struct Bytes {
		std::unique_ptr<uint8_t[]> data;
		size_t capacity = 0, size = 0;
	};
	enum class Kind : uint8_t { packet, beacon, close, archive };
	struct Item {
		Kind kind;
		uint32_t stream;                   // archive: the trace
		control::relay::PacketIndex index; // packet
		uint64_t timestamp;                // beacon
		uint64_t events;                   // packet: how many, or ctf::kEventsUnknown
		Bytes bytes;                       // packet
		std::string archive;               // archive: its name
	};
	struct TraceState {
		std::string path;
		std::string metadata;
		size_t metadata_sent = 0; // on the current connection
		bool declared = false;    // on the current connection
		bool archived = false;    // ARCHIVE_TRACE sent: never declared again
		bool archive_queued = false;
		uint32_t successor = 0;    // continue_trace's new trace
		size_t successor_from = 0; // of the successor's metadata, what this one lacks
		// continue_trace's: declared once a packet of it or its archive is
		// to be sent (needed); never if dropped (discontinue: archived).
		bool deferred = false, needed = false;
	};
	struct StreamState {
		uint32_t trace;
		std::string name;
		bool declared = false; // on the current connection
		bool started = false;  // a packet of it was queued
		uint64_t file_size = 0, file_count = 0;
	};

	// A packet sent on the current connection, not yet confirmed written.
	struct Unconfirmed {
		uint64_t ordinal; // among the packets sent on the connection, from 1
		uint32_t stream;
		uint64_t events; // or ctf::kEventsUnknown: then its bytes are kept, to decode if it is not written
		Bytes bytes;
	};

	using Lock = std::unique_lock<std::mutex>;
	void count_dropped(size_t bytes, uint64_t events); // with the lock held
	void drop_queued();                                // the same: everything queued, counted
	void recycle(Bytes bytes);                         // lock held: kept for reuse, or freed
	// Lock held: the packets sent on this connection up to `written` are
	// confirmed (given back); with `all`, the others are not written (counted).
	void confirm(uint64_t written, bool all);
	// The events of a packet of `stream`: given, or decoded with its trace's
	// metadata (the end's packets not written); ctf::kEventsUnknown if neither.
	uint64_t events_of(uint32_t stream, uint64_t events, const Bytes &bytes) const; // lock held
	static void *thread_main(void *arg);
	void run();
	// The sender thread's steps, called with the lock held, which each
	// releases while it talks to the relay; false when the connection broke
	// (disconnected() has been told).
	bool connect(Lock &lock, int timeout_ms);
	bool send_metadata(Lock &lock); // every trace's part not yet sent
	bool send_next(Lock &lock);     // the oldest item of the queue
	bool send_archive(Lock &lock, Item item);
	void queue_archive(uint32_t trace, const std::string &archive); // lock held
	bool sync(Lock &lock, uint64_t flush_generation);
	bool check_replies(Lock &lock, int timeout_ms);
	bool drop_unwritten(Lock &lock); // DROP_UNWRITTEN, then the connection ends
	// Lock held. reconnect: at once (with the backoff), else once a packet is queued.
	void disconnected(const std::string &why, bool reconnect = true);
	static size_t cost(const Item &item); // what it counts against queue_bytes
	void log(const std::string &line) const;

	RelayLinkConfig config_;
	control::relay::RelayConnection conn_; // the sender thread's (and open()'s, before it starts)

	mutable std::mutex mutex_;
	std::condition_variable work_;     // the sender thread waits on it
	std::condition_variable progress_; // flush() waits on it
	std::deque<Item> queue_;
	std::vector<Bytes> spare_; // packet buffers to reuse
	std::vector<TraceState> traces_;
	std::vector<StreamState> streams_;
	std::atomic<uint64_t> streams_started_{0};
	Counts counts_;
	bool metadata_pending_ = false;
	bool stop_ = false, say_bye_ = false;
	bool wait_for_packets_ = false; // not connected after DROP_UNWRITTEN: connect for the next packet
	// flush() asks for DROP_UNWRITTEN; done (answered or failed) by the sender thread.
	uint64_t drops_asked_ = 0, drops_done_ = 0;
	bool last_drop_answered_ = false;
	std::deque<Unconfirmed> unconfirmed_;
	size_t unconfirmed_bytes_ = 0; // their bytes kept, counted against queue_bytes
	uint64_t sent_here_ = 0;       // packets sent on the current connection
	// flush(): each call is a generation; a SYNC sent once the queue is
	// empty carries the newest one, and its reply confirms it.
	uint64_t flush_asked_ = 0, flush_synced_ = 0, flush_confirmed_ = 0;
	// The SYNCs of this connection not answered yet.
	struct PendingSync {
		uint64_t token;
		uint64_t packets_sent; // counts_.packets_sent when it was sent
		uint64_t flush_generation;
	};
	std::deque<PendingSync> syncs_;
	// SYNC_REPLYs read by the sender thread (in check_replies, or while a send
	// waited on the relay), applied by check_replies; the sender thread's alone.
	std::vector<control::relay::SyncReply> replies_;
	static constexpr size_t kMaxPendingSyncs = 4;
	uint64_t next_token_ = 0;
	uint64_t sent_at_last_sync_ = 0;
	std::chrono::steady_clock::time_point last_sync_{}, last_poll_{};

	pthread_t thread_{};
	bool thread_running_ = false;
};

} // namespace tracery::consumer
