// analysis/analyze/calls.hpp — `tracery analyze calls`: the functions of
// programs built with -finstrument-functions and traced with a function
// preload helper (lttng_ust_cyg_profile:func_entry/func_exit, or the _fast
// variant's; LTTng's or Tracery's): per function, calls, inclusive and
// exclusive (self) time with percentiles; the call tree per process (as
// `uftrace graph` draws it); folded stacks for flame graphs (flamegraph.pl,
// speedscope). A core fed plain arguments (the unit tests drive it) and the
// function that feeds it a trace.
//
// The rules (the README's "Locks and calls" says them for users):
// - each thread has a stack of calls: an entry pushes one, an exit pops the
//   innermost; an exit naming a function deeper in the stack (a longjmp or
//   an exception skipped the exits between) closes the calls above it at
//   its time, counted; an exit with no call of its function open (entered
//   before the trace began) is counted and ignored; a call still open at
//   the end is counted and not timed;
// - inclusive time runs from entry to exit; exclusive, that minus the
//   inclusive time of the calls it made; a function's total inclusive time
//   counts only its outermost calls (a recursion is not counted twice);
// - the tree merges the calls of a process's threads by path from the root:
//   a node per distinct stack, at most kMaxNodes (what is deeper or beyond
//   is counted); stacks deeper than kMaxDepth are cut there, counted;
// - narrowed (--begin/--end, --cpu, --pid/--tid/--procname), every event
//   still moves the stacks and a call counts (its times, its node of the
//   tree, its thread's calls) when its exit is within.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/model/address_names.hpp"
#include "analysis/model/preload_events.hpp"
#include "analysis/output/report.hpp"
#include "analysis/read/event_walk.hpp"
#include "analysis/read/narrowing.hpp"

namespace tracery::analysis {

struct CallOptions {
	bool tree = false; // the call tree as a table (JSON) or drawn (text)
};

class CallStats {
public:
	static constexpr size_t kMaxDepth = 4096;
	static constexpr size_t kMaxNodes = size_t{1} << 20;

	void on_entry(int64_t ns, int64_t pid, int64_t tid, uint64_t addr);
	// addr: none for the fast variant's exit (it closes the innermost call)
	void on_exit(int64_t ns, int64_t pid, int64_t tid, std::optional<uint64_t> addr);
	void on_lost(uint64_t events) { lost_ += events; }
	// Whether the calls that the events fed next end count (narrowed: they
	// are within); the stacks move either way.
	void counting(bool counted) { counted_ = counted; }

	// The trace's first and last event times, for the report.
	void set_range(int64_t begin, int64_t end)
	{
		begin_ = begin;
		end_ = end;
	}
	Report report(const AddressNamer &name, const CallOptions &options);
	// The call tree drawn as text, per process, as `uftrace graph` does;
	// durations as the tables show them (options.fixed_units: in µs).
	void write_tree(FILE *out, const AddressNamer &name, const TextOptions &options = {}) const;
	// One line per stack: "f;g;h VALUE" (the process first, "pid N;", when
	// there are several): its exclusive time in ns (weight_calls: its
	// calls). Written line by line: the stacks repeat their callers.
	void write_folded(FILE *out, const AddressNamer &name, bool weight_calls) const;

private:
	struct Node {
		int64_t pid = 0;
		uint64_t addr = 0;
		uint32_t parent = 0; // kNoNode for a root
		uint32_t depth = 0;
		uint64_t calls = 0;
		int64_t inclusive = 0, exclusive = 0;
		std::vector<uint32_t> children;
	};
	static constexpr uint32_t kNoNode = UINT32_MAX;
	struct Frame {
		uint64_t addr;
		int64_t entry, children = 0;
		uint32_t node;
	};
	struct Thread {
		std::vector<Frame> stack;
		uint64_t too_deep = 0;                         // entries beyond kMaxDepth not yet exited
		std::unordered_map<uint64_t, uint32_t> active; // function -> its calls on the stack
	};
	struct Function {
		uint64_t calls = 0;
		int64_t total = 0; // inclusive, outermost calls only
		Distribution inclusive, exclusive;
	};

	uint32_t child(uint32_t parent, int64_t pid, uint64_t addr);
	void pop(int64_t ns, int64_t pid, int64_t tid, Thread &t);
	// The path of a node from its root ("a;b;c").
	std::string path(uint32_t node, const AddressNamer &name) const;

	std::map<std::pair<int64_t, int64_t>, Thread> threads_;
	std::map<std::pair<int64_t, uint64_t>, Function> functions_;
	std::map<std::pair<int64_t, int64_t>, uint64_t> thread_calls_; // the calls timed per thread
	std::vector<Node> nodes_;
	std::map<std::tuple<uint32_t, int64_t, uint64_t>, uint32_t> node_of_; // (parent, process, function) -> node
	std::map<std::pair<int64_t, uint64_t>, uint32_t> roots_;              // (process, function) -> root node
	int64_t begin_ = 0, end_ = 0;
	bool counted_ = true;
	uint64_t lost_ = 0, unmatched_exits_ = 0, skipped_exits_ = 0, too_deep_ = 0, untreed_ = 0;
};

// The calls of a walk's events (then report(), write_tree() or write_folded()
// with names.namer(): names observes every event and sees each function).
// Throws std::runtime_error when the trace has no function entry or exit
// event (saying how to record them), ReadError when damaged.
CallStats analyze_calls(EventWalk &walk, AddressNames &names, const Narrowing &narrowing = {});

} // namespace tracery::analysis
