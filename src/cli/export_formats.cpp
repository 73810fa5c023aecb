// cli/export_formats.cpp — the table of export formats (see export_formats.hpp).
#include "cli/export_formats.hpp"

#include "analysis/export/chrome_json_export.hpp"
#include "analysis/export/html_export.hpp"
#include "analysis/export/perfetto_export.hpp"
#include "analysis/sql/sqlite_export.hpp"

#include <fcntl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tracery::cli {

using analysis::EventWalk;
using analysis::ExportCounts;
using analysis::ExportOptions;
namespace sql = analysis::sql;

namespace {

// OUT must not exist unless --force, which removes it first.
void prepare_output(const std::string &out, bool force)
{
	struct stat st;
	if (lstat(out.c_str(), &st) != 0)
		return;
	if (!force)
		throw std::invalid_argument("'" + out + "' exists: give another OUT, or --force to replace it");
	if (S_ISDIR(st.st_mode))
		throw std::invalid_argument("'" + out + "' is a directory: give the path of a file to write");
	if (unlink(out.c_str()) != 0)
		throw std::runtime_error("cannot remove '" + out + "' (--force): " + strerror(errno));
}

// --focus orders the HTML page's tracks; the other formats' viewers order their own.
void html_only_focus(const ExportRequest &request)
{
	if (!request.focus.empty())
		throw std::invalid_argument("--focus orders the processes of the html format's timeline; "
		                            "the other formats' viewers order tracks themselves");
}

ExportCounts write_sqlite(EventWalk &walk, const std::string &out, const ExportRequest &request)
{
	html_only_focus(request);
	if (!request.counters.empty())
		throw std::invalid_argument(
			"--counter draws a field as a counter track in the timeline formats "
			"(perfetto, chrome-json, html); the sqlite format has every field as a column");
	sql::LoadOptions load;
	for (const std::string &s : request.spans)
		load.spans.push_back(sql::parse_span(s));
	load.symbols = request.symbols;
	prepare_output(out, request.force);
	try {
		sql::Db db(out);
		sql::fresh_database_pragmas(db);
		ExportCounts n;
		n.events = sql::load_traces(walk, db, load);
		return n;
	} catch (...) {
		unlink(out.c_str()); // no half-written database
		throw;
	}
}

// The timeline formats: the timeline model's events (timeline.hpp) given
// to `write` with the file open.
using TimelineWriter = ExportCounts (*)(EventWalk &, const ExportOptions &, int, const std::string &);

ExportCounts write_timeline(TimelineWriter write, EventWalk &walk, const std::string &out, const ExportRequest &request)
{
	ExportOptions options;
	for (const std::string &s : request.spans)
		options.add_span(s);
	for (const std::string &c : request.counters)
		options.add_counter(c);
	options.symbols = request.symbols;
	options.focus = request.focus;
	prepare_output(out, request.force);
	const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		throw std::runtime_error("cannot create '" + out + "': " + strerror(errno));
	try {
		const ExportCounts n = write(walk, options, fd, "'" + out + "'");
		if (::close(fd) != 0)
			throw std::runtime_error("cannot write '" + out + "': " + strerror(errno));
		return n;
	} catch (...) {
		::close(fd);
		::unlink(out.c_str()); // no half-written file
		throw;
	}
}

ExportCounts write_perfetto(EventWalk &walk, const std::string &out, const ExportRequest &request)
{
	html_only_focus(request);
	return write_timeline(analysis::export_perfetto, walk, out, request);
}

ExportCounts write_chrome_json(EventWalk &walk, const std::string &out, const ExportRequest &request)
{
	html_only_focus(request);
	return write_timeline(analysis::export_chrome_json, walk, out, request);
}

ExportCounts write_html(EventWalk &walk, const std::string &out, const ExportRequest &request)
{
	return write_timeline(analysis::export_html, walk, out, request);
}

} // namespace

const std::vector<ExportFormat> &export_formats()
{
	static const std::vector<ExportFormat> formats = {
		{"sqlite",
	         "An SQLite database: a table per event, the events view, streams, lost events, system calls "
	         "and spans (slices), thread states, threads and processes (docs/sql.md)",
	         &write_sqlite},
		{"perfetto",
	         "Perfetto's protobuf trace (ui.perfetto.dev): CPU tracks from the scheduler's events, a track "
	         "per process and thread, user events as instants, system calls and --span pairs as slices, "
	         "--counter fields as counter tracks (docs/export.md)",
	         &write_perfetto},
		{"chrome-json",
	         "Chrome's trace event JSON (chrome://tracing and the tools that read only that), with the same "
	         "tracks as perfetto (docs/export.md)",
	         &write_chrome_json},
		{"html",
	         "A timeline in one HTML file that opens from disk in a browser: the same tracks as perfetto "
	         "with thread states and wake-ups, the user's processes first (--focus), zoom and pan, an "
	         "event's fields on a click, a search box (docs/export.md)",
	         &write_html},
	};
	return formats;
}

const ExportFormat *find_export_format(std::string_view name)
{
	for (const ExportFormat &f : export_formats())
		if (name == f.name)
			return &f;
	return nullptr;
}

} // namespace tracery::cli
