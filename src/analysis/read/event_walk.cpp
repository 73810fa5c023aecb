// analysis/read/event_walk.cpp — the walk over merged items
// (see event_walk.hpp).
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

uint64_t EventWalk::open(reader::TraceSet &set, const std::vector<TraceInput> &inputs,
                         reader::TraceSet::FieldsWanted fields, reader::TraceSet::Counted counted,
                         reader::TraceSet::Counted noted)
{
	for (const TraceInput &in : inputs)
		set.add_trace(in.dir, in.name_suffix);
	print_metadata_warnings(set, stderr);
	if (fields)
		set.decode_fields_of(std::move(fields));
	if (counted)
		set.count_events_of(std::move(counted));
	if (noted)
		set.note_events_of(std::move(noted));
	set.start();
	return set.bytes_total();
}

EventWalk::EventWalk(const std::vector<TraceInput> &inputs, const std::string &label,
                     reader::TraceSet::FieldsWanted fields, reader::TraceSet::Counted counted,
                     reader::TraceSet::Counted noted)
	: progress_(label, open(set_, inputs, std::move(fields), std::move(counted), std::move(noted)))
{
}

const reader::Item *EventWalk::read_next()
{
	try {
		return set_.next();
	} catch (const reader::ReadError &e) {
		stopped_.emplace(e);
		return nullptr;
	}
}

} // namespace tracery::analysis
