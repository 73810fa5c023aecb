// cli/exec.hpp — `tracery exec [-s SESSION] [--preload LIST] [-o DIR] --
// COMMAND ARGS`: a command run with the preload helpers and traced, as
// `uftrace record` or `perf trace` run one.
#pragma once

#include <string>
#include <vector>

namespace tracery::cli {

struct ExecArgs {
	std::string session;                          // -s: an existing session (else a temporary one)
	std::string preload = "libc,pthread,func,dl"; // helpers, or "none"
	std::string output;                           // -o: the temporary session's trace directory
	std::vector<std::string> command;             // COMMAND ARGS
};

// The command's exit status (128 + N when signal N ended it), 126/127 when it could not be run.
int verb_exec(const ExecArgs &a);

} // namespace tracery::cli
