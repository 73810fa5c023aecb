// cli/export_formats.hpp — `tracery export --format FORMAT`: the formats traces
// are written to, in one table (export_formats.cpp) that the command's
// --format option and its help list. A format is a name, a line of help and a
// writer from the merged events of the traces to the output path; adding one
// is adding a row. The table sits above the products it lists: the SQLite
// database (analysis/sql) and the timeline formats (analysis/export).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/export/timeline.hpp"
#include "analysis/read/event_walk.hpp"

namespace tracery::cli {

// What the command asks of a format.
struct ExportRequest {
	// User spans, "BEGIN,END[,FIELD]" each (--span).
	std::vector<std::string> spans;
	// Fields drawn as counter tracks, "EVENT:FIELD" each (--counter; the
	// timeline formats).
	std::vector<std::string> counters;
	// Replace OUT when it exists.
	bool force = false;
	// --symbols: the events' addresses resolved.
	std::optional<analysis::SymbolOptions> symbols;
	// html: processes shown first, each a pid or a name (--focus).
	std::vector<std::string> focus;
};

struct ExportFormat {
	const char *name;
	const char *help;
	// Writes the events of the walk to out, which is not left behind
	// half-written; returns the events written and those the traces lost.
	// Throws ctf::reader::ReadError (a damaged trace: file and offset),
	// std::invalid_argument (a bad option, named), std::runtime_error.
	analysis::ExportCounts (*write)(analysis::EventWalk &walk, const std::string &out,
	                                const ExportRequest &request);
};

// Every format, in the order --help lists them.
const std::vector<ExportFormat> &export_formats();
// The format of that name, null if none.
const ExportFormat *find_export_format(std::string_view name);

} // namespace tracery::cli
