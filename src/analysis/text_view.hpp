// analysis/text_view.hpp — `tracery view`: the events of one or several
// traces, merged by the reader (ctf/reader/), printed as babeltrace2's text
// sink prints them with its default options (same bytes: timestamps in local
// time with the delta to the previous event, hostname, event name, packet
// context, contexts and fields; discarded events and packets as WARNING
// lines on stderr), with a time range, event name globs, a filter
// expression and a choice of fields.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace tracery::analysis {

struct ViewOptions {
	// Only events at or after begin / at or before end: times as
	// parse_time() reads them ("" for no bound). A bad time throws
	// std::invalid_argument.
	std::string begin, end;
	// Only events whose name matches one of these globs ('*' any run).
	std::vector<std::string> names;
	// Only these fields (as shown, e.g. "cpu_id", "vtid", "msg") of each
	// scope; a scope left with none is not shown. Empty: all.
	std::vector<std::string> fields;
	// Only events for which this filter expression (view_filter.hpp) is
	// true; "" for all. A bad expression throws std::invalid_argument.
	std::string filter;
};

struct ViewInput {
	std::string dir;         // a trace directory
	std::string name_suffix; // its path relative to what the user named ("" for that directory)
};

struct ViewStats {
	uint64_t events = 0;        // events printed
	bool output_closed = false; // the reader of stdout went away (EPIPE): stopped early
};

// Prints the events of the traces to out_fd, the discarded-items warnings to
// err. Throws ctf::reader::ReadError (file and offset) for a damaged trace.
ViewStats view_traces(const std::vector<ViewInput> &inputs, const ViewOptions &options, int out_fd, FILE *err);

// "2024-05-01 12:00:00.5", "12:00:00.000000001" (local time, on the day of
// the trace's first event: first_ns), "1714564800.5" (seconds from the
// epoch) or a plain integer of ns from the epoch. nullopt if unreadable.
std::optional<int64_t> parse_time(const std::string &text, std::optional<int64_t> first_ns);

} // namespace tracery::analysis
