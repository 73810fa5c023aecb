// test_records.hpp — test-only record format for the ring buffer tests. It mimics our CTF event headers:
// compact = 4 bytes (5-bit id < 31, 27 low bits of the timestamp), extended = 13 bytes (0xFFFFFFFF escape,
// 64-bit timestamp, 8-bit id). The payload carries producer id, sequence number, the full timestamp, filler bytes
// derived from (producer, seq) and a checksum of the whole record, so a reader detects torn, misplaced or
// mis-timestamped records without knowing anything else.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "ringbuf/ring_buffer.hpp"

namespace tracery::ringbuf::testing {

inline constexpr uint32_t kCompactHs = 4;
inline constexpr uint32_t kExtendedHs = 13;
inline constexpr uint32_t kTsBits = 27;
inline constexpr uint32_t kPayloadFixed = 4 + 4 + 8 + 8 + 4; // len, producer, seq, ts, ..., checksum

inline Config ctf_config(Mode mode, uint32_t num_cpus, uint32_t num_subbuf, uint32_t subbuf_size)
{
	Config c;
	c.num_cpus = num_cpus;
	c.num_subbuf = num_subbuf;
	c.subbuf_size = subbuf_size;
	c.mode = mode;
	c.compact_header_size = kCompactHs;
	c.extended_header_size = kExtendedHs;
	c.compact_ts_bits = kTsBits;
	return c;
}

// Sleeps `ns` (< 1 s) against an absolute deadline, so that signals interrupting the sleep do not restart it: lets
// a consumer catch up in tests whose producers are signalled continuously.
inline void sleep_through_signals(long ns)
{
	timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += ns;
	if (deadline.tv_nsec >= 1'000'000'000) {
		deadline.tv_sec += 1;
		deadline.tv_nsec -= 1'000'000'000;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr) == EINTR) {
	}
}

// Installs handler for sig and blocks sig in the calling thread (threads it starts inherit the block; producers
// unblock it for themselves). The previous action and mask go to *old_action and *old_mask. False if sigaction
// fails.
inline bool install_producer_signal(int sig, void (*handler)(int), struct sigaction *old_action, sigset_t *old_mask)
{
	struct sigaction sa {};
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, old_action) != 0)
		return false;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_BLOCK, &set, old_mask);
	return true;
}

inline uint8_t filler_byte(uint32_t producer, uint64_t seq, uint32_t i)
{
	return static_cast<uint8_t>((producer * 131u) ^ (seq * 7u) ^ (i * 29u) ^ (i >> 3));
}

