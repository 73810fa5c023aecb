// analysis/analyze/locks.cpp — `tracery analyze locks`: waits and holds of
// mutexes and rwlocks, condition waits, per lock and per call site, from the
// pthread preload helper's events (the rules: locks.hpp).
#include "analysis/analyze/locks.hpp"
#include "analysis/analyze/user_event_narrowing.hpp"

#include <algorithm>
#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

LockStats::Lock &LockStats::lock_of(int64_t pid, uint64_t lock, Kind kind)
{
	auto [where, added] = locks_.try_emplace({pid, lock});
	if (added)
		where->second.kind = kind;
	return where->second;
}

int64_t LockStats::blocker(const LockKey &key, int64_t tid, bool write) const
{
	const auto h = holders_.find(key);
	if (h == holders_.end())
		return -1;
	for (const Holder &o : h->second)
		if (o.tid != tid && (write || o.write))
			return o.tid;
	return -1;
}

void LockStats::on_request(int64_t ns, Who who, Kind kind, uint64_t lock, bool write)
{
	const int64_t holder = blocker({who.pid, lock}, who.tid, write);
	auto [where, added] = waiting_.try_emplace({who.pid, who.tid});
	if (!added)
		++abandoned_requests_; // its acquisition is not in the trace
	where->second = {lock, kind, write, ns, who.ip, holder >= 0, holder};
}

void LockStats::keep_longest(const Wait &w)
{
	const auto later = [](const Wait &a, const Wait &b) { return a.wait > b.wait; };
	if (longest_.size() < options_.longest) {
		longest_.push_back(w);
		std::push_heap(longest_.begin(), longest_.end(), later);
	} else if (!longest_.empty() && w.wait > longest_.front().wait) {
		std::pop_heap(longest_.begin(), longest_.end(), later);
		longest_.back() = w;
		std::push_heap(longest_.begin(), longest_.end(), later);
	}
}

void LockStats::on_acquire(int64_t ns, Who who, Kind kind, uint64_t lock, bool write, int64_t status)
{
	std::optional<Request> request;
	if (const auto w = waiting_.find({who.pid, who.tid}); w != waiting_.end()) {
		if (w->second.lock == lock)
			request = w->second;
		else
			++abandoned_requests_;
		waiting_.erase(w);
	}
	Lock &l = lock_of(who.pid, lock, kind);
	if (status != 0) {
		if (counted_) {
			++l.f.failed;
			++sites_[{who.pid, who.ip, lock}].failed;
		}
		return;
	}
	if (counted_ && !request) {
		++no_request_;
	} else if (counted_) {
		Figures &site = sites_[{who.pid, who.ip, lock}];
		const int64_t wait = ns - request->ns;
		const bool contended = request->contended || wait >= options_.contended_ns;
		for (Figures *f : {&l.f, &site}) {
			f->wait.add(wait);
			f->contended += contended;
		}
		keep_longest({ns, wait, who.pid, who.tid, request->holder, lock, who.ip});
	}
	hold(ns, who, kind, lock, write, counted_);
}

void LockStats::on_trylock(int64_t ns, Who who, Kind kind, uint64_t lock, bool write, int64_t status)
{
	Lock &l = lock_of(who.pid, lock, kind);
	if (status != 0) {
		if (counted_) {
			++l.f.try_failures;
			++sites_[{who.pid, who.ip, lock}].try_failures;
		}
		return;
	}
	hold(ns, who, kind, lock, write, counted_);
}

void LockStats::hold(int64_t ns, const Who &who, Kind kind, uint64_t lock, bool write, bool counted)
{
	Lock &l = lock_of(who.pid, lock, kind);
	std::vector<Holder> &holders = holders_[{who.pid, lock}];
	const auto mine =
		std::find_if(holders.begin(), holders.end(), [&](const Holder &h) { return h.tid == who.tid; });
	if (counted) {
		++l.f.acquisitions;
		++sites_[{who.pid, who.ip, lock}].acquisitions;
		if (l.threads.size() < kThreadsKept || l.threads.count(who.tid))
			l.threads.insert(who.tid);
		else
			++l.more_threads;
	}
	if (mine != holders.end()) {
		++mine->depth;
		if (counted) {
			++l.f.recursive;
			++sites_[{who.pid, who.ip, lock}].recursive;
		}
		return;
	}
	holders.push_back({who.tid, write, 1, ns, who.ip});
}

