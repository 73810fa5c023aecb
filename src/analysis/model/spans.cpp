// analysis/model/spans.cpp — the begin and end events of user spans (see
// spans.hpp).
#include "analysis/model/spans.hpp"

#include <set>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

std::string SpanEvents::key(const reader::Item &it, const Fields &f)
{
	if (const auto v = int_field(it, f.key))
		return std::to_string(*v);
	std::string k = "\"";
	k += text_field(it, f.key);
	return k;
}

SpanEvents::SpanEvents(const reader::TraceSet &set, SpanOptions options) : options_(std::move(options))
{
	if (options_.begin == options_.end)
		throw std::invalid_argument(options_.begin_option + " and " + options_.end_option + " both name '" +
		                            options_.begin +
		                            "': give the event that opens a span and the one that closes it");
	// Both names must be event classes of the traces.
	std::set<std::string> names;
	for (const auto &t : set.traces())
		for (const auto &[id, sc] : t->cls.streams)
			for (const auto &[eid, ec] : sc.events)
				names.insert(ec.name);
	for (const std::string *n : {&options_.begin, &options_.end})
		if (!names.count(*n)) {
			std::string msg = "no event named '" + *n + "' in the trace (";
			msg += n == &options_.begin ? options_.begin_option : options_.end_option;
			msg += "); its events are:";
			size_t shown = 0;
			for (const std::string &e : names) {
				if (shown++ == 20) {
					msg += " ...";
					break;
				}
				msg += ' ';
				msg += e;
			}
			throw std::invalid_argument(msg);
		}
}

const SpanEvents::Fields &SpanEvents::of(const reader::Item &it)
{
	return cache_.get(it, [&] {
		const std::string &name = it.event->cls->name;
		const bool b = name == options_.begin, e = name == options_.end;
		if (!b && !e)
			return Fields{};
		const std::string &key_name = options_.match.empty() ? std::string("vtid") : options_.match;
		Fields r{b ? Fields::begin : Fields::end, find_field(it, key_name), find_field(it, "vpid"),
		         find_field(it, "procname")};
		if (!r.key)
			throw std::invalid_argument(
				options_.match.empty()
					? "the event " + name +
						  " has no vtid context, which pairs begins and ends per thread: record it with "
						  "`tracery add-context -t vtid`, or pair them by a field of both with " +
						  options_.match_option +
						  (options_.match_option == "--match" ? " FIELD" : "")
					: "the event " + name + " has no field '" + options_.match + "' (" +
						  options_.match_option +
						  "): give a field that both the begin and the end event have");
		return r;
	});
}

} // namespace tracery::analysis
