// The daemon's triggers as a traced program evaluates them: each rule
// (control::ProgramTrigger) is attached, as a probe, to the registered events
// its pattern matches, its filter compiled for each (the same bytecode,
// verifier, JIT and interpreter as a session's filters). An event it accepts
// is not recorded: the probe copies the captured fields into a slot of a
// fixed queue, without a lock or an allocation (so a signal handler may emit
// too), and wakes the control thread, which sends each as a
// control::Notification. Bounded: at most kPerSecond notifications a second
// and kSlots waiting; the others are dropped and counted per trigger, and the
// counts reach the daemon with the trigger's next notification (or alone).
#pragma once

#include "ust/registry.hpp"

#include "base/fd.hpp"
#include "control/trigger_messages.hpp"
#include "filter/filter.hpp"

#include <tracery/internal/event_desc.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace tracery::ust {

class TriggerRules final : public RegistryListener {
public:
	static constexpr size_t kSlots = 128;
	static constexpr uint32_t kPerSecond = 1000;
	static constexpr size_t kMaxCaptures = 16;
	static constexpr size_t kTextBytes = 1024; // a slot's room for strings and array elements

	TriggerRules();
	~TriggerRules() override;
	TriggerRules(const TriggerRules &) = delete;
	TriggerRules &operator=(const TriggerRules &) = delete;

	// Replaces the rules (the daemon sends all of them each time); none:
	// nothing is evaluated. From the control thread only (or a fork child alone).
	void set(const control::Triggers &rules);
	// In a fork child, alone: its own wake-up descriptor, and none of the
	// parent's notifications (its rules are set({}) with its sessions').
	void after_fork_child();
	// Readable when notifications wait: the control thread then calls drain().
	int wake_fd() const { return wake_.get(); }
	// Sends what waits (the notifications, then the drop counts no
	// notification carried); from the control thread.
	void drain(const std::function<void(const control::Notification &)> &send);

	void on_event_registered(tracery_event_desc *desc) override;
	void on_event_unregistered(tracery_event_desc *desc) override;

private:
	struct Rule {
		control::ProgramTrigger trigger;
		std::atomic<uint64_t> dropped{0};
	};
	struct Binding {
		TriggerRules *rules;
		Rule *rule;
		std::unique_ptr<filter::Filter> filter; // null: every event
		std::vector<int> captures;              // field index per capture, -1: the event has none
	};
	struct Value {
		enum Kind : uint8_t {
			unavailable,
			signed_int,
			unsigned_int,
			floating,
			text,
			signed_array,
			unsigned_array
		};
		Kind kind;
		uint16_t offset, length; // text and arrays: where in the slot's text
		union {
			int64_t i;
			uint64_t u;
			double d;
		};
	};
	struct Slot {
		std::atomic<uint32_t> state{0}; // kFree, kWriting, kReady
		uint64_t seq;
		uint64_t trigger;
		uint64_t time_ns;
		char event[256];
		uint32_t count;
		Value values[kMaxCaptures];
		alignas(8) char text[kTextBytes];
	};

	static void probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args);
	void attach(tracery_event_desc *desc, Rule &rule);
	void detach_all();
	bool take_token();
	void wake();
	// A notification of this rule's dropped (rate or queue): counted.
	void dropped(Rule &rule);
	static void capture(Slot &slot, const tracery_event_desc &desc, const Binding &b, const tracery_arg *args);
	static control::Notification notification_of(const Slot &slot);

	bool listening_ = false; // the control thread's
	std::mutex mutex_;       // what follows, but the atomics
	std::vector<std::unique_ptr<Rule>> rules_;
	std::map<uint64_t, uint64_t> unsent_drops_; // by trigger: counted, not yet sent
	std::multimap<tracery_event_desc *, std::unique_ptr<Binding>> bindings_;
	std::unique_ptr<Slot[]> slots_; // made with the first rules, never freed (probes may run late)
	std::atomic<uint64_t> next_seq_{0};
	std::atomic<uint64_t> second_{0}; // the second the counter counts
	std::atomic<uint32_t> in_second_{0};
	std::atomic<bool> drops_told_{false}; // the control thread was woken for drops since its last drain
	base::Fd wake_;                       // eventfd
};

} // namespace tracery::ust
