// analysis/export/export.hpp — `tracery export --format FORMAT`: the formats traces
// are written to, in one table (export.cpp) that the command's --format
// option and its help list. A format is a name, a line of help and a writer
// from the merged events of the traces to the output path; adding one is
// adding a row.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/export/export_model.hpp"
#include "analysis/read/event_walk.hpp"

namespace tracery::analysis {

// What the command asks of a format.
struct ExportRequest {
	// User spans, "BEGIN,END[,FIELD]" each (--span).
	std::vector<std::string> spans;
	// Fields drawn as counter tracks, "EVENT:FIELD" each (--counter; the
	// timeline formats).
	std::vector<std::string> counters;
	// Replace OUT when it exists.
	bool force = false;
};

struct ExportFormat {
	const char *name;
	const char *help;
	// Writes the events of the walk to out, which is not left behind
	// half-written; returns the events written and those the traces lost.
	// Throws ctf::reader::ReadError (a damaged trace: file and offset),
	// std::invalid_argument (a bad option, named), std::runtime_error.
	ExportCounts (*write)(EventWalk &walk, const std::string &out, const ExportRequest &request);
};

// Every format, in the order --help lists them.
const std::vector<ExportFormat> &export_formats();
// The format of that name, null if none.
const ExportFormat *find_export_format(std::string_view name);

} // namespace tracery::analysis