void LockStats::release(int64_t ns, const Who &who, uint64_t lock)
{
	const auto h = holders_.find({who.pid, lock});
	if (h == holders_.end()) {
		++unknown_unlocks_;
		return;
	}
	std::vector<Holder> &holders = h->second;
	auto mine = std::find_if(holders.begin(), holders.end(), [&](const Holder &o) { return o.tid == who.tid; });
	if (mine == holders.end()) {
		// unlocked by another thread than the one that locked it: its only holder's
		if (holders.size() != 1) {
			++unknown_unlocks_;
			return;
		}
		mine = holders.begin();
	}
	if (--mine->depth == 0) {
		const int64_t held = ns - mine->since;
		if (counted_) {
			locks_[{who.pid, lock}].f.hold.add(held);
			sites_[{who.pid, mine->ip, lock}].hold.add(held);
		}
		holders.erase(mine);
		if (holders.empty())
			holders_.erase(h);
	}
}

void LockStats::on_unlock(int64_t ns, Who who, Kind kind, uint64_t lock)
{
	lock_of(who.pid, lock, kind);
	release(ns, who, lock);
}

void LockStats::on_cond_wait_begin(int64_t ns, Who who, uint64_t cond, uint64_t mutex)
{
	release(ns, who, mutex);
	cond_waiting_[{who.pid, who.tid}] = {cond, mutex, ns};
}

void LockStats::on_cond_wait_end(int64_t ns, Who who, uint64_t cond, uint64_t mutex, int64_t status)
{
	if (const auto w = cond_waiting_.find({who.pid, who.tid}); w != cond_waiting_.end()) {
		if (w->second.cond == cond && counted_) {
			Cond &c = conds_[{who.pid, cond}];
			++c.waits;
			c.wait.add(ns - w->second.ns);
			c.timeouts += status != 0;
		}
		cond_waiting_.erase(w);
	}
	hold(ns, who, Kind::mutex, mutex, true, false);
}

void LockStats::on_cond_signal(Who who, uint64_t cond, bool broadcast)
{
	if (!counted_)
		return;
	Cond &c = conds_[{who.pid, cond}];
	++(broadcast ? c.broadcasts : c.signals);
}

