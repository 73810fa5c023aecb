// analysis/analyze/calls.cpp — `tracery analyze calls`: per function calls,
// inclusive and exclusive time, the call tree and folded stacks, from the
// function entry/exit events of the preload helpers (the rules: calls.hpp).
#include "analysis/analyze/calls.hpp"
#include "analysis/analyze/user_event_narrowing.hpp"

#include <algorithm>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

uint32_t CallStats::child(uint32_t parent, int64_t pid, uint64_t addr)
{
	if (const auto found = node_of_.find({parent, pid, addr}); found != node_of_.end())
		return found->second;
	if (nodes_.size() >= kMaxNodes)
		return kNoNode;
	const auto id = static_cast<uint32_t>(nodes_.size());
	Node &n = nodes_.emplace_back();
	n.pid = pid;
	n.addr = addr;
	n.parent = parent;
	n.depth = parent == kNoNode ? 0 : nodes_[parent].depth + 1;
	node_of_.emplace(std::tuple{parent, pid, addr}, id);
	if (parent == kNoNode)
		roots_.emplace(std::pair{pid, addr}, id);
	else
		nodes_[parent].children.push_back(id);
	return id;
}

void CallStats::on_entry(int64_t ns, int64_t pid, int64_t tid, uint64_t addr)
{
	Thread &t = threads_[{pid, tid}];
	if (t.stack.size() >= kMaxDepth) {
		++t.too_deep;
		++too_deep_;
		return;
	}
	uint32_t node = kNoNode;
	if (t.stack.empty())
		node = child(kNoNode, pid, addr);
	else if (t.stack.back().node != kNoNode)
		node = child(t.stack.back().node, pid, addr);
	if (node == kNoNode)
		++untreed_;
	t.stack.push_back({addr, ns, 0, node});
	++t.active[addr];
}

void CallStats::pop(int64_t ns, int64_t pid, int64_t tid, Thread &t)
{
	const Frame f = t.stack.back();
	t.stack.pop_back();
	const int64_t inclusive = ns - f.entry;
	const int64_t exclusive = inclusive - f.children;
	if (!t.stack.empty())
		t.stack.back().children += inclusive;
	const auto a = t.active.find(f.addr);
	const bool outermost = --a->second == 0;
	if (outermost)
		t.active.erase(a);
	if (!counted_)
		return;
	++thread_calls_[{pid, tid}];
	Function &fn = functions_[{pid, f.addr}];
	++fn.calls;
	fn.inclusive.add(inclusive);
	fn.exclusive.add(exclusive);
	if (outermost)
		fn.total += inclusive;
	if (f.node != kNoNode) {
		Node &n = nodes_[f.node];
		++n.calls;
		n.inclusive += inclusive;
		n.exclusive += exclusive;
	}
}

void CallStats::on_exit(int64_t ns, int64_t pid, int64_t tid, std::optional<uint64_t> addr)
{
	Thread &t = threads_[{pid, tid}];
	if (t.too_deep) {
		--t.too_deep;
		return;
	}
	if (t.stack.empty()) {
		++unmatched_exits_;
		return;
	}
	if (addr && t.stack.back().addr != *addr) {
		// a call of that function deeper in the stack: the calls above it ended without their exits
		if (!t.active.count(*addr)) {
			++unmatched_exits_;
			return;
		}
		while (t.stack.back().addr != *addr) {
			++skipped_exits_;
			pop(ns, pid, tid, t);
		}
	}
	pop(ns, pid, tid, t);
}

std::string CallStats::path(uint32_t node, const AddressNamer &name) const
{
	std::vector<uint32_t> chain;
	for (uint32_t n = node; n != kNoNode; n = nodes_[n].parent)
		chain.push_back(n);
	std::string s;
	for (auto n = chain.rbegin(); n != chain.rend(); ++n) {
		if (!s.empty())
			s += ';';
		s += name(nodes_[*n].addr, nodes_[*n].pid);
	}
	return s;
}

namespace {

void time_columns(std::vector<Column> &columns, const std::string &prefix, const std::string &title)
{
	columns.push_back({prefix + "_total_ns", title + " total", Format::duration});
	for (const char *p : {"p50", "p90", "p99", "max"})
		columns.push_back({prefix + "_" + p + "_ns", title + " " + p, Format::duration});
}

} // namespace

