// cli/analyze_preload.cpp — `tracery analyze locks` and `tracery analyze
// calls` (see analyze_preload.hpp; their options are main.cpp's): which
// output they print (the report as text or JSON, the call tree drawn, folded stacks).
#include "cli/analyze_preload.hpp"

#include <cstdio>

#include "analysis/analyze/calls.hpp"
#include "analysis/analyze/locks.hpp"

namespace tracery::cli {

int analyze_preload(analysis::EventWalk &walk, const Args &a, const std::string &kind,
                    const std::optional<analysis::SymbolOptions> &symbols)
{
	analysis::AddressNames names(symbols);
	const analysis::AddressNamer name = names.namer();
	analysis::Report report;
	if (kind == "locks") {
		report = analysis::analyze_locks(walk, {a.contended_ns, a.longest}, names,
		                                 analysis::Narrowing(a.narrow));
		names.report(stderr);
	} else {
		if (a.folded && a.json)
			throw std::invalid_argument("--folded writes folded stacks, not JSON: give one of them");
		if (a.top && (a.folded || (a.tree && !a.json)))
			throw std::invalid_argument("--top cuts tables, not folded stacks or the call tree's text");
		analysis::CallStats calls = analysis::analyze_calls(walk, names, analysis::Narrowing(a.narrow));
		names.report(stderr);
		if (a.folded) {
			calls.write_folded(stdout, name, a.weight == "calls");
			return 0;
		}
		if (a.tree && !a.json) {
			calls.write_tree(stdout, name, {.fixed_units = a.fixed_units});
			return 0;
		}
		report = calls.report(name, {a.tree});
	}
	return print_report(std::move(report), a);
}

} // namespace tracery::cli
