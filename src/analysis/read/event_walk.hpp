// analysis/read/event_walk.hpp — what every statistic and analysis shares: the
// merged items of the traces given (with a progress bar on a terminal), and
// what is worked out once per event class (ClassCache: fields found by name,
// ctf/reader/fields.hpp, then read by index from each event).
//
//   EventWalk walk(inputs, "analyze");              // throws ReadError
//   ClassCache<Handler> cache;                      // per event class: what to do, which fields
//   while (const Item *it = walk.next()) {
//       const Handler &h = cache.get(*it, [&] { return Handler{find_field(*it, "prev_tid"), ...}; });
//       if (auto v = int_field(*it, h.prev_tid)) ...
//   }
//   ... the product's output ...
//   walk.throw_if_stopped();                        // a damaged packet ended the walk early
//
// A packet found damaged when its stream reaches it ends the walk there, as
// it ends `tracery view`: next() returns null, so that the product is made of
// every item before it, and throw_if_stopped() then throws the reader's error
// (the file and the offset).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/read/progress.hpp"
#include "analysis/read/time_range.hpp"
#include "analysis/read/trace_scan.hpp"
#include "ctf/reader/fields.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"

namespace tracery::analysis {

// Fields found by name (ctf/reader/fields.hpp): find_field, find_context_field,
// int_field, text_field and field_at take an Item and are found by
// argument-dependent lookup.
using ctf::reader::FieldRef;

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
	using FieldsWanted = ctf::reader::TraceSet::FieldsWanted;
	using Counted = ctf::reader::TraceSet::Counted;

	// fields: the event classes whose payloads are decoded (default: all;
	// the others' items have no field values); counted: those whose events
	// are only counted (TraceSet::count_events_of; default: none); noted:
	// of those, the ones listed in their runs' items (TraceSet::note_events_of).
	// Throws ctf::reader::ReadError (a trace that cannot be opened).
	EventWalk(const std::vector<TraceInput> &inputs, const std::string &label,
	          ctf::reader::TraceSet::FieldsWanted fields = {}, ctf::reader::TraceSet::Counted counted = {},
	          ctf::reader::TraceSet::Counted noted = {});
	// The next item; null at the end, or where a damaged packet stopped
	// the walk (stopped()).
	const ctf::reader::Item *next()
	{
		const ctf::reader::Item *it = stopped_ ? nullptr : read_next();
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
	// The error of the damaged packet that ended the walk, if one did.
	const ctf::reader::ReadError *stopped() const { return stopped_ ? &*stopped_ : nullptr; }
	// Throws stopped(), if any: after the product of the items before it.
	void throw_if_stopped() const
	{
		if (stopped_)
			throw *stopped_;
	}

private:
	// set_.next(), its ReadError kept in stopped_ (null returned).
	const ctf::reader::Item *read_next();

	// Adds the traces and starts the merge; returns the bytes to read.
	static uint64_t open(ctf::reader::TraceSet &set, const std::vector<TraceInput> &inputs,
	                     ctf::reader::TraceSet::FieldsWanted fields, ctf::reader::TraceSet::Counted counted,
	                     ctf::reader::TraceSet::Counted noted);

	ctf::reader::TraceSet set_;
	Progress progress_;
	uint64_t count_ = 0;
	std::optional<ctf::reader::ReadError> stopped_;
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
