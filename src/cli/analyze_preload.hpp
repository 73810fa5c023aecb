// cli/analyze_preload.hpp — `tracery analyze locks` and `tracery analyze
// calls`: the analyses of the preload helpers' events and their outputs (tables, JSON, the call tree, folded stacks).
#pragma once

#include <optional>
#include <string>

#include "analysis/model/symbols.hpp"
#include "cli/verbs.hpp"

namespace tracery::analysis {
class EventWalk;
}

namespace tracery::cli {

// The analysis kind over the walk, printed, its addresses named by their
// symbols when given (--symbols); returns the exit status.
int analyze_preload(analysis::EventWalk &walk, const Args &a, const std::string &kind,
                    const std::optional<analysis::SymbolOptions> &symbols);

} // namespace tracery::cli
