// cli/analyze_preload.cpp — `tracery analyze locks` and `tracery analyze
// calls` (see analyze_preload.hpp): their options, and which output they
// print (the report as text or JSON, the call tree drawn, folded stacks).
#include "cli/analyze_preload.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "analysis/analyze/calls.hpp"
#include "analysis/analyze/locks.hpp"

namespace tracery::cli {

void add_preload_analysis_options(CLI::App *analysis, Args &a, const std::string &kind)
{
	if (kind == "locks") {
		analysis->add_option("--contended", a.contended_ns,
		                     "A wait at least this long (ns) makes an acquisition contended (default 1000); "
		                     "so does a lock held by another thread when requested")
			->check(CLI::NonNegativeNumber);
		analysis->add_option("--longest", a.longest, "How many of the longest waits to list (default 10)")
			->check(CLI::Range(0, 100000));
		return;
	}
	auto *tree = analysis->add_flag("--tree", a.tree,
	                                "The call tree per process (text: drawn as `uftrace graph` does; with --json: "
	                                "a table of its nodes with their depth)");
	auto *folded = analysis->add_flag("--folded", a.folded,
	                                  "Folded stacks for flame graphs (flamegraph.pl, speedscope): a line "
	                                  "'f;g;h VALUE' per stack, its self time in ns (--weight calls: its calls)");
	folded->excludes(tree);
	analysis->add_option("--weight", a.weight, "With --folded: time (default) or calls")
		->check(CLI::IsMember({"time", "calls"}));
}

int analyze_preload(analysis::EventWalk &walk, const Args &a, const std::string &kind,
                    const std::optional<analysis::SymbolOptions> &symbols)
{
	analysis::AddressNames names(symbols);
	const analysis::AddressNamer name = names.namer();
	analysis::Report report;
	if (kind == "locks") {
		report = analysis::analyze_locks(walk, {a.contended_ns, a.longest}, names);
		names.report(stderr);
	} else {
		if (a.folded && a.json)
			throw std::invalid_argument("--folded writes folded stacks, not JSON: give one of them");
		analysis::CallStats calls = analysis::analyze_calls(walk, names);
		names.report(stderr);
		if (a.folded) {
			calls.write_folded(stdout, name, a.weight == "calls");
			return 0;
		}
		if (a.tree && !a.json) {
			calls.write_tree(stdout, name);
			return 0;
		}
		report = calls.report(name, {a.tree});
	}
	if (a.json)
		fputs(analysis::to_json(report).c_str(), stdout);
	else
		analysis::print_text(report, stdout);
	return 0;
}

} // namespace tracery::cli
