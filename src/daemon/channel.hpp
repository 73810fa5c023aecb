// A channel of a tracing session as the daemon keeps it: its options, the
// event patterns enabled and disabled in it, the ids it gave to events (one
// id space per channel = CTF stream class), and its buffers: one ring buffer
// per user (per-UID, shared by all that user's programs) or per program
// (per-PID), each with the consumer that writes it to the trace.
#pragma once

#include "daemon/quota.hpp"

#include "base/sizes.hpp"
#include "consumer/channel_consumer.hpp"
#include "consumer/file_sink.hpp"
#include "control/messages.hpp"
#include "event/context.hpp"
#include "ringbuf/ring_buffer.hpp"

#include <sys/types.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tracery::daemon {

struct ChannelSpec {
	std::string name = "channel0";
	uint32_t subbuf_size = base::kDefaultSubbufSize;
	uint32_t num_subbuf = base::kDefaultNumSubbuf;
	ringbuf::Mode mode = ringbuf::Mode::discard;
	bool per_pid = false;
	event::ContextOptions context{};
	int64_t blocking_timeout_us = 0;    // --blocking-timeout: 0 never wait, -1 without limit (discard mode only)
	consumer::TracefileLimit tracefile; // --tracefile-size/--tracefile-count (local files)
	// --switch-timer and --monitor-timer (channel_monitor.cpp), in
	// microseconds; 0: none.
	uint64_t switch_timer_us = 0;
	uint64_t monitor_timer_us = control::kDefaultMonitorTimerUs;
};

// What the emitters of a blocking channel waited for space
// (ringbuf::Channel::waits): how many records waited, for how long in all.
struct Waits {
	uint64_t count = 0;
	uint64_t ns = 0;
};

// The ring buffers of a channel of these options (consumer/ring_config.hpp):
// what the ring buffer and the buffer quota check before one is made.
ringbuf::Config ring_config(const ChannelSpec &spec);

// What refused writes cost a trace, as status and stop show it; nullopt when
// no write was refused.
std::optional<control::WriteLoss> write_loss_of(const consumer::WriteLosses &w);

// One shared-memory ring buffer and the consumer writing it (none in snapshot
// sessions: their buffers are only copied out by `snapshot record`).
struct Buffer {
	BufferQuota::Charge charge;  // given back last, once the mapping is gone
	std::string owner;           // whose programs write into it: "uid1000", "pid4242"
	consumer::StreamNames names; // of its streams (none in snapshot sessions)
	std::unique_ptr<ringbuf::Channel> ring;
	std::unique_ptr<consumer::ChannelConsumer> consumer;
	bool producer_died = false; // a program writing into it ended: recover before the last drain
	// Events lost, as its programs counted them, and those of sub-buffers
	// its consumer could not write (consumer::WriteLosses); 0 once the ring
	// buffer is quarantined (ringbuf::Channel::fault): its counters are not
	// believed then, and the buffer is reported apart.
	uint64_t lost() const;
	// What refused writes cost its trace (none without a consumer).
	consumer::WriteLosses write_losses() const;
	// What its emitters waited (none once quarantined, as lost()).
	Waits waits() const;
	// The bytes its consumer released (0 once quarantined, as lost()).
	uint64_t consumed_bytes() const;
};

class Channel {
public:
	Channel(uint32_t index, ChannelSpec spec) : index_(index), spec_(std::move(spec)) {}

	uint32_t index() const { return index_; }
	const ChannelSpec &spec() const { return spec_; }
	ChannelSpec &spec() { return spec_; }

	// Event rules: "provider:name" patterns with '*' wildcards, each with a
	// filter expression or none (""). Enabling a pattern takes it off the
	// disabled list and adds the rule (one per pattern and filter);
	// disabling removes every rule of the pattern if there is one, else
	// excludes the events it matches.
	// A rule's exclusions (enable-event --exclude) are names or patterns of
	// events its pattern matches that it does not enable.
	struct Rule {
		std::string pattern;
		std::string filter;
		std::vector<std::string> exclude;
		bool operator==(const Rule &) const = default;
		bool matches(const std::string &full_name) const;
	};
	void enable(const std::vector<std::string> &patterns, const std::string &filter = "",
	            const std::vector<std::string> &exclude = {});
	void disable(const std::vector<std::string> &patterns);
	bool enabled(const std::string &full_name) const;
	// The filters of an enabled event: it is recorded when any accepts it;
	// none when a rule without filter enables it.
	std::vector<std::string> filters_of(const std::string &full_name) const;
	const std::vector<Rule> &rules() const { return enabled_; }
	const std::vector<std::string> &disabled_patterns() const { return disabled_; }