inline uint32_t checksum(const uint8_t *p, std::size_t n)
{ // FNV-1a
	uint32_t h = 2166136261u;
	for (std::size_t i = 0; i < n; ++i)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

// Writes header + payload into a reservation made with payload_size = kPayloadFixed + filler_len.
// Byte by byte on purpose (volatile): it widens the window between reserve and commit for the concurrency tests.
// Async-signal-safe.
inline void write_record(const Channel::Reservation &r, uint32_t producer, uint64_t seq, uint32_t filler_len)
{
	uint8_t *p = r.slot;
	const uint32_t id = producer % 31;
	if (r.header_size == kCompactHs) {
		const uint32_t h = (id << kTsBits) | static_cast<uint32_t>(r.timestamp & ((1u << kTsBits) - 1));
		std::memcpy(p, &h, 4);
	} else {
		const uint32_t esc = 0xFFFFFFFFu;
		std::memcpy(p, &esc, 4);
		std::memcpy(p + 4, &r.timestamp, 8);
		p[12] = static_cast<uint8_t>(id);
	}
	uint8_t *q = p + r.header_size;
	const uint32_t len = kPayloadFixed + filler_len;
	std::memcpy(q, &len, 4);
	std::memcpy(q + 4, &producer, 4);
	std::memcpy(q + 8, &seq, 8);
	std::memcpy(q + 16, &r.timestamp, 8);
	volatile uint8_t *f = q + 24;
	for (uint32_t i = 0; i < filler_len; ++i)
		f[i] = filler_byte(producer, seq, i);
	const uint32_t sum = checksum(p, r.header_size + 24 + filler_len);
	std::memcpy(q + 24 + filler_len, &sum, 4);
}

struct ParsedRecord {
	uint32_t producer;
	uint64_t seq;
	uint64_t ts;
	uint32_t header_size;
	uint32_t size;
	uint32_t pos; // offset in the sub-buffer
};

// Parses every record of a sub-buffer and checks it (header/timestamp consistency, order, bounds, checksum).
// Calls fn(const ParsedRecord&) per record. Returns "" or a description of the first problem.
template <class Fn>
std::string parse_subbuf(const Channel::SubbufView &v, Fn &&fn)
{
	uint64_t prev = v.timestamp_begin;
	uint32_t pos = 0;
	bool first = true;
	auto err = [&](const std::string &what) {
		return "cpu " + std::to_string(v.cpu) + " subbuf " + std::to_string(v.seq) + " pos " +
		       std::to_string(pos) + ": " + what;
	};
	if (v.timestamp_end < v.timestamp_begin)
		return err("timestamp_end < timestamp_begin");
	while (pos < v.content_size) {
		if (v.content_size - pos < kCompactHs + kPayloadFixed)
			return err("truncated record");
		const uint8_t *p = v.data + pos;
		uint32_t h;
		std::memcpy(&h, p, 4);
		ParsedRecord rec{};
		uint32_t id;
		if (h == 0xFFFFFFFFu) {
			rec.header_size = kExtendedHs;
			std::memcpy(&rec.ts, p + 4, 8);
			id = p[12];
		} else {
			rec.header_size = kCompactHs;
			id = h >> kTsBits;
			const uint64_t mask = (uint64_t{1} << kTsBits) - 1;
			uint64_t ts = (prev & ~mask) | (h & mask);
			if (ts < prev)
				ts += mask + 1;
			rec.ts = ts;
		}
		if (id > 30)
			return err("bad id " + std::to_string(id));
		const uint8_t *q = p + rec.header_size;
		uint32_t len;
		std::memcpy(&len, q, 4);
		if (len < kPayloadFixed || pos + rec.header_size + len > v.content_size)
			return err("bad length " + std::to_string(len));
		uint64_t payload_ts;
		std::memcpy(&rec.producer, q + 4, 4);
		std::memcpy(&rec.seq, q + 8, 8);
		std::memcpy(&payload_ts, q + 16, 8);
		const uint32_t filler = len - kPayloadFixed;
		uint32_t sum;
		std::memcpy(&sum, q + 24 + filler, 4);
		if (sum != checksum(p, rec.header_size + 24 + filler))
			return err("checksum mismatch (torn record)");
		if (rec.producer % 31 != id)
			return err("id does not match producer");
		if (payload_ts != rec.ts)
			return err(
				"decoded timestamp " + std::to_string(rec.ts) + " != written " +
				std::to_string(payload_ts) +
				(rec.header_size == kCompactHs ? " (compact header used for a too large delta)" : ""));
		if (rec.ts < prev)
			return err("timestamp went backwards");
		if (first && rec.ts != v.timestamp_begin)
			return err("first record timestamp != timestamp_begin");
		if (rec.ts > v.timestamp_end)
			return err("record timestamp > timestamp_end");
		for (uint32_t i = 0; i < filler; ++i)
			if (q[24 + i] != filler_byte(rec.producer, rec.seq, i))
				return err("bad filler byte");
		rec.size = rec.header_size + len;
		rec.pos = pos;
		fn(static_cast<const ParsedRecord &>(rec));
		prev = rec.ts;
		pos += rec.size;
		first = false;
	}
	return {};
}

} // namespace tracery::ringbuf::testing
