// analysis/view/text_view.hpp — `tracery view`: the events of one or several
// traces, merged by the reader (ctf/reader/), printed as babeltrace2's text
// sink prints them with its default options (same bytes: timestamps in local
// time with the delta to the previous event, hostname, event name, packet
// context, contexts and fields; discarded events and packets as WARNING
// lines on stderr), with a time range, event name globs, a filter
// expression and a choice of fields.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/model/symbols.hpp"
#include "analysis/read/trace_scan.hpp"

namespace tracery::ctf::reader {
class TraceSet;
struct Item;
} // namespace tracery::ctf::reader

namespace tracery::analysis {

struct ViewOptions {
	// Only events at or after begin / at or before end: times as
	// parse_time() (read/time_range.hpp) reads them ("" for no bound). A
	// bad time throws std::invalid_argument.
	std::string begin, end;
	// Only events whose name matches one of these globs ('*' any run).
	std::vector<std::string> names;
	// Only these fields (as shown, e.g. "cpu_id", "vtid", "msg") of each
	// scope; a scope left with none is not shown. Empty: all.
	std::vector<std::string> fields;
	// Only events for which this filter expression (view_filter.hpp) is
	// true; "" for all. A bad expression throws std::invalid_argument.
	std::string filter;
	// `--symbols`: the addresses resolved (text_printer.hpp says where).
	std::optional<SymbolOptions> symbols;
};

struct ViewStats {
	uint64_t events = 0;        // events printed
	bool output_closed = false; // the reader of stdout went away (EPIPE): stopped early
};

// Prints the events of the traces to out_fd, the discarded-items warnings to
// err. Throws ctf::reader::ReadError (file and offset) for a damaged trace:
// a packet found damaged when its stream reaches it, after the lines of the
// events before it are written.
ViewStats view_traces(const std::vector<TraceInput> &inputs, const ViewOptions &options, int out_fd, FILE *err);

// The printer of view_traces for items merged elsewhere (analysis/view/live_view.hpp):
// the same lines and warnings, with the same --names, --fields and --filter
// (not --begin or --end), each line written out by flush().
class ItemPrinter {
public:
	// Throws std::invalid_argument for a bad filter expression.
	ItemPrinter(const ViewOptions &options, int out_fd, FILE *err);
	~ItemPrinter();
	ItemPrinter(const ItemPrinter &) = delete;
	ItemPrinter &operator=(const ItemPrinter &) = delete;

	// The filter bound again to the event classes of the set (after traces
	// were added or their metadata grew). Throws std::invalid_argument.
	void bind(const ctf::reader::TraceSet &set);
	// Prints the item, if the options keep it (a discarded-items warning:
	// what was printed is flushed first). False once the output is closed.
	bool print(const ctf::reader::Item &item);
	// Writes out what was printed. Throws std::runtime_error if it cannot.
	void flush();
	uint64_t events() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace tracery::analysis