Report CallStats::report(const AddressNamer &name, const CallOptions &options)
{
	Report r = Report::ranged("calls", begin_, end_);
	Table &ft = r.add("per_function", "Per function",
	                  {{"pid", "PID", Format::integer},
	                   {"function", "Function", Format::text},
	                   {"calls", "Calls", Format::integer}});
	time_columns(ft.columns, "inclusive", "Incl");
	time_columns(ft.columns, "exclusive", "Self");
	ft.top_by = "inclusive_total_ns";
	std::vector<std::pair<const std::pair<int64_t, uint64_t>, Function> *> order;
	for (auto &e : functions_)
		order.push_back(&e);
	std::stable_sort(order.begin(), order.end(),
	                 [](auto *a, auto *b) { return a->second.total > b->second.total; });
	for (auto *e : order) {
		std::vector<Cell> &row = ft.rows.emplace_back();
		row = {e->first.first, name(e->first.second, e->first.first), static_cast<int64_t>(e->second.calls)};
		const Distribution::Summary in = e->second.inclusive.summary(), ex = e->second.exclusive.summary();
		for (int64_t v :
		     {e->second.total, in.p50, in.p90, in.p99, in.max, ex.total, ex.p50, ex.p90, ex.p99, ex.max})
			row.emplace_back(v);
	}

	Table &tt = r.add("per_thread", "Per thread",
	                  {{"pid", "PID", Format::integer},
	                   {"tid", "TID", Format::integer},
	                   {"calls", "Calls", Format::integer}});
	tt.top_by = "calls";
	for (const auto &[who, calls] : thread_calls_)
		tt.rows.push_back({who.first, who.second, static_cast<int64_t>(calls)});

	if (options.tree) {
		Table &gt = r.add("call_tree", "Call tree",
		                  {{"pid", "PID", Format::integer},
		                   {"depth", "Depth", Format::integer},
		                   {"function", "Function", Format::text},
		                   {"calls", "Calls", Format::integer},
		                   {"inclusive_ns", "Incl", Format::duration},
		                   {"exclusive_ns", "Self", Format::duration}});
		std::vector<uint32_t> todo;
		for (auto it = roots_.rbegin(); it != roots_.rend(); ++it)
			todo.push_back(it->second);
		while (!todo.empty()) {
			const Node &n = nodes_[todo.back()];
			todo.pop_back();
			gt.rows.push_back({n.pid, static_cast<int64_t>(n.depth), name(n.addr, n.pid),
			                   static_cast<int64_t>(n.calls), n.inclusive, n.exclusive});
			for (auto c = n.children.rbegin(); c != n.children.rend(); ++c)
				todo.push_back(*c);
		}
	}

	if (lost_)
		r.notes.push_back("the trace lost " + std::to_string(lost_) +
		                  " event(s): calls may be missing, or closed late by an outer exit");
	if (unmatched_exits_)
		r.notes.push_back(std::to_string(unmatched_exits_) +
		                  " exit(s) without their entry (entered before the trace began; not counted)");
	if (skipped_exits_)
		r.notes.push_back(std::to_string(skipped_exits_) +
		                  " call(s) closed by the exit of a function that called them (longjmp, exception or "
		                  "lost exit)");
	uint64_t open = 0;
	for (const auto &[who, t] : threads_)
		open += t.stack.size() + t.too_deep;
	if (open)
		r.notes.push_back(std::to_string(open) + " call(s) not returned by the end of the trace (not counted)");
	if (too_deep_)
		r.notes.push_back(std::to_string(too_deep_) + " call(s) deeper than " + std::to_string(kMaxDepth) +
		                  " (not counted)");
	if (untreed_)
		r.notes.push_back(std::to_string(untreed_) + " call(s) beyond the tree's " + std::to_string(kMaxNodes) +
		                  " nodes (counted per function, not in the tree)");
	return r;
}

