// analysis/model/spans.hpp — user spans: a begin event and an end event of
// an instrumented program (a request's begin and end), and their pairing,
// written once for every product (`analyze latency`, the SQL slices, the
// timeline exports).
//
// Pairing: per key (the thread, or an equal value of a field of both), last
// in first out, so that the spans of one key nest: an end closes the
// innermost span open for its key; an end with none open closes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

// The spans open per key (Key: a thread's id, a field's value as text), each
// with what its begin left (T).
template <class Key, class T>
class OpenSpans {
public:
	void begin(const Key &key, T v) { open_[key].push_back(std::move(v)); }
	// What the innermost open span of key began with, now closed; nullopt if none is open.
	std::optional<T> end(const Key &key)
	{
		const auto o = open_.find(key);
		if (o == open_.end() || o->second.empty())
			return std::nullopt;
		std::optional<T> v(std::move(o->second.back()));
		o->second.pop_back();
		return v;
	}
	// What the innermost open span of key began with, still open; null if none is open.
	const T *innermost(const Key &key) const
	{
		const auto o = open_.find(key);
		return o == open_.end() || o->second.empty() ? nullptr : &o->second.back();
	}
	// How many spans of key are open.
	size_t depth(const Key &key) const
	{
		const auto o = open_.find(key);
		return o == open_.end() ? 0 : o->second.size();
	}
	// Spans begun and not ended.
	uint64_t unfinished() const
	{
		uint64_t n = 0;
		for (const auto &[key, stack] : open_)
			n += stack.size();
		return n;
	}

private:
	std::unordered_map<Key, std::vector<T>> open_;
};

// The begin and end events of one kind of span, and how the command named them.
struct SpanOptions {
	std::string begin, end; // event names
	std::string match;      // a field of both ("" for the thread: vtid)
	// how the command line named them, for messages
	std::string begin_option = "--begin", end_option = "--end", match_option = "--match";
};

// The begin and end events of spans in a trace: which one an event is, its
// pairing key (the value of the match field, else its vtid) and its
// process's fields.
class SpanEvents {
public:
	struct Fields {
		enum Kind : uint8_t { other, begin, end } kind = other;
		FieldRef key, pid, procname;
	};
	// Throws std::invalid_argument naming the option when an event is not one
	// of the traces', or both are the same.
	SpanEvents(const ctf::reader::TraceSet &set, SpanOptions options);
	// Throws std::invalid_argument when the event lacks the key field.
	const Fields &of(const ctf::reader::Item &event);
	// The pairing key of a begin or end event (integers and text alike).
	static std::string key(const ctf::reader::Item &event, const Fields &f);
	const SpanOptions &options() const { return options_; }

private:
	SpanOptions options_;
	ClassCache<Fields> cache_;
};

} // namespace tracery::analysis
