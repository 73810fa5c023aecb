// cli/analyze_preload.hpp — `tracery analyze locks` and `tracery analyze
// calls`: the analyses of the preload helpers' events, their options and
// their outputs (tables, JSON, the call tree, folded stacks).
#pragma once

#include <optional>
#include <string>

#include "analysis/model/symbols.hpp"
#include "cli/verbs.hpp"

namespace CLI {
class App;
}

namespace tracery::analysis {
class EventWalk;
}

namespace tracery::cli {

// The options of `analyze locks` (kind "locks") or `analyze calls` ("calls") on their subcommand.
void add_preload_analysis_options(CLI::App *analysis, Args &a, const std::string &kind);
// The analysis kind over the walk, printed, its addresses named by their
// symbols when given (--symbols); returns the exit status.
int analyze_preload(analysis::EventWalk &walk, const Args &a, const std::string &kind,
                    const std::optional<analysis::SymbolOptions> &symbols);

} // namespace tracery::cli
