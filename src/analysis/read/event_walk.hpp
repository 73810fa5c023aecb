// analysis/read/event_walk.hpp — what every statistic and analysis shares: the
// merged items of the traces given (with a progress bar on a terminal), and
// fields found by name once per event class, then read by index from each
// event's decoded values.
//
//   EventWalk walk(inputs, "analyze");              // throws ReadError
//   ClassCache<Handler> cache;                      // per event class: what to do, which fields
//   while (const Item *it = walk.next()) {
//       const Handler &h = cache.get(*it, [&] { return Handler{find_field(*it, "prev_tid"), ...}; });
//       if (auto v = int_field(*it, h.prev_tid)) ...
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/read/progress.hpp"
#include "analysis/view/text_view.hpp"
#include "ctf/reader/trace_reader.hpp"

namespace tracery::analysis {

// Where a field is: its scope, its op in that scope's plan, and its value's
// index when every member before it has a fixed number of values.
struct FieldRef {
	enum class Scope : uint8_t { none, packet_context, stream_context, context, fields };
	Scope scope = Scope::none;
	uint32_t op = 0;
	int64_t index = -1;   // -1: found by walking the members
	bool integer = false; // an integer (or enumeration) field
	explicit operator bool() const { return scope != Scope::none; }
};

// The member of that name (as shown: without one leading '_') of the event's
// payload, else its context, its stream's event context, its packet context.
FieldRef find_field(const ctf::reader::Item &event, std::string_view name);

// The member of that name of the event's context, else its stream's event
// context, else its packet context (never its payload).
FieldRef find_context_field(const ctf::reader::Item &event, std::string_view name);

// The member of that name of a scope's root struct (plan), found as the
// functions above find it; ref.scope is `scope`.
FieldRef find_member(const ctf::reader::Plan &plan, FieldRef::Scope scope, std::string_view name);

// The field's value in this event (null when ref is empty).
const ctf::reader::Value *field_value(const ctf::reader::Item &event, const FieldRef &ref);
// Its integer value (sign-extended when signed); nullopt when empty or not an integer.
[[gnu::always_inline]] inline std::optional<int64_t> int_field(const ctf::reader::Item &event, const FieldRef &ref)
{
	if (!ref.integer)
		return std::nullopt;
	if (ref.index >= 0) { // the common case, inline
		std::span<const ctf::reader::Value> v;
		switch (ref.scope) {
		case FieldRef::Scope::packet_context:
			v = event.packet_context;
			break;
		case FieldRef::Scope::stream_context:
			v = event.stream_context;
			break;
		case FieldRef::Scope::context:
			v = event.context;
			break;
		default:
			v = event.fields;
			break;
		}
		const auto i = static_cast<size_t>(ref.index);
		return i < v.size() ? std::optional<int64_t>(v[i].i) : std::nullopt;
	}
	const ctf::reader::Value *v = field_value(event, ref);
	return v ? std::optional<int64_t>(v->i) : std::nullopt;
}
// Its text; empty when empty or not text.
std::string_view text_field(const ctf::reader::Item &event, const FieldRef &ref);
// The plan of the field's scope in this event (ops[ref.op] is the field's op).
const ctf::reader::Plan &plan_of(const ctf::reader::Item &event, FieldRef::Scope scope);
// The decoded values of that scope in this event.
std::span<const ctf::reader::Value> values_of(const ctf::reader::Item &event, FieldRef::Scope scope);

// Something computed once per event class (the same EventPlans for every
// event of that class in that stream class of that trace).
template <class T>
class ClassCache {
public:
	template <class Make>
	const T &get(const ctf::reader::Item &event, Make &&make)
	{
		if (event.event == last_key_)
			return *last_;
		auto [where, added] = map_.try_emplace(event.event);
		if (added)
			where->second = make();
		last_key_ = event.event;
		last_ = &where->second;
		return *last_;
	}

private:
	std::unordered_map<const ctf::reader::TracePlans::EventPlans *, T> map_;
	const ctf::reader::TracePlans::EventPlans *last_key_ = nullptr;
	const T *last_ = nullptr;
};

// The items of the traces in time order, with the progress bar (label) on
// stderr when it is a terminal.
class EventWalk {
public:
	// fields: the event classes whose payloads are decoded (default: all;
	// the others' items have no field values); counted: those whose events
	// are only counted (TraceSet::count_events_of; default: none). Throws
	// ctf::reader::ReadError.
	EventWalk(const std::vector<ViewInput> &inputs, const std::string &label,
	          ctf::reader::TraceSet::FieldsWanted fields = {}, ctf::reader::TraceSet::Counted counted = {});
	const ctf::reader::Item *next()
	{
		const ctf::reader::Item *it = set_.next();
		if (!it) {
			progress_.finish();
			return it;
		}
		// (every 4096 events, counted ones included)
		const uint64_t before = count_;
		count_ += it->kind == ctf::reader::ItemKind::counted ? it->count : 1;
		if ((before ^ count_) >> 12)
			progress_.update(set_.bytes_done());
		return it;
	}
	const ctf::reader::TraceSet &set() const { return set_; }

private:
	// Adds the traces and starts the merge; returns the bytes to read.
	static uint64_t open(ctf::reader::TraceSet &set, const std::vector<ViewInput> &inputs,
	                     ctf::reader::TraceSet::FieldsWanted fields, ctf::reader::TraceSet::Counted counted);

	ctf::reader::TraceSet set_;
	Progress progress_;
	uint64_t count_ = 0;
};

// The time of the first and the last event seen.
struct TimeRange {
	bool any = false;
	int64_t first = 0, last = 0;
	void see(int64_t ns)
	{
		if (!any)
			first = ns;
		any = true;
		last = ns;
	}
};

// Calls f(event) for each event of the walk (not the discarded-items
// reports), after range has seen its time.
template <class F>
void for_each_event(EventWalk &walk, TimeRange &range, F &&f)
{
	while (const ctf::reader::Item *it = walk.next()) {
		if (it->kind != ctf::reader::ItemKind::event)
			continue;
		range.see(it->ns);
		f(*it);
	}
}

// "syscall_entry_read" → "read" when name starts with prefix, else "".
inline std::string_view after_prefix(std::string_view name, std::string_view prefix)
{
	return name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix ? name.substr(prefix.size())
	                                                                              : std::string_view{};
}

} // namespace tracery::analysis