void CallStats::write_tree(FILE *out, const AddressNamer &name, const TextOptions &options) const
{
	// the durations' columns as wide as their widest text (at least 13, the width of fixed units)
	size_t width = 13;
	for (const Node &n : nodes_)
		for (int64_t ns : {n.inclusive, n.exclusive})
			width = std::max(width, display_width(duration_text(static_cast<double>(ns), options)));
	const auto right = [&](std::string &line, const std::string &text) {
		line.append(width - std::min(width, display_width(text)), ' ');
		line += text;
		line += ' ';
	};
	std::string heading;
	right(heading, duration_heading("total", options));
	right(heading, duration_heading("self", options));
	heading += "      calls  function\n";

	int64_t pid = -2;
	std::vector<uint32_t> todo;
	for (auto it = roots_.rbegin(); it != roots_.rend(); ++it)
		todo.push_back(it->second);
	std::string line;
	while (!todo.empty()) {
		const Node &n = nodes_[todo.back()];
		todo.pop_back();
		if (n.pid != pid) {
			fprintf(out, "%sprocess %lld\n%s", pid == -2 ? "" : "\n", static_cast<long long>(n.pid),
			        heading.c_str());
			pid = n.pid;
		}
		line.clear();
		right(line, duration_text(static_cast<double>(n.inclusive), options));
		right(line, duration_text(static_cast<double>(n.exclusive), options));
		char b[32];
		snprintf(b, sizeof b, "%11llu  ", static_cast<unsigned long long>(n.calls));
		line += b;
		for (uint32_t d = 0; d < n.depth; ++d)
			line += d + 1 == n.depth ? "+- " : "   ";
		line += name(n.addr, n.pid);
		line += '\n';
		fputs(line.c_str(), out);
		for (auto c = n.children.rbegin(); c != n.children.rend(); ++c)
			todo.push_back(*c);
	}
}

void CallStats::write_folded(FILE *out, const AddressNamer &name, bool weight_calls) const
{
	bool several = false;
	for (const auto &[key, node] : roots_)
		several |= key.first != roots_.begin()->first.first;
	std::string line;
	for (uint32_t i = 0; i < nodes_.size(); ++i) {
		const Node &n = nodes_[i];
		const int64_t v = weight_calls ? static_cast<int64_t>(n.calls) : n.exclusive;
		if (v <= 0)
			continue;
		line = several ? "pid " + std::to_string(n.pid) + ";" : std::string();
		line += path(i, name);
		line += ' ';
		line += std::to_string(v);
		line += '\n';
		fputs(line.c_str(), out);
	}
}

CallStats analyze_calls(EventWalk &walk, AddressNames &names, const Narrowing &narrowing)
{
	ClassCache<PreloadEvent> cache;
	UserEventNarrowing within(narrowing);
	CallStats calls;
	TimeRange range;
	uint64_t seen = 0;
	while (const reader::Item *it = walk.next()) {
		if (it->kind != reader::ItemKind::event) {
			calls.on_lost(it->count);
			continue;
		}
		range.see(it->ns);
		within.first_event(range.first);
		names.observe(*it);
		const PreloadEvent &p = cache.get(*it, [&] { return PreloadEvent::of(*it); });
		if (!p.is_call())
			continue;
		++seen;
		calls.counting(within.counts(*it));
		if (p.kind == PreloadEvent::func_entry) {
			const uint64_t addr = PreloadEvent::address(*it, p.addr);
			names.see(p.pid(*it), addr, AddressNames::function);
			calls.on_entry(it->ns, p.pid(*it), p.tid(*it), addr);
		} else
			calls.on_exit(it->ns, p.pid(*it), p.tid(*it),
			              p.addr ? std::optional<uint64_t>(PreloadEvent::address(*it, p.addr))
			                     : std::nullopt);
	}
	if (!seen)
		throw std::runtime_error(
			"the trace has no lttng_ust_cyg_profile(_fast):func_entry/func_exit event, which calls needs: build "
			"the program with -finstrument-functions and run it with the function preload helper (`tracery "
			"exec --preload func -- PROGRAM`, or LD_PRELOAD=libtracery-preload-func.so) in a session that "
			"enables 'lttng_ust_cyg_profile*:*' with the vpid and vtid contexts");
	calls.set_range(narrowing.clamp(range.first), narrowing.clamp(range.last));
	return calls;
}

} // namespace tracery::analysis
