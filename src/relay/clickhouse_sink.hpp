// relay/clickhouse_sink.hpp — `tracery-relayd --clickhouse URL`: each
// session's events inserted into ClickHouse as its packets come, besides
// the disk copy, in the tables of `tracery export --format clickhouse` and
// by the same code (analysis/sql: ClickHouseTables, ClickHouseRows, and
// RowWalker for each event's cpu, pid and tid): events, lost and, at the
// session's end, streams; host and session are the sender's HELLO's, load a
// new id per session (logged). The derived tables need a session's events
// in time order across its streams: `tracery export` of the relay's copy
// makes them.
//
// The writer threads hand each frame written to one bounded queue (a feed
// per session, session_feed.hpp) and go on: a packet that does not fit is
// dropped from the sink (never from the disk) and counted. One thread
// decodes the packets (ctf's reader, the session's metadata as it came) and
// sends each session's rows in batches (batch_bytes, or flush_every after
// its first row waiting; all sessions' rows waiting stay under 8 batches).
// A batch the server refuses or cannot take is counted, and the log says
// when inserts start failing and when they work again; each session's end,
// and the sink's, log what was inserted, refused, dropped and not decoded.
#pragma once

#include "base/clickhouse_client.hpp"
#include "relay/session_feed.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tracery::relay {

struct ClickHouseSinkOptions {
	std::string url;          // http://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE
	std::string table_prefix; // before each table's name
	// Packets given and not yet decoded, all sessions: what does not fit is dropped.
	size_t queue_bytes = 64u << 20;
	size_t batch_bytes = 4u << 20; // a session's rows sent at this size
	std::chrono::milliseconds flush_every{1000};
	clickhouse::Timeouts timeouts{.connect_ms = 5000, .stall_s = 30};
};

// What the sink did, all sessions.
struct ClickHouseSinkCounts {
	uint64_t packets = 0;                            // given by the sessions' writers
	uint64_t packets_dropped = 0, bytes_dropped = 0; // the queue full
	uint64_t packets_undecoded = 0;                  // damaged, or without metadata
	uint64_t events = 0;                             // decoded
	uint64_t events_inserted = 0, events_refused = 0;
	uint64_t rows_inserted = 0, rows_refused = 0; // every table
};

class ClickHouseSink {
public:
	// Reaches the server and makes the tables ready. Throws
	// clickhouse::Error, std::invalid_argument (the URL, the prefix, a table
	// with other columns): the relay does not start.
	ClickHouseSink(ClickHouseSinkOptions options, std::function<void(const std::string &)> log);
	// After every feed is gone: what is queued is decoded and sent, then the
	// totals are logged.
	~ClickHouseSink();
	ClickHouseSink(const ClickHouseSink &) = delete;
	ClickHouseSink &operator=(const ClickHouseSink &) = delete;

	// A session's feed (ServerOptions::feed); relative_dir names it in the log.
	std::unique_ptr<SessionFeed> open(const control::relay::Hello &hello, const std::string &relative_dir);
	ClickHouseSinkCounts counts() const;

private:
	struct Impl;
	class Feed;
	std::unique_ptr<Impl> impl_;
};

// The counts as the log says them.
std::string describe(const ClickHouseSinkCounts &c);

} // namespace tracery::relay
