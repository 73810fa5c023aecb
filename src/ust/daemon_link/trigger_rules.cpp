// The daemon's triggers evaluated in the program: see trigger_rules.hpp.
#include "ust/daemon_link/trigger_rules.hpp"

#include "ust/session.hpp"
#include "ust/thread_context.hpp"

#include "base/diagnostics.hpp"
#include "event/payload.hpp"
#include "filter/compiler.hpp"

#include <tracery/internal/probe.h>

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace tracery::ust {

namespace {

enum : uint32_t { kFree = 0, kWriting = 1, kReady = 2 };

uint64_t clock_ns(clockid_t clock)
{
	timespec ts;
	clock_gettime(clock, &ts);
	return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
}

bool is_signed(unsigned type)
{
	return type == TRACERY_TYPE_S8 || type == TRACERY_TYPE_S16 || type == TRACERY_TYPE_S32 ||
	       type == TRACERY_TYPE_S64;
}

// An integer of `type` at p (native order, as emitters pass them).
int64_t load_signed(const void *p, unsigned type)
{
	switch (type) {
	case TRACERY_TYPE_S8:
		return *static_cast<const int8_t *>(p);
	case TRACERY_TYPE_S16:
		return *static_cast<const int16_t *>(p);
	case TRACERY_TYPE_S32:
		return *static_cast<const int32_t *>(p);
	default:
		return *static_cast<const int64_t *>(p);
	}
}
uint64_t load_unsigned(const void *p, unsigned type)
{
	switch (type) {
	case TRACERY_TYPE_U8:
	case TRACERY_TYPE_BOOL:
		return *static_cast<const uint8_t *>(p);
	case TRACERY_TYPE_U16:
		return *static_cast<const uint16_t *>(p);
	case TRACERY_TYPE_U32:
		return *static_cast<const uint32_t *>(p);
	default:
		return *static_cast<const uint64_t *>(p);
	}
}

// "provider:name", cut to fit (no snprintf: a signal handler may emit).
void copy_name(char *out, size_t size, const tracery_event_desc &desc)
{
	size_t n = 0;
	for (const char *part : {desc.provider, ":", desc.name})
		for (const char *c = part; *c && n + 1 < size; c++)
			out[n++] = *c;
	out[n] = 0;
}

} // namespace

TriggerRules::TriggerRules() : wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

TriggerRules::~TriggerRules() { set({}); }

void TriggerRules::after_fork_child()
{
	wake_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (slots_)
		for (size_t i = 0; i < kSlots; i++)
			slots_[i].state.store(kFree, std::memory_order_relaxed);
}

void TriggerRules::detach_all()
{
	std::multimap<tracery_event_desc *, std::unique_ptr<Binding>> old;
	old.swap(bindings_);
	for (auto &[desc, b] : old)
		tracery_probe_detach(desc, &TriggerRules::probe, b.get());
	if (!old.empty())
		tracery_probe_synchronize(); // no probe runs with the bindings or rules any more
	for (const auto &rule : rules_)
		if (const uint64_t n = rule->dropped.exchange(0))
			unsent_drops_[rule->trigger.id] += n;
}

void TriggerRules::set(const control::Triggers &rules)
{
	// Not listening from here on: remove_listener() returns once no call into this one runs.
	if (std::exchange(listening_, false))
		remove_listener(this);
	{
		std::lock_guard lock(mutex_);
		detach_all();
		rules_.clear();
		for (const auto &t : rules.triggers) {
			auto rule = std::make_unique<Rule>();
			rule->trigger = t;
			rules_.push_back(std::move(rule));
		}
		if (rules_.empty())
			return;
		if (!slots_)
			slots_ = std::make_unique<Slot[]>(kSlots);
	}
	listening_ = true;
	add_listener(this); // replays the events registered so far
}

void TriggerRules::on_event_registered(tracery_event_desc *desc)
{
	std::lock_guard lock(mutex_);
	for (auto &rule : rules_)
		if (pattern_matches(rule->trigger.pattern, *desc))
			attach(desc, *rule);
}

void TriggerRules::on_event_unregistered(tracery_event_desc *desc)
{
	std::vector<std::unique_ptr<Binding>> gone;
	{
		std::lock_guard lock(mutex_);
		auto [first, last] = bindings_.equal_range(desc);
		for (auto it = first; it != last; ++it)
			gone.push_back(std::move(it->second));
		bindings_.erase(first, last);
	}
	for (auto &b : gone)
		tracery_probe_detach(desc, &TriggerRules::probe, b.get()); // waits for a grace period
}

void TriggerRules::attach(tracery_event_desc *desc, Rule &rule)
{
	if (event::event_desc_error(*desc))
		return; // not traceable: the sessions say why
	auto b = std::make_unique<Binding>();
	b->rules = this;
	b->rule = &rule;
	const control::ProgramTrigger &t = rule.trigger;
	if (t.filter) {
		filter::Error e;
		auto compiled = filter::compile_filter(*t.filter, *desc, &e);
		std::string why;
		if (compiled)
			b->filter = filter::Filter::load(compiled->program, *desc, filter::default_engine(), &why);
		else
			why = filter::render_error(*t.filter, e);
		if (!b->filter) {
			base::diagnostic("trigger rule for %s does not apply to event %s:%s: %s", t.pattern.c_str(),
			                 desc->provider, desc->name, why.c_str());
			return;
		}
	}
	for (const auto &name : t.captures) {
		int index = -1;
		for (uint32_t i = 0; i < desc->nr_fields; i++)
			if (name == desc->fields[i].name)
				index = static_cast<int>(i);
		b->captures.push_back(index);
	}
	if (tracery_probe_attach(desc, &TriggerRules::probe, b.get()) == 0)
		bindings_.emplace(desc, std::move(b));
}

bool TriggerRules::take_token()
{
	const uint64_t second = clock_ns(CLOCK_MONOTONIC_COARSE) / 1000000000;
	uint64_t seen = second_.load(std::memory_order_relaxed);
	if (seen != second && second_.compare_exchange_strong(seen, second, std::memory_order_relaxed))
		in_second_.store(0, std::memory_order_relaxed);
	return in_second_.fetch_add(1, std::memory_order_relaxed) < kPerSecond;
}

void TriggerRules::probe(void *priv, const tracery_event_desc *desc, const tracery_arg *args)
{
	const Binding &b = *static_cast<const Binding *>(priv);
	if (b.filter) {
		filter::Context ctx;
		const filter::Context *context = nullptr;
		if (b.filter->uses_context()) {
			const ThreadContext &tc = thread_context();
			ctx = {process_vpid(), tc.vtid, current_cpu(), tc.procname,
			       static_cast<uint32_t>(strlen(tc.procname))};
			context = &ctx;
		}
		if (!b.filter->accepts(args, context))
			return;
	}
	TriggerRules &self = *b.rules;
	if (!self.take_token()) {
		self.dropped(*b.rule);
		return;
	}
	const uint64_t seq = self.next_seq_.fetch_add(1, std::memory_order_relaxed);
	Slot &slot = self.slots_[seq % kSlots];
	uint32_t free = kFree;
	if (!slot.state.compare_exchange_strong(free, kWriting, std::memory_order_acquire)) {
		self.dropped(*b.rule); // the queue is full
		return;
	}
	slot.seq = seq;
	slot.trigger = b.rule->trigger.id;
	slot.time_ns = clock_ns(CLOCK_REALTIME);
	copy_name(slot.event, sizeof slot.event, *desc);
	capture(slot, *desc, b, args);
	slot.state.store(kReady, std::memory_order_release);
	self.wake();
}

void TriggerRules::wake()
{
	const uint64_t one = 1;
	if (write(wake_.get(), &one, sizeof one) < 0) {
	}
}

void TriggerRules::dropped(Rule &rule)
{
	rule.dropped.fetch_add(1, std::memory_order_relaxed);
	// One wake-up per drain for drops: the count reaches the daemon even
	// when no notification follows, and a flood costs no system call per event.
	if (!drops_told_.exchange(true, std::memory_order_relaxed))
		wake();
}

void TriggerRules::capture(Slot &slot, const tracery_event_desc &desc, const Binding &b, const tracery_arg *args)
{
	size_t used = 0; // of slot.text
	slot.count = static_cast<uint32_t>(b.captures.size());
	for (size_t i = 0; i < b.captures.size(); i++) {
		Value &v = slot.values[i];
		v.kind = Value::unavailable;
		if (b.captures[i] < 0)
			continue;
		const tracery_field_desc &f = desc.fields[b.captures[i]];
		const tracery_arg &a = args[b.captures[i]];
		if (!a.ptr)
			continue;
		switch (f.type) {
		case TRACERY_TYPE_FLOAT:
			v.kind = Value::floating;
			v.d = *static_cast<const float *>(a.ptr);
			break;
		case TRACERY_TYPE_DOUBLE:
			v.kind = Value::floating;
			v.d = *static_cast<const double *>(a.ptr);
			break;
		case TRACERY_TYPE_STRING: {
			const size_t n = std::min<size_t>(a.len, kTextBytes - used);
			memcpy(slot.text + used, a.ptr, n);
			v.kind = Value::text;
			v.offset = static_cast<uint16_t>(used);
			v.length = static_cast<uint16_t>(n);
			used += n;
			break;
		}
		case TRACERY_TYPE_ARRAY:
		case TRACERY_TYPE_SEQUENCE: {
			const size_t size = event::scalar_size(f.elem_type);
			if (!size || !event::is_integer_type(f.elem_type))
				break;
			used = (used + 7) & ~size_t{7};
			const size_t count =
				std::min<size_t>(f.type == TRACERY_TYPE_ARRAY ? std::min(f.length, a.len) : a.len,
			                         (kTextBytes - std::min(used, kTextBytes)) / 8);
			const bool sign = is_signed(f.elem_type);
			for (size_t k = 0; k < count; k++) {
				const void *p = static_cast<const char *>(a.ptr) + k * size;
				if (sign) {
					const int64_t x = load_signed(p, f.elem_type);
					memcpy(slot.text + used + 8 * k, &x, 8);
				} else {
					const uint64_t x = load_unsigned(p, f.elem_type);
					memcpy(slot.text + used + 8 * k, &x, 8);
				}
			}
			v.kind = sign ? Value::signed_array : Value::unsigned_array;
			v.offset = static_cast<uint16_t>(used);
			v.length = static_cast<uint16_t>(count);
			used += 8 * count;
			break;
		}
		case TRACERY_TYPE_ENUM:
			if (!event::is_integer_type(f.elem_type))
				break;
			if (is_signed(f.elem_type)) {
				v.kind = Value::signed_int;
				v.i = load_signed(a.ptr, f.elem_type);
			} else {
				v.kind = Value::unsigned_int;
				v.u = load_unsigned(a.ptr, f.elem_type);
			}
			break;
		case TRACERY_TYPE_BLOB:
			break;
		default:
			if (is_signed(f.type)) {
				v.kind = Value::signed_int;
				v.i = load_signed(a.ptr, f.type);
			} else {
				v.kind = Value::unsigned_int;
				v.u = load_unsigned(a.ptr, f.type);
			}
		}
	}
}

control::Notification TriggerRules::notification_of(const Slot &slot)
{
	control::Notification n;
	n.trigger = slot.trigger;
	n.time_ns = slot.time_ns;
	n.event = slot.event;
	return n;
}

void TriggerRules::drain(const std::function<void(const control::Notification &)> &send)
{
	uint64_t count;
	if (read(wake_.get(), &count, sizeof count) < 0) {
	}
	drops_told_.store(false, std::memory_order_relaxed);
	std::lock_guard lock(mutex_);
	if (!slots_)
		return;
	std::vector<Slot *> ready;
	for (size_t i = 0; i < kSlots; i++)
		if (slots_[i].state.load(std::memory_order_acquire) == kReady)
			ready.push_back(&slots_[i]);
	std::sort(ready.begin(), ready.end(), [](const Slot *a, const Slot *b) { return a->seq < b->seq; });
	for (const auto &rule : rules_)
		if (const uint64_t n = rule->dropped.exchange(0, std::memory_order_relaxed))
			unsent_drops_[rule->trigger.id] += n;
	for (Slot *slot : ready) {
		control::Notification n = notification_of(*slot);
		const control::ProgramTrigger *trigger = nullptr;
		for (const auto &rule : rules_)
			if (rule->trigger.id == slot->trigger)
				trigger = &rule->trigger;
		for (uint32_t i = 0; trigger && i < slot->count && i < trigger->captures.size(); i++) {
			const Value &v = slot->values[i];
			nlohmann::json value;
			switch (v.kind) {
			case Value::signed_int:
				value = v.i;
				break;
			case Value::unsigned_int:
				value = v.u;
				break;
			case Value::floating:
				value = v.d;
				break;
			case Value::text:
				value = std::string(slot->text + v.offset, v.length);
				break;
			case Value::signed_array:
			case Value::unsigned_array:
				value = nlohmann::json::array();
				for (size_t k = 0; k < v.length; k++) {
					uint64_t x;
					memcpy(&x, slot->text + v.offset + 8 * k, 8);
					if (v.kind == Value::signed_array)
						value.push_back(static_cast<int64_t>(x));
					else
						value.push_back(x);
				}
				break;
			case Value::unavailable:
				break;
			}
			n.captures[trigger->captures[i]] = std::move(value);
		}
		if (auto it = unsent_drops_.find(n.trigger); it != unsent_drops_.end()) {
			n.dropped = it->second;
			unsent_drops_.erase(it);
		}
		slot->state.store(kFree, std::memory_order_release);
		if (trigger) // else its rule was replaced meanwhile: the daemon no longer has it either
			send(n);
	}
	// Drops no notification carried: told alone (no event).
	for (const auto &[trigger, dropped] : unsent_drops_) {
		control::Notification n;
		n.trigger = trigger;
		n.dropped = dropped;
		send(n);
	}
	unsent_drops_.clear();
}

} // namespace tracery::ust
