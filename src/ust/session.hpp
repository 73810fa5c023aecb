// A tracing session as the traced process sees it: one channel (shared-memory
// ring buffer) that records the events matching the session's patterns, with
// the session's context fields. The probe it attaches to each event is the
// hot path: run the event's filters (if any), reserve a slot, write header,
// context and fields in place, commit.
#pragma once

#include "clock/trace_clock.hpp"
#include "event/context.hpp"
#include "event/payload.hpp"
#include "filter/filter.hpp"
#include "ringbuf/ring_buffer.hpp"
#include "ust/blocking.hpp"
#include "ust/payload_writer.hpp"
#include "ust/registry.hpp"
#include "ust/user_context.hpp"

#include <tracery/internal/probe.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tracery::ust {

// Gives each event its id in the trace (and makes sure the trace's metadata
// describes it). Called once per event per session, never on the hot path.
class EventCatalog {
public:
	virtual ~EventCatalog() = default;
	// Returns the event's id, or a negative value if it cannot be traced.
	virtual int64_t id_for(const tracery_event_desc &desc) = 0;
	// The event's filters, compiled for it: the event is recorded when any
	// of them accepts it, or always when there are none. Nothing when the
	// event must not be recorded (the catalog says why to whom it concerns).
	virtual std::optional<std::vector<filter::Program>> filters_for(const tracery_event_desc &) { return {{}}; }
	// A filter of the event failed verification: the event is not recorded.
	virtual void filter_refused(const tracery_event_desc &desc, const std::string &why);
};

// Event name patterns as users write them: "provider:name", with '*'
// wildcards anywhere ("app:*", "*"). Comma-separated lists are split by the
// caller.
bool pattern_matches(const std::string &pattern, const tracery_event_desc &desc);

class Session final : public RegistryListener {
public:
	// ticks: how records are timestamped, in the unit of the trace the
	// channel belongs to (clock/trace_clock.hpp).
	Session(std::unique_ptr<ringbuf::Channel> channel, event::ContextOptions context, clock::TickSource ticks,
	        std::vector<std::string> patterns, EventCatalog &catalog);
	~Session() override;
	Session(const Session &) = delete;
	Session &operator=(const Session &) = delete;

	// Attaches the probe to every registered event that matches, and to
	// events registered later; stop() detaches them all and waits until no
	// thread still writes into the channel.
	void start();
	void stop();

	ringbuf::Channel &channel() { return *channel_; }
	// A blocking channel (enable-channel --blocking-timeout): how long an
	// emitter that finds no space waits for it (blocking.hpp).
	BlockingPolicy &blocking() { return blocking_; }
	// After fork: the child records into its own channel. Only valid while
	// the calling thread is the only one (the fork child handler).
	std::unique_ptr<ringbuf::Channel> replace_channel_after_fork(std::unique_ptr<ringbuf::Channel> next);

	void on_event_registered(tracery_event_desc *desc) override;
	void on_event_unregistered(tracery_event_desc *desc) override;

private:
	// One event bound to the session. record() reads its first cache line
	// and, for a fixed-size event, nothing else of it: the channel and the
	// session's settings are copied here, so that an event reaches its buffer
	// without a detour through the Session (replace_channel_after_fork()
	// updates the copies), and the layout begins with its fixed size.
	struct alignas(64) Binding {
		ringbuf::Channel *channel;
		uint32_t id;
		uint32_t context_size;
		uint32_t num_cpus;
		clock::TickSource ticks;
		PayloadWriter writer; // the layout's specialised writer, or nullptr (payload_writer.hpp)
		Session *session;
		event::EventLayout layout;
		std::vector<std::unique_ptr<filter::Filter>> filters;
		bool filters_use_context = false;
		const filter::Filter *only_filter = nullptr; // the common case: one filter, no context
		// The probe attached to the event: record itself when there is no
		// filter (one call less per event), else probe.
		tracery_probe_fn probe_fn() const { return filters.empty() ? &Session::record : &Session::probe; }
	};
	static void probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args);
	static bool filters_accept(const Binding &b, const tracery_arg *args);
	[[gnu::noinline]] static void record(void *priv, const tracery_event_desc *desc, const tracery_arg *args);
	void attach(tracery_event_desc *desc);
	bool records_ip() const;

	std::unique_ptr<ringbuf::Channel> channel_;
	event::ContextOptions context_;
	UserContextPlan user_contexts_; // context_.more, entry by entry
	clock::TickSource ticks_;
	uint32_t context_size_;
	uint32_t user_contexts_offset_; // where user_contexts_ begin in the context
	uint32_t num_cpus_;
	std::vector<std::string> patterns_;
	EventCatalog &catalog_;
	BlockingPolicy blocking_;
	std::mutex mutex_;
	bool started_ = false;
	std::map<tracery_event_desc *, std::unique_ptr<Binding>> bindings_;
};

} // namespace tracery::ust