	// The id of an event version (schema key) in this channel, given on
	// first use (the next free one).
	uint32_t id_for(const std::string &key);
	const std::map<std::string, uint32_t> &ids() const { return ids_; }

	// Its buffers (session_channels.hpp says when they are made and
	// finished), by key: whose programs write into it ("uid1000",
	// "pid4242"), or, once set aside, a key no program's buffer takes. Never
	// an empty slot: a buffer goes in once made.
	using Buffers = std::map<std::string, std::unique_ptr<Buffer>>;
	const Buffers &buffers() const { return buffers_; }
	// nullptr if there is none of that key.
	Buffer *buffer(const std::string &key) const;
	void add_buffer(const std::string &key, std::unique_ptr<Buffer> b);
	// Moves a buffer to `new_key`: kept, but no program's any more.
	void set_aside(const std::string &key, const std::string &new_key);
	// Takes a buffer out (nullptr if there is none of that key).
	std::unique_ptr<Buffer> take_buffer(const std::string &key);
	// Takes every buffer out.
	std::vector<std::unique_ptr<Buffer>> take_buffers();
	// A buffer taken out was finished: its lost events, and its fault if it
	// was quarantined, stay counted here.
	void note_finished(const Buffer &b);

	// disable-channel: its events are not recorded (no program is given
	// their ids) until enable-channel enables it again.
	bool disabled() const { return off_; }
	void set_disabled(bool disabled) { off_ = disabled; }

	// The monitor's timers (channel_monitor.cpp): when each is due next
	// (CLOCK_MONOTONIC ns; 0: at the next look).
	uint64_t next_switch_ns = 0, next_monitor_ns = 0;

	// Events lost in its buffers, live or finished.
	uint64_t lost() const;
	// The bytes its consumers released from its buffers, live or finished
	// (ringbuf::Channel::consumed_bytes): what session-consumed-size counts.
	uint64_t consumed_bytes() const;
	// What emitters waited for space in its buffers, live or finished.
	Waits waits() const;
	// What refused writes cost its buffers, live or finished; nullopt when
	// no write was refused.
	std::optional<control::WriteLoss> write_loss() const;
	// The buffers found inconsistent (their programs wrote over them), live
	// or finished (buffer "uid1001", fault "cpu 0: ..."), at most
	// kQuarantinedKept of the finished ones.
	static constexpr size_t kQuarantinedKept = 16;
	std::vector<control::Quarantined> quarantined() const;

	// The ring buffers of this channel: their config, and what each one takes.
	ringbuf::Config ring_config() const { return daemon::ring_config(spec_); }
	uint64_t buffer_bytes() const { return ringbuf::Channel::mapping_size_for(ring_config()); }
	// A new ring buffer with this channel's options (owner-only memfd).
	// Throws std::runtime_error or std::system_error.
	std::unique_ptr<ringbuf::Channel> make_ring() const;

	// The programs this channel does not trace since the session last
	// started (over their user's buffer quota, or their buffer could not be
	// made): how many, and the newest kNotTracedKept of them.
	struct NotTraced {
		pid_t pid;
		uid_t uid;
		std::string reason;
	};
	static constexpr size_t kNotTracedKept = 16;
	void note_not_traced(NotTraced n);
	void clear_not_traced();
	const std::deque<NotTraced> &not_traced() const { return not_traced_; }
	uint64_t not_traced_total() const { return not_traced_total_; }

private:
	uint32_t index_;
	ChannelSpec spec_;
	std::vector<Rule> enabled_;
	std::vector<std::string> disabled_;
	std::map<std::string, uint32_t> ids_;
	uint32_t next_id_ = 0;
	Buffers buffers_;
	bool off_ = false;                 // disable-channel
	uint64_t lost_done_ = 0;           // events lost in buffers already finished
	uint64_t consumed_done_ = 0;       // bytes released from them
	Waits waits_done_;                 // what their emitters waited
	consumer::WriteLosses write_done_; // and what refused writes cost them
	std::deque<NotTraced> not_traced_;
	uint64_t not_traced_total_ = 0;
	std::deque<std::pair<std::string, std::string>> quarantined_done_; // (owner, fault) of finished buffers
};

} // namespace tracery::daemon
