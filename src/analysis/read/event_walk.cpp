// analysis/read/event_walk.cpp — the walk over merged items
// (see event_walk.hpp).
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

const reader::Plan &plan_of(const reader::Item &event, reader::Scope scope)
{
	switch (scope) {
	case reader::Scope::packet_context:
		return event.stream->plans().packet_context;
	case reader::Scope::stream_event_context:
		return event.stream->plans().event_context;
	case reader::Scope::event_context:
		return event.event->context;
	default:
		return event.event->fields;
	}
}

const reader::Value *field_value(const reader::Item &event, const FieldRef &ref)
{
	const reader::Field f = reader::field_at(event, ref);
	return f ? &reader::scope_values(event, ref.scope)[f.index()] : nullptr;
}

uint64_t EventWalk::open(reader::TraceSet &set, const std::vector<TraceInput> &inputs,
                         reader::TraceSet::FieldsWanted fields, reader::TraceSet::Counted counted)
{
	for (const TraceInput &in : inputs)
		set.add_trace(in.dir, in.name_suffix);
	if (fields)
		set.decode_fields_of(std::move(fields));
	if (counted)
		set.count_events_of(std::move(counted));
	set.start();
	return set.bytes_total();
}

EventWalk::EventWalk(const std::vector<TraceInput> &inputs, const std::string &label,
                     reader::TraceSet::FieldsWanted fields, reader::TraceSet::Counted counted)
	: progress_(label, open(set_, inputs, std::move(fields), std::move(counted)))
{
}

} // namespace tracery::analysis
