// `tracery save`, `load` and `set-session`: sessions written to files and made
// again from them (control/session_file.hpp, docs/session-files.md), and the
// current session chosen. The command reads and writes the files, with the
// user's own rights; the daemon describes a session and makes one from a
// description.
#pragma once

#include <string>

namespace tracery::cli {

struct SaveLoadArgs {
	std::string session; // NAME
	bool all = false;    // --all
	std::string path;    // save --output-path DIR, load --input-path FILE|DIR
	bool force = false;  // -f: save over a file, load over a session of the same name
	std::string override_url;
	std::string override_name;
};

int verb_save(const SaveLoadArgs &a);
int verb_load(const SaveLoadArgs &a);
int verb_set_session(const std::string &name);

} // namespace tracery::cli
