// analysis/analyze/span_latency.cpp — `tracery analyze latency --begin EVENT --end
// EVENT [--match FIELD]`: the time between user events that open and close a
// span (a request's begin and end), paired per thread (their vtid context)
// or by an equal value of a field of both; per process and in all, with a
// histogram.
#include "analysis/analyze/analyses.hpp"

#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

void Spans::on_end(int64_t ns, const std::string &key, int64_t pid, std::string_view procname,
                   std::optional<int64_t> tid, std::optional<int64_t> cpu)
{
	const auto begun = open_.end(key);
	if (!begun) {
		++unmatched_ends_;
		return;
	}
	if (!narrowing_.time_in(ns) || !narrowing_.cpu_in(cpu) ||
	    !narrowing_.task_in(tid, pid >= 0 ? std::optional<int64_t>(pid) : std::nullopt, procname))
		return;
	const int64_t d = ns - *begun;
	per_process_[{pid, std::string(procname)}].add(d);
	all_.add(d);
}

Report Spans::report(int64_t begin, int64_t end, const std::string &title)
{
	Report r = Report::ranged("latency", narrowing_.clamp(begin), narrowing_.clamp(end));
	r.tables.push_back(summary_table("all", title, all_));

	Table &pt = r.add("per_process", "Per process",
	                  {{"pid", "PID", Format::integer}, {"procname", "Name", Format::text}});
	summary_columns(pt.columns);
	pt.top_by = "count";
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

Report analyze_latency(EventWalk &walk, const SpanOptions &options, const Narrowing &narrowing)
{
	SpanEvents events(walk.set(), options);
	Spans spans(narrowing);
	CpuOf cpu_of;
	ClassCache<FieldRef> vtid;
	TimeRange range;
	for_each_event(walk, range, [&](const reader::Item &event) {
		const reader::Item *it = &event;
		spans.begin(range.first);
		const SpanEvents::Fields &f = events.of(*it);
		if (f.kind == SpanEvents::Fields::other)
			return;
		const std::string key = SpanEvents::key(*it, f);
		if (f.kind == SpanEvents::Fields::begin) {
			spans.on_begin(it->ns, key);
			return;
		}
		// the process: its context, else the trace's (a per-process buffer's env)
		const EnvProcess env = env_process(it->stream->trace().cls);
		int64_t pid = -1;
		if (const auto v = int_field(*it, f.pid))
			pid = *v;
		else if (env.pid)
			pid = *env.pid;
		std::string_view procname = text_field(*it, f.procname);
		if (procname.empty())
			procname = env.procname;
		spans.on_end(it->ns, key, pid, procname,
		             int_field(*it, vtid.get(*it, [&] { return find_context_field(*it, "vtid"); })),
		             cpu_of(*it));
	});
	return spans.report(range.first, range.last, options.begin + " to " + options.end);
}

} // namespace tracery::analysis
