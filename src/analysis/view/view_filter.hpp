// analysis/view/view_filter.hpp — `tracery view --filter EXPR`: the filter
// language of userspace filters (filter/parser.hpp, docs/filters.md) over the
// events a trace reader decodes.
//
// Names: `size`, `a.b` are payload fields (as babeltrace2 shows them: one
// leading '_' of the metadata's name dropped; the name as written works
// too); `arr[3]` one element of an array or sequence (constant index);
// `$ctx.vpid`, `$ctx.vtid`, `$ctx.procname` the event's context fields of
// those names (its own context, else its stream's), `$ctx.cpu_id` the
// packet context's cpu_id (else a context field of that name).
//
// The expression is bound once per event class (a field becomes a path
// through the decoded values, types are checked), then run on each event
// without allocating. As for userspace filters: an event class that lacks a
// field the expression names has none of its events accepted; a division by
// zero, a shift outside 0..63 or a sequence index past this event's length
// rejects that event. Refused up front, with the expression and a caret: a
// syntax error, a field or context field that no event class (of those
// --names selects) has, and a type error in every class that has all the
// fields.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace tracery::ctf::reader {
struct Item;
class TraceSet;
} // namespace tracery::ctf::reader

namespace tracery::analysis {

class ViewFilter {
public:
	// Parses the expression; throws std::invalid_argument ("bad filter: "
	// and the expression with a caret) on a syntax error.
	explicit ViewFilter(const std::string &expression);
	~ViewFilter();
	ViewFilter(const ViewFilter &) = delete;
	ViewFilter &operator=(const ViewFilter &) = delete;

	// Binds the expression to every event class of the traces of set whose
	// name `wanted` accepts. Throws std::invalid_argument for a field no such
	// class has, or a type error in each class that has all the fields.
	void bind(const ctf::reader::TraceSet &set, const std::function<bool(const std::string &)> &wanted);

	// Whether the event (an Item of kind event from that set) passes.
	bool accepts(const ctf::reader::Item &item);

	struct Impl;

private:
	std::unique_ptr<Impl> impl_;
};

} // namespace tracery::analysis
