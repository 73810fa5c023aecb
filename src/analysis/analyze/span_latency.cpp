// analysis/analyze/span_latency.cpp — `tracery analyze latency --begin EVENT --end
// EVENT [--match FIELD]`: the time between user events that open and close a
// span (a request's begin and end), paired per thread (their vtid context)
// or by an equal value of a field of both; per process and in all, with a
// histogram.
#include "analysis/analyze/analyses.hpp"

#include <set>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

void Spans::on_end(int64_t ns, const std::string &key, int64_t pid, std::string_view procname)
{
	const auto begun = open_.end(key);
	if (!begun) {
		++unmatched_ends_;
		return;
	}
	const int64_t d = ns - *begun;
	per_process_[{pid, std::string(procname)}].add(d);
	all_.add(d);
}

Report Spans::report(int64_t begin, int64_t end, const std::string &title)
{
	Report r = Report::ranged("latency", begin, end);
	r.tables.push_back(summary_table("all", title, all_));

	Table &pt = r.add("per_process", "Per process",
	                  {{"pid", "PID", Format::integer}, {"procname", "Name", Format::text}});
	summary_columns(pt.columns);
	for (auto &[who, d] : per_process_) {
		std::vector<Cell> &row = pt.rows.emplace_back();
		row = {cell_of(who.first >= 0 ? std::optional<int64_t>(who.first) : std::nullopt), who.second};
		summary_cells(d.summary(), row);
	}
	r.tables.push_back(histogram_table("histogram", title, all_));
	if (const uint64_t unfinished = open_.unfinished())
		r.notes.push_back(std::to_string(unfinished) +
		                  " span(s) begun and not ended in the trace (not counted)");
	if (unmatched_ends_)
		r.notes.push_back(std::to_string(unmatched_ends_) +
		                  " end event(s) without a begin before them (not counted)");
	return r;
}

std::string SpanEvents::key(const reader::Item &it, const Fields &f)
{
	if (const auto v = int_field(it, f.key))
		return std::to_string(*v);
	std::string k = "\"";
	k += text_field(it, f.key);
	return k;
}

SpanEvents::SpanEvents(const reader::TraceSet &set, LatencyOptions options) : options_(std::move(options))
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

Report analyze_latency(EventWalk &walk, const LatencyOptions &options)
{
	SpanEvents events(walk.set(), options);
	Spans spans;
	TimeRange range;
	for_each_event(walk, range, [&](const reader::Item &event) {
		const reader::Item *it = &event;
		const SpanEvents::Fields &f = events.of(*it);
		if (f.kind == SpanEvents::Fields::other)
			return;
		const std::string key = SpanEvents::key(*it, f);
		if (f.kind == SpanEvents::Fields::begin) {
			spans.on_begin(it->ns, key);
			return;
		}
		// the process: its context, else the trace's (a per-process buffer's env)
		const reader::TraceClass &tc = it->stream->trace().cls;
		int64_t pid = -1;
		if (const auto v = int_field(*it, f.pid))
			pid = *v;
		else if (const auto *env = tc.env_value("vpid"); env && std::holds_alternative<int64_t>(*env))
			pid = std::get<int64_t>(*env);
		std::string_view procname = text_field(*it, f.procname);
		if (const auto *env = tc.env_value("procname");
		    procname.empty() && env && std::holds_alternative<std::string>(*env))
			procname = std::get<std::string>(*env);
		spans.on_end(it->ns, key, pid, procname);
	});
	return spans.report(range.first, range.last, options.begin + " to " + options.end);
}

} // namespace tracery::analysis
