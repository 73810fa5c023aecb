// analysis/export.cpp — the table of export formats (see export.hpp).
#include "analysis/export.hpp"

#include "analysis/sql/sqlite_export.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tracery::analysis {

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

uint64_t write_sqlite(EventWalk &walk, const std::string &out, const ExportOptions &options)
{
	sql::LoadOptions load;
	for (const std::string &s : options.spans)
		load.spans.push_back(sql::parse_span(s));
	prepare_output(out, options.force);
	try {
		sql::Db db(out);
		sql::fresh_database_pragmas(db);
		return sql::load_traces(walk, db, load);
	} catch (...) {
		unlink(out.c_str()); // no half-written database
		throw;
	}
}

} // namespace

const std::vector<ExportFormat> &export_formats()
{
	static const std::vector<ExportFormat> formats = {
		{"sqlite",
	         "An SQLite database: a table per event, the events view, streams, lost events, system calls "
	         "and spans (slices), thread states, threads and processes (docs/sql.md)",
	         &write_sqlite},
		// perfetto and chrome-json: added here.
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

} // namespace tracery::analysis
