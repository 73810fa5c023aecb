// `tracery snapshot record`, `add-output`, `list-output` and `del-output`:
// a snapshot session's snapshots and where they go.
#pragma once

#include <string>

namespace tracery::cli {

struct SnapshotArgs {
	std::string session;  // -s NAME
	std::string name;     // -n/--name
	std::string max_size; // -m/--max-size SIZE
	std::string url;      // record and add-output: DIR, file://DIR or net://HOST[:PORT]; del-output: ID or NAME
};

int verb_snapshot_record(const SnapshotArgs &a);
int verb_snapshot_add_output(const SnapshotArgs &a);
int verb_snapshot_list_output(const SnapshotArgs &a);
int verb_snapshot_del_output(const SnapshotArgs &a);

} // namespace tracery::cli
