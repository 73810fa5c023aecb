// analysis/read/trace_scan.cpp — finds the traces under a directory and checks
// their stream files.
#include "analysis/read/trace_scan.hpp"

#include "ctf/stream_check.hpp"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace tracery::analysis {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path &path)
{
	std::ifstream in(path, std::ios::binary);
	return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void scan_stream(const std::string &file, bool ours, TraceScan &out)
{
	std::error_code ec;
	const uint64_t size = fs::file_size(file, ec);
	if (!ec && size == 0) {
		out.warnings.push_back(file +
		                       " is empty (0 bytes): none of its events reached the disk; the trace is shown "
		                       "without them");
		return;
	}
	if (ours) // (another tracer's packets: their sizes are where its metadata says)
		out.ours.push_back(file);
}

// A trace directory with a metadata file and no stream file shows nothing,
// and babeltrace2 says nothing of it. A user trace's stream files are made
// with their first packet, which its programs' buffers give when a
// sub-buffer fills or the session stops.
std::string no_streams_warning(const std::string &dir, const std::string &metadata)
{
	const bool user = metadata.find("domain = \"ust\";") != std::string::npos;
	return dir + " has a metadata file but no stream file: " +
	       (user ? "none of its programs' events reached the disk (their buffers were never flushed, as when "
	               "the session daemon is killed while they trace, or no traced program ran)"
	             : "none of its events reached the disk") +
	       "; the other traces are shown";
}

// babeltrace2's view of a directory: a `metadata` file makes it a trace,
// whose other files are stream files; hidden files are neither.
void scan(const fs::path &dir, int depth, TraceScan &out)
{
	std::error_code ec;
	fs::directory_iterator it(dir, ec);
	if (ec) {
		if (depth == 0)
			throw std::system_error(ec, "cannot read " + dir.string());
		out.warnings.push_back("cannot read " + dir.string() + ": " + ec.message() +
		                       ": the traces in it, if any, are not shown");
		return;
	}
	std::vector<fs::path> files, subdirs;
	bool has_metadata = false;
	for (const fs::directory_entry &e : it) {
		const std::string name = e.path().filename().string();
		if (name.empty() || name[0] == '.')
			continue;
		const fs::file_status st = e.symlink_status(ec);
		if (ec)
			continue;
		if (fs::is_directory(st))
			subdirs.push_back(e.path());
		else if (name == "metadata")
			has_metadata = true;
		else if (fs::is_regular_file(st))
			files.push_back(e.path());
	}
	if (has_metadata) {
		out.traces.push_back(dir.string());
		const std::string metadata = read_file(dir / "metadata");
		const bool ours = ctf::written_by_tracery(metadata);
		if (files.empty())
			out.warnings.push_back(no_streams_warning(dir.string(), metadata));
		std::sort(files.begin(), files.end());
		for (const fs::path &f : files)
			scan_stream(f.string(), ours, out);
	}
	if (depth + 1 > kMaxDepth)
		return;
	std::sort(subdirs.begin(), subdirs.end());
	for (const fs::path &d : subdirs)
		scan(d, depth + 1, out);
}

} // namespace

std::vector<std::string> check_streams(const std::vector<std::string> &files)
{
	std::vector<std::string> out;
	for (const std::string &file : files) {
		try {
			const ctf::StreamCheck c = ctf::check_stream_file(file);
			if (c.ok())
				continue;
			const std::string at = std::to_string(c.whole);
			out.push_back(file + ": at offset " + at + ", " + c.problem +
			              ": readers may reject the whole trace; `truncate -s " + at + " " + file +
			              "` keeps the " + std::to_string(c.packets) + " whole packets before it");
		} catch (const std::system_error &e) {
			out.push_back(std::string(e.what()) + ": the trace is shown without it");
		}
	}
	return out;
}

TraceScan scan_traces(const std::string &dir)
{
	TraceScan out;
	scan(fs::path(dir), 0, out);
	std::sort(out.traces.begin(), out.traces.end());
	return out;
}

void print_metadata_warnings(const ctf::reader::TraceSet &set, FILE *err)
{
	for (const auto &trace : set.traces())
		for (const ctf::reader::MetadataWarning &w : trace->cls.warnings)
			fprintf(err, "tracery: warning: %s: metadata line %zu (offset %zu): %s\n",
			        trace->metadata_path.c_str(), w.line, w.offset, w.what.c_str());
}

} // namespace tracery::analysis
