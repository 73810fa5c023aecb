// A snapshot session's snapshots and their output: see snapshot_verbs.hpp.
#include "cli/snapshot_verbs.hpp"

#include "cli/client.hpp"
#include "cli/current.hpp"
#include "cli/verbs.hpp"

#include "ctl/request_inputs.hpp"

#include "base/sizes.hpp"
#include "control/messages.hpp"

#include <cstdio>

namespace tracery::cli {

namespace {

std::optional<uint64_t> max_size(const std::string &text)
{
	if (text.empty())
		return std::nullopt;
	const auto v = base::parse_size(text);
	if (!v || *v == 0)
		throw CliError("bad --max-size '" + text + "': give a size in bytes, optionally with k, M or G");
	return *v;
}

void print_outputs(const control::SnapshotOutputsReply &r)
{
	if (r.outputs.empty()) {
		printf("Session '%s' has no snapshot output: its snapshots go to its output directory\n",
		       r.session.c_str());
		return;
	}
	printf("Snapshot output of session '%s':\n", r.session.c_str());
	for (size_t i = 0; i < r.outputs.size(); i++) {
		const control::SavedSnapshotOutput &o = r.outputs[i];
		printf("  [%zu] %s: %s (max size: %s)\n", i + 1, o.name.c_str(), o.path.c_str(),
		       o.max_size ? base::format_size(o.max_size).c_str() : "none");
	}
}

} // namespace

int verb_snapshot_record(const SnapshotArgs &a)
{
	control::SnapshotRecord req{session_or_current(a.session), std::nullopt, max_size(a.max_size), std::nullopt};
	if (!a.name.empty())
		req.name = a.name;
	if (!a.url.empty())
		req.path = ctl::snapshot_destination(a.url);
	const control::SnapshotRecordReply r = request(req);
	printf("Snapshot of session '%s' recorded in %s\n", r.session.c_str(), r.path.c_str());
	return 0;
}

int verb_snapshot_add_output(const SnapshotArgs &a)
{
	control::SnapshotAddOutput req{session_or_current(a.session),
	                               {a.name, ctl::snapshot_destination(a.url), max_size(a.max_size).value_or(0)}};
	print_outputs(request(req));
	return 0;
}

int verb_snapshot_list_output(const SnapshotArgs &a)
{
	print_outputs(request(control::SnapshotListOutput{{session_or_current(a.session)}}));
	return 0;
}

int verb_snapshot_del_output(const SnapshotArgs &a)
{
	print_outputs(request(control::SnapshotDelOutput{session_or_current(a.session), a.url}));
	return 0;
}

} // namespace tracery::cli
