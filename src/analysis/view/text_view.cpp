// analysis/view/text_view.cpp — `tracery view`: the reader's merged items,
// kept or not by the options, printed by TextPrinter through a TextWriter
// (see text_view.hpp).
#include "analysis/view/text_view.hpp"

#include <unistd.h>

#include <optional>
#include <stdexcept>

#include "analysis/output/text_writer.hpp"
#include "analysis/read/progress.hpp"
#include "analysis/read/time_range.hpp"
#include "analysis/read/trace_scan.hpp"
#include "analysis/view/text_printer.hpp"
#include "analysis/view/view_filter.hpp"
#include "ctf/reader/read_error.hpp"
#include "ctf/reader/trace_reader.hpp"
#include "filter/glob.hpp"

namespace tracery::analysis {

namespace reader = ctf::reader;

namespace {

bool name_wanted(const std::vector<std::string> &globs, const std::string &name)
{
	if (globs.empty())
		return true;
	for (const std::string &g : globs)
		if (filter::glob_match(g.data(), g.size(), name.data(), name.size()))
			return true;
	return false;
}

} // namespace

ViewStats view_traces(const std::vector<TraceInput> &inputs, const ViewOptions &options, int out_fd, FILE *err)
{
	std::optional<ViewFilter> filter; // a bad expression is said before the traces are read
	if (!options.filter.empty())
		filter.emplace(options.filter);
	reader::TraceSet set;
	for (const TraceInput &in : inputs)
		set.add_trace(in.dir, in.name_suffix);
	print_metadata_warnings(set, err);
	if (filter)
		filter->bind(set, [&](const std::string &name) { return name_wanted(options.names, name); });
	set.start();
	TextWriter out(out_fd);
	TextPrinter printer(out.buf(), options.fields);
	std::optional<SymbolEvents> symbols;
	if (options.symbols)
		printer.set_symbols(&symbols.emplace(*options.symbols));
	ViewStats stats;
	TimeBounds bounds;
	bool resolved = options.begin.empty() && options.end.empty();
	// A bar on stderr while the events go to a file or a pipe, not to the terminal it is on.
	Progress progress("view", set.bytes_total(), err,
	                  Progress::on_terminal(err) && !(::isatty(out_fd) && Progress::on_terminal(stdout)));
	uint64_t items = 0;
	// A packet found damaged when reached ends the reading: the events
	// before it are written, then the error (file and offset) is thrown.
	const auto next = [&] {
		try {
			return set.next();
		} catch (const reader::ReadError &) {
			out.flush();
			progress.clear();
			throw;
		}
	};
	while (const reader::Item *it = next()) {
		if ((++items & 0xfff) == 0)
			progress.update(set.bytes_done());
		if (!resolved) {
			bounds = time_bounds(options.begin, options.end, it->ns);
			resolved = true;
		}
		if (symbols && it->kind == reader::ItemKind::event)
			symbols->observe(*it); // (every event: the objects of the processes over time)
		if (bounds.begin && it->ns < *bounds.begin)
			continue;
		if (bounds.end && it->ns > *bounds.end)
			break;
		if (it->kind != reader::ItemKind::event) {
			out.flush();
			progress.clear();
			printer.discarded(*it, err);
			continue;
		}
		if (!name_wanted(options.names, it->event->cls->name))
			continue;
		if (filter && !filter->accepts(*it))
			continue;
		printer.event(*it);
		++stats.events;
		out.maybe_flush();
		if (out.closed())
			break;
	}
	out.flush();
	progress.finish();
	if (symbols)
		symbols->resolver().report(err);
	stats.output_closed = out.closed();
	return stats;
}

struct ItemPrinter::Impl {
	Impl(const ViewOptions &o, int out_fd, FILE *e)
		: options(o), out(out_fd), printer(out.buf(), options.fields), err(e)
	{
		if (!options.filter.empty())
			filter.emplace(options.filter);
		if (options.symbols)
			printer.set_symbols(&symbols.emplace(*options.symbols));
	}
	ViewOptions options;
	TextWriter out;
	TextPrinter printer;
	std::optional<SymbolEvents> symbols;
	FILE *err;
	std::optional<ViewFilter> filter;
	uint64_t events = 0;
};

ItemPrinter::ItemPrinter(const ViewOptions &options, int out_fd, FILE *err)
	: impl_(std::make_unique<Impl>(options, out_fd, err))
{
}

ItemPrinter::~ItemPrinter() = default;

void ItemPrinter::bind(const reader::TraceSet &set)
{
	if (impl_->filter)
		impl_->filter->bind(set,
		                    [&](const std::string &name) { return name_wanted(impl_->options.names, name); });
}

bool ItemPrinter::print(const reader::Item &it)
{
	Impl &m = *impl_;
	if (it.kind != reader::ItemKind::event) {
		m.out.flush();
		m.printer.discarded(it, m.err);
		return !m.out.closed();
	}
	if (m.symbols)
		m.symbols->observe(it);
	if (name_wanted(m.options.names, it.event->cls->name) && (!m.filter || m.filter->accepts(it))) {
		m.printer.event(it);
		++m.events;
		m.out.maybe_flush();
	}
	return !m.out.closed();
}

void ItemPrinter::flush() { impl_->out.flush(); }

uint64_t ItemPrinter::events() const { return impl_->events; }

} // namespace tracery::analysis