namespace {

const char *kind_name(LockStats::Kind k) { return k == LockStats::Kind::mutex ? "mutex" : "rwlock"; }

// total, p50, p90, p99, max of a distribution, its keys prefixed ("wait_total_ns").
void time_columns(std::vector<Column> &columns, const std::string &prefix, const std::string &title)
{
	columns.push_back({prefix + "_total_ns", title + " total", Format::duration});
	for (const char *p : {"p50", "p90", "p99", "max"})
		columns.push_back({prefix + "_" + p + "_ns", title + " " + p, Format::duration});
}
void time_cells(Distribution &d, std::vector<Cell> &row)
{
	if (!d.count()) {
		row.insert(row.end(), 5, Cell());
		return;
	}
	const Distribution::Summary s = d.summary();
	for (int64_t v : {s.total, s.p50, s.p90, s.p99, s.max})
		row.emplace_back(v);
}

std::string thread_list(const std::set<int64_t> &threads, uint64_t more)
{
	std::string s;
	for (int64_t t : threads) {
		if (!s.empty())
			s += ' ';
		s += std::to_string(t);
	}
	if (more)
		s += " (+" + std::to_string(more) + ")";
	return s;
}

// The entries of a map of figures (figures(value)), the longest total wait first, then the most acquisitions.
template <class Map, class Of>
std::vector<typename Map::value_type *> by_wait(Map &map, Of &&figures)
{
	std::vector<std::pair<std::pair<int64_t, uint64_t>, typename Map::value_type *>> keyed;
	for (auto &e : map) {
		auto &f = figures(e.second);
		keyed.push_back({{f.wait.count() ? f.wait.summary().total : 0, f.acquisitions}, &e});
	}
	std::stable_sort(keyed.begin(), keyed.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
	std::vector<typename Map::value_type *> v;
	for (auto &k : keyed)
		v.push_back(k.second);
	return v;
}

} // namespace

Report LockStats::report(int64_t begin, int64_t end, const AddressNamer &name)
{
	Report r = Report::ranged("locks", begin, end);
	const auto counts = [](std::vector<Column> &c) {
		c.push_back({"acquisitions", "Acquired", Format::integer});
		c.push_back({"contended", "Contended", Format::integer});
		c.push_back({"recursive", "Recursive", Format::integer});
		c.push_back({"trylock_failures", "Try failed", Format::integer});
		c.push_back({"failed", "Failed", Format::integer});
		time_columns(c, "wait", "Wait");
		time_columns(c, "hold", "Hold");
	};
	const auto count_cells = [](Figures &f, std::vector<Cell> &row) {
		for (uint64_t v : {f.acquisitions, f.contended, f.recursive, f.try_failures, f.failed})
			row.emplace_back(static_cast<int64_t>(v));
		time_cells(f.wait, row);
		time_cells(f.hold, row);
	};
	Table &lt = r.add(
		"per_lock", "Per lock",
		{{"pid", "PID", Format::integer}, {"lock", "Lock", Format::text}, {"kind", "Kind", Format::text}});
	counts(lt.columns);
	lt.columns.push_back({"threads", "Threads", Format::integer});
	lt.columns.push_back({"tids", "TIDs", Format::text});
	lt.top_by = "wait_total_ns";
	for (auto *e : by_wait(locks_, [](Lock &l) -> Figures & { return l.f; })) {
		const Figures &f = e->second.f;
		if (narrowed_ && !f.acquisitions && !f.try_failures && !f.failed && !f.hold.count())
			continue; // only the events of others
		std::vector<Cell> &row = lt.rows.emplace_back();
		row = {e->first.first, hex_address(e->first.second), std::string(kind_name(e->second.kind))};
		count_cells(e->second.f, row);
		row.emplace_back(static_cast<int64_t>(e->second.threads.size() + e->second.more_threads));
		row.emplace_back(thread_list(e->second.threads, e->second.more_threads));
	}

	Table &st = r.add("per_call_site", "Per call site",
	                  {{"pid", "PID", Format::integer},
	                   {"call_site", "Call site", Format::text},
	                   {"lock", "Lock", Format::text}});
	counts(st.columns);
	for (auto *e : by_wait(sites_, [](Figures &f) -> Figures & { return f; })) {
		std::vector<Cell> &row = st.rows.emplace_back();
		row = {e->first.pid, e->first.ip ? Cell(name(e->first.ip, e->first.pid)) : Cell(),
		       hex_address(e->first.lock)};
		count_cells(e->second, row);
	}

	st.top_by = "wait_total_ns";
	Table &wt = r.add("longest_waits", "Longest waits",
	                  {{"time", "Acquired at", Format::time},
	                   {"wait_ns", "Wait", Format::duration},
	                   {"pid", "PID", Format::integer},
	                   {"tid", "TID", Format::integer},
	                   {"lock", "Lock", Format::text},
	                   {"call_site", "Call site", Format::text},
	                   {"holder_tid", "Held by", Format::integer}});
	std::vector<Wait> longest = longest_;
	std::sort(longest.begin(), longest.end(), [](const Wait &a, const Wait &b) { return a.wait > b.wait; });
	for (const Wait &w : longest)
		wt.rows.push_back({w.ns, w.wait, w.pid, w.tid, hex_address(w.lock),
		                   w.ip ? Cell(name(w.ip, w.pid)) : Cell(), w.holder >= 0 ? Cell(w.holder) : Cell()});

	if (!conds_.empty()) {
		Table &ct = r.add("per_condition", "Condition variables",
		                  {{"pid", "PID", Format::integer},
		                   {"cond", "Condition", Format::text},
		                   {"waits", "Waits", Format::integer},
		                   {"timeouts", "Timed out", Format::integer},
		                   {"signals", "Signals", Format::integer},
		                   {"broadcasts", "Broadcasts", Format::integer}});
		time_columns(ct.columns, "wait", "Wait");
		for (auto &[key, c] : conds_) {
			std::vector<Cell> &row = ct.rows.emplace_back();
			row = {key.first, hex_address(key.second)};
			for (uint64_t v : {c.waits, c.timeouts, c.signals, c.broadcasts})
				row.emplace_back(static_cast<int64_t>(v));
			time_cells(c.wait, row);
		}
	}

	r.notes.push_back("contended: held by another thread when requested, or a wait of at least " +
	                  std::to_string(options_.contended_ns) + " ns");
	if (lost_)
		r.notes.push_back("the trace lost " + std::to_string(lost_) +
		                  " event(s): acquisitions, waits and holds may be missing or cut");
	if (no_request_)
		r.notes.push_back(std::to_string(no_request_) +
		                  " acquisition(s) without their request in the trace (no wait counted)");
	if (abandoned_requests_)
		r.notes.push_back(std::to_string(abandoned_requests_) +
		                  " request(s) without their acquisition in the trace (not counted)");
	if (unknown_unlocks_)
		r.notes.push_back(
			std::to_string(unknown_unlocks_) +
			" unlock(s) of a lock not known held (locked before the trace began; no hold counted)");
	uint64_t held = 0;
	for (const auto &[key, holders] : holders_)
		held += holders.size();
	if (held)
		r.notes.push_back(std::to_string(held) +
		                  " lock(s) still held at the end of the trace (no hold counted)");
	if (!waiting_.empty())
		r.notes.push_back(std::to_string(waiting_.size()) +
		                  " request(s) still waiting at the end of the trace (no wait counted)");
	return r;
}

Report analyze_locks(EventWalk &walk, const LockOptions &options, AddressNames &names, const Narrowing &narrowing)
{
	ClassCache<PreloadEvent> cache;
	UserEventNarrowing within(narrowing);
	LockStats stats(options);
	TimeRange range;
	uint64_t seen = 0;
	while (const reader::Item *it = walk.next()) {
		if (it->kind != reader::ItemKind::event) {
			stats.on_lost(it->count);
			continue;
		}
		range.see(it->ns);
		within.first_event(range.first);
		names.observe(*it);
		const PreloadEvent &p = cache.get(*it, [&] { return PreloadEvent::of(*it); });
		if (!p.is_lock())
			continue;
		++seen;
		stats.counting(within.counts(*it));
		const LockStats::Who who{p.pid(*it), p.tid(*it), PreloadEvent::address(*it, p.ip)};
		if (who.ip)
			names.see(who.pid, who.ip, AddressNames::call_site);
		const uint64_t lock = PreloadEvent::address(*it, p.lock);
		const int64_t status = int_field(*it, p.status).value_or(0);
		using K = PreloadEvent;
		using L = LockStats::Kind;
		const L kind = p.is_rwlock() ? L::rwlock : L::mutex;
		switch (p.kind) {
		case K::mutex_lock_req:
		case K::rwlock_wrlock_req:
			stats.on_request(it->ns, who, kind, lock, true);
			break;
		case K::rwlock_rdlock_req:
			stats.on_request(it->ns, who, kind, lock, false);
			break;
		case K::mutex_lock_acq:
		case K::rwlock_wrlock_acq:
			stats.on_acquire(it->ns, who, kind, lock, true, status);
			break;
		case K::rwlock_rdlock_acq:
			stats.on_acquire(it->ns, who, kind, lock, false, status);
			break;
		case K::mutex_trylock:
		case K::rwlock_trywrlock:
			stats.on_trylock(it->ns, who, kind, lock, true, status);
			break;
		case K::rwlock_tryrdlock:
			stats.on_trylock(it->ns, who, kind, lock, false, status);
			break;
		case K::mutex_unlock:
		case K::rwlock_unlock:
			stats.on_unlock(it->ns, who, kind, lock);
			break;
		case K::cond_wait_begin:
			stats.on_cond_wait_begin(it->ns, who, PreloadEvent::address(*it, p.cond), lock);
			break;
		case K::cond_wait_end:
			stats.on_cond_wait_end(it->ns, who, PreloadEvent::address(*it, p.cond), lock, status);
			break;
		case K::cond_signal:
		case K::cond_broadcast:
			stats.on_cond_signal(who, PreloadEvent::address(*it, p.cond), p.kind == K::cond_broadcast);
			break;
		default:
			break;
		}
	}
	if (!seen)
		throw std::runtime_error(
			"the trace has no lttng_ust_pthread event, which locks needs: run the program "
			"with the pthread preload helper (`tracery exec --preload pthread -- PROGRAM`, or "
			"LD_PRELOAD=libtracery-preload-pthread.so) in a session that enables "
			"'lttng_ust_pthread:*' with the vpid, vtid and ip contexts");
	return stats.report(narrowing.clamp(range.first), narrowing.clamp(range.last), names.namer());
}

} // namespace tracery::analysis
