// analysis/export/html_export.cpp — the HTML sink of the export model (see
// html_export.hpp): the page, then the events as JSON chunks, one column per
// track and per chunk.
#include "analysis/export/html_export.hpp"

#include "analysis/export/output_file.hpp"
#include "analysis/model/kernel_events.hpp"
#include "analysis/model/scheduling.hpp"
#include "analysis/model/thread_states.hpp"
#include "analysis/model/trace_env.hpp"
#include "analysis/output/json_text.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <unordered_map>
#include <vector>

namespace tracery::analysis {

namespace html_assets { // generated from src/analysis/html/ by cmake/embed_files.cmake
extern const char timeline_js[];
extern const std::size_t timeline_js_size;
extern const char timeline_css[];
extern const std::size_t timeline_css_size;
} // namespace html_assets

void append_html_json_string(std::string &out, std::string_view s)
{
	const size_t from = out.size();
	append_json_string(out, s);
	if (!std::memchr(out.data() + from, '<', out.size() - from))
		return;
	std::string tail = out.substr(from);
	out.resize(from);
	for (const char c : tail) {
		if (c == '<')
			out += "\\u003c";
		else
			out += c;
	}
}

namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;   // a chunk is written when its columns reach this
constexpr size_t kInternMaxLength = 96;           // longer strings are written where they occur
constexpr size_t kInternBudget = size_t{4} << 20; // bytes of interned strings, at most

struct StringHash {
	using is_transparent = void;
	size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// The scheduler's events, the counters' values and the thread states: kinds of the sink's own.
enum Special : uint32_t {
	sched_switch = 1,
	sched_waking,
	sched_wakeup,
	sched_wakeup_new,
	counter_int,
	counter_f64,
	thread_state
};

// A thread state as the page draws it (timeline.js knows these numbers);
// none after a thread's last switch out (dead: nothing to draw).
enum PageState : int64_t { page_running, page_runnable, page_sleeping, page_uninterruptible, page_stopped, page_idle };

std::optional<int64_t> page_state(const ThreadStates::Interval &i)
{
	switch (i.state) {
	case ThreadStates::running:
		return page_running;
	case ThreadStates::runnable:
		return page_runnable;
	case ThreadStates::blocked:
		break;
	}
	switch (blocked_of(i.prev_state)) {
	case Blocked::sleeping:
		return page_sleeping;
	case Blocked::uninterruptible:
		return page_uninterruptible;
	case Blocked::stopped:
		return page_stopped;
	case Blocked::dead:
		return std::nullopt;
	case Blocked::idle:
		break;
	}
	return page_idle;
}

// The page's own track kind: a thread's states (a child of its thread's track).
constexpr int kStateTrack = 8;

class HtmlSink final : public ExportSink {
public:
	HtmlSink(int fd, std::string what, const ExportOptions &options, std::vector<int64_t> tracked)
		: fd_(fd), what_(std::move(what)), options_(options), tracked_(std::move(tracked)),
		  states_([this](const ThreadStates::Interval &i) { state(i); })
	{
	}

	void start(const ExportClock &clock, const NameTable &names) override
	{
		names_ = &names;
		clock_ = clock;
		out_ = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		       "<meta name=\"generator\" content=\"tracery export --format html\">\n"
		       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		       "<title>Tracery timeline</title>\n<style>\n";
		out_.append(html_assets::timeline_css, html_assets::timeline_css_size);
		out_ += "</style>\n</head>\n<body>\n<script>\n";
		out_.append(html_assets::timeline_js, html_assets::timeline_js_size);
		out_ += "</script>\n";
		write_all(fd_, out_.data(), out_.size(), what_);
		out_.clear();
	}

	void track(const TrackInfo &t) override
	{
		uint32_t id = 0;
		if (t.kind == TrackKind::cpu) {
			ids_[t.uuid] = cpu_track(t.cpu);
			return; // announced as "CPU n" already
		}
		if (t.kind == TrackKind::thread) {
			const auto [it, added] = thread_ids_.try_emplace(t.tid, 0);
			if (added)
				it->second = id_of(t.uuid);
			else
				ids_[t.uuid] = it->second; // the scheduler's events named it first
			id = it->second;
		} else {
			id = id_of(t.uuid);
		}
		describe(id, t.kind, t.parent ? static_cast<int64_t>(id_of(t.parent)) : -1, t.pid, t.tid, t.cpu,
		         t.name);
	}

	void event(const ExportEvent &e) override
	{
		last_ts_ = std::max(last_ts_, e.ts);
		if (e.category != 0 && (*names_)[e.category] == "kernel") {
			const KernelEvent &k = kernel_.get(*e.item, [&] { return KernelEvent::of(*e.item); });
			if (k.kind == KernelEvent::process_exit)
				if (const auto tid = int_field(*e.item, k.tid))
					states_.on_exit(*tid);
		}
		const uint32_t kind = kind_of({e.name, e.category, static_cast<uint32_t>(e.phase), e.fields}, [&] {
			KindText k{(*names_)[e.name], (*names_)[e.category], static_cast<int>(e.phase), {}, {}};
			for (const ShownField &f : *e.fields) {
				k.fields.push_back((*names_)[f.name]);
				k.types += "iufsej"[f.type];
			}
			return k;
		});
		Column &c = start_event(id_of(e.track), e.ts, kind);
		for (const ShownField &sf : *e.fields) {
			const FieldValue v = field_value_of(*e.item, sf, scratch_);
			switch (v.type) {
			case ShownField::i64:
				append_json_number(c.v, v.i);
				break;
			case ShownField::u64:
				append_json_number(c.v, v.u);
				break;
			case ShownField::f64:
				append_json_number(c.v, v.f);
				break;
			default:
				text(c.v, v.s);
				break;
			}
			c.v += ',';
		}
		end_event(c);
		if (e.counter_track) {
			Column &cc = start_event(id_of(e.counter_track), e.ts,
			                         special(e.counter_double ? counter_f64 : counter_int));
			if (e.counter_double)
				append_json_number(cc.v, e.counter_value);
			else
				append_json_number(cc.v, e.counter_int);
			cc.v += ',';
			end_event(cc);
		}
		maybe_flush();
	}

	void sched_switch(const SchedSwitchEvent &e) override
	{
		last_ts_ = std::max(last_ts_, e.ts);
		thread_track(e.prev_tid, e.prev_comm);
		thread_track(e.next_tid, e.next_comm);
		// the CPU ran another thread than the one it switches from: that one's switch out was lost
		if (const auto was = running_.running(e.cpu); was && *was != e.prev_tid)
			states_.on_lost_switch_out(e.ts, *was);
		running_.on_switch(e.cpu, e.next_tid);
		states_.on_switch(e.ts, e.cpu, e.prev_tid, e.prev_state, e.next_tid);
		Column &c = start_event(cpu_track(e.cpu), e.ts, special(Special::sched_switch));
		text(c.v, e.prev_comm);
		c.v += ',';
		integers(c, {e.prev_tid, e.prev_prio, e.prev_state});
		text(c.v, e.next_comm);
		c.v += ',';
		integers(c, {e.next_tid, e.next_prio});
		end_event(c);
		maybe_flush();
	}

	void sched_wake(const SchedWakeEvent &e) override
	{
		last_ts_ = std::max(last_ts_, e.ts);
		thread_track(e.tid, e.comm);
		states_.on_wakeup(e.ts, e.tid,
		                  e.current_tid > 0 ? std::optional<int64_t>(e.current_tid) : std::nullopt);
		Column &c = start_event(cpu_track(e.cpu), e.ts,
		                        special(e.kind == SchedWakeEvent::waking   ? Special::sched_waking
		                                : e.kind == SchedWakeEvent::wakeup ? Special::sched_wakeup
		                                                                   : Special::sched_wakeup_new));
		text(c.v, e.comm);
		c.v += ',';
		integers(c, {e.tid, e.prio, e.target_cpu});
		end_event(c);
		maybe_flush();
	}

	void finish() override
	{
		states_.finish(last_ts_);
		flush();
	}

	// The last chunk: the counts the export reports, then the end of the page.
	void close(const ExportCounts &counts)
	{
		out_ = "<script type=\"application/json\" class=\"tracery-chunk\">{\"ev\":[],\"end\":true,\"events\":";
		append_decimal(out_, counts.events);
		out_ += ",\"discarded\":";
		append_decimal(out_, counts.discarded);
		out_ += "}</script>\n</body>\n</html>\n";
		write_all(fd_, out_.data(), out_.size(), what_);
		out_.clear();
	}

private:
	// One track's events of the current chunk: times, kinds and values, each
	// a JSON array's elements with a ',' after each.
	struct Column {
		std::string t, k, v;
		int64_t last = 0; // the time of the track's previous event
		bool started = false, in_chunk = false;
		size_t size() const { return t.size() + k.size() + v.size(); }
	};

	struct KindKey {
		uint32_t name, category, phase;
		const void *fields;
		bool operator==(const KindKey &) const = default;
	};
	struct KindHash {
		size_t operator()(const KindKey &k) const noexcept
		{
			return std::hash<const void *>{}(k.fields) ^ (size_t{k.name} * 0x9e3779b97f4a7c15ull) ^
			       (size_t{k.category} << 40) ^ k.phase;
		}
	};
	struct KindText {
		std::string_view name, category;
		int phase;
		std::vector<std::string_view> fields;
		std::string types;
	};

	// The track of thread tid: described here when the scheduler's events
	// name it before the export does (its process unknown: its own).
	uint32_t thread_track(int64_t tid, std::string_view comm)
	{
		const auto [it, added] = thread_ids_.try_emplace(tid, 0);
		if (added && tid != 0) {
			it->second = next_track_++;
			describe(it->second, TrackKind::thread, -1, tid, tid, 0, comm);
		}
		return it->second;
	}

	// An interval of a thread's states, on its state track: [state, duration, CPU or -1, waker or -1].
	void state(const ThreadStates::Interval &i)
	{
		const std::optional<int64_t> drawn = page_state(i);
		if (!drawn)
			return;
		const auto [it, added] = state_ids_.try_emplace(i.tid, 0);
		if (added) {
			it->second = next_track_++;
			const uint32_t thread = thread_track(i.tid, {});
			tracks_ += '[';
			for (const int64_t v : {int64_t{it->second}, int64_t{kStateTrack}, int64_t{thread}, int64_t{0},
			                        i.tid, int64_t{0}}) {
				append_json_number(tracks_, v);
				tracks_ += ',';
			}
			tracks_ += "\"states\"],";
		}
		Column &c = start_event(it->second, i.ts, special(Special::thread_state));
		integers(c, {*drawn, i.dur, i.cpu.value_or(-1), i.waker.value_or(-1)});
		end_event(c);
	}

	uint32_t id_of(uint64_t uuid)
	{
		const auto [it, added] = ids_.try_emplace(uuid, next_track_);
		if (added)
			++next_track_;
		return it->second;
	}

	// The track of a CPU's scheduler events (and of its kernel events when no
	// thread is known to run there): described on first use.
	uint32_t cpu_track(int64_t cpu)
	{
		const auto [it, added] = cpu_ids_.try_emplace(cpu, next_track_);
		if (added) {
			++next_track_;
			std::string name = "CPU ";
			name += std::to_string(cpu);
			describe(it->second, TrackKind::cpu, -1, 0, 0, cpu, name);
		}
		return it->second;
	}

	void describe(uint32_t id, TrackKind kind, int64_t parent, int64_t pid, int64_t tid, int64_t cpu,
	              std::string_view name)
	{
		tracks_ += '[';
		for (const int64_t v : {int64_t{id}, static_cast<int64_t>(kind), parent, pid, tid, cpu}) {
			append_json_number(tracks_, v);
			tracks_ += ',';
		}
		append_html_json_string(tracks_, name);
		tracks_ += "],";
	}

	// The column of a track in this chunk, the event's time appended.
	Column &column(uint32_t track, int64_t ts)
	{
		if (!origin_set_) {
			origin_set_ = true;
			origin_ = ts;
		}
		if (track >= columns_.size())
			columns_.resize(track + 1);
		Column &c = columns_[track];
		if (!c.started) {
			c.started = true;
			c.last = origin_;
		}
		if (!c.in_chunk) {
			c.in_chunk = true;
			touched_.push_back(track);
		}
		const size_t before = c.t.size();
		append_decimal(c.t, static_cast<int64_t>(static_cast<uint64_t>(ts) - static_cast<uint64_t>(c.last)));
		c.t += ',';
		c.last = ts;
		pending_ += c.t.size() - before;
		return c;
	}

	// An event of kind on track: its time and kind appended, then its values
	// (each followed by ','), then end_event().
	Column &start_event(uint32_t track, int64_t ts, uint32_t kind)
	{
		Column &c = column(track, ts);
		event_start_ = c.size();
		append_decimal(c.k, kind);
		c.k += ',';
		return c;
	}
	void end_event(const Column &c) { pending_ += c.size() - event_start_; }

	void integers(Column &c, std::initializer_list<int64_t> values)
	{
		for (const int64_t v : values) {
			append_json_number(c.v, v);
			c.v += ',';
		}
	}

	template <typename Describe>
	uint32_t kind_of(const KindKey &key, Describe &&describe_kind)
	{
		const auto [it, added] = kinds_.try_emplace(key, static_cast<uint32_t>(kinds_.size()));
		if (added) {
			const KindText k = describe_kind();
			kinds_json_ += '[';
			for (const std::string_view s : {k.name, k.category}) {
				append_html_json_string(kinds_json_, s);
				kinds_json_ += ',';
			}
			append_decimal(kinds_json_, k.phase);
			kinds_json_ += ",[";
			for (size_t i = 0; i < k.fields.size(); ++i) {
				if (i)
					kinds_json_ += ',';
				append_html_json_string(kinds_json_, k.fields[i]);
			}
			kinds_json_ += "],\"";
			kinds_json_ += k.types;
			kinds_json_ += "\"],";
		}
		return it->second;
	}

	uint32_t special(Special s)
	{
		static const char tag = 0; // the fields pointer of the sink's own kinds
		return kind_of({s, 0, 0, &tag}, [s] {
			switch (s) {
			case Special::sched_switch:
				return KindText{"sched_switch",
				                "sched",
				                0,
				                {"prev_comm", "prev_tid", "prev_prio", "prev_state", "next_comm",
				                 "next_tid", "next_prio"},
				                "siiisii"};
			case Special::sched_waking:
			case Special::sched_wakeup:
			case Special::sched_wakeup_new:
				return KindText{s == Special::sched_waking   ? "sched_waking"
				                : s == Special::sched_wakeup ? "sched_wakeup"
				                                             : "sched_wakeup_new",
				                "sched",
				                0,
				                {"comm", "tid", "prio", "target_cpu"},
				                "siii"};
			case Special::counter_int:
				return KindText{"value", "counter", 0, {"value"}, "i"};
			case Special::thread_state:
				return KindText{"thread_state", "state", 0, {"state", "dur", "cpu", "waker"}, "iiii"};
			case Special::counter_f64:
				break;
			}
			return KindText{"value", "counter", 0, {"value"}, "f"};
		});
	}

	// A text value: its interned string's number, or the string itself.
	void text(std::string &o, std::string_view s)
	{
		if (s.size() <= kInternMaxLength) {
			if (const auto it = strings_.find(s); it != strings_.end()) {
				append_decimal(o, it->second);
				return;
			}
			if (intern_bytes_ + s.size() <= kInternBudget) {
				intern_bytes_ += s.size() + 32; // with the table's own cost, roughly
				const auto id = static_cast<uint32_t>(strings_.size());
				strings_.emplace(std::string(s), id);
				append_html_json_string(strs_, s);
				strs_ += ',';
				append_decimal(o, id);
				return;
			}
		}
		append_html_json_string(o, s);
	}

	void maybe_flush()
	{
		if (pending_ >= kChunkBytes)
			flush();
	}

	// Writes the chunk: what it describes, then the columns of each track.
	void flush()
	{
		if (touched_.empty() && tracks_.empty() && kinds_json_.empty())
			return;
		out_ += "<script type=\"application/json\" class=\"tracery-chunk\">{";
		if (origin_set_ && !head_written_) {
			head_written_ = true;
			out_ += "\"head\":{\"clock\":";
			append_decimal(out_, clock_.id);
			out_ += ",\"origin\":\"";
			append_decimal(out_, origin_);
			out_ += "\"";
			if (clock_.id == ExportClock::monotonic) {
				out_ += ",\"realtime\":\"";
				append_decimal(out_, clock_.realtime_offset_ns);
				out_ += '"';
			}
			out_ += ",\"focus\":[";
			for (size_t i = 0; i < options_.focus.size(); ++i) {
				if (i)
					out_ += ',';
				append_html_json_string(out_, options_.focus[i]);
			}
			out_ += "],\"tracked\":[";
			for (size_t i = 0; i < tracked_.size(); ++i) {
				if (i)
					out_ += ',';
				append_decimal(out_, tracked_[i]);
			}
			out_ += "]},";
		}
		const auto list = [this](const char *key, std::string &items) {
			if (items.empty())
				return;
			items.pop_back(); // the last ','
			out_ += key;
			out_ += items;
			out_ += "],";
			items.clear();
		};
		list("\"strs\":[", strs_);
		list("\"kinds\":[", kinds_json_);
		list("\"tracks\":[", tracks_);
		out_ += "\"ev\":[";
		for (size_t i = 0; i < touched_.size(); ++i) {
			Column &c = columns_[touched_[i]];
			if (i)
				out_ += ',';
			out_ += '[';
			append_decimal(out_, touched_[i]);
			for (std::string *s : {&c.t, &c.k, &c.v}) {
				out_ += ",[";
				if (!s->empty())
					out_.append(s->data(), s->size() - 1);
				out_ += ']';
				s->clear();
				if (s->capacity() > (size_t{64} << 10))
					s->shrink_to_fit();
			}
			out_ += ']';
			c.in_chunk = false;
		}
		out_ += "]}</script>\n";
		write_all(fd_, out_.data(), out_.size(), what_);
		out_.clear();
		if (out_.capacity() > 2 * kChunkBytes)
			out_.shrink_to_fit();
		touched_.clear();
		pending_ = 0;
	}

	int fd_;
	std::string what_;
	const ExportOptions &options_;
	std::vector<int64_t> tracked_; // the processes the traces' sessions tracked
	ThreadStates states_;
	RunningTasks running_; // for the switches out the traces lost
	ClassCache<KernelEvent> kernel_;
	int64_t last_ts_ = INT64_MIN;                      // the latest event's time: where the states end
	std::unordered_map<int64_t, uint32_t> thread_ids_; // tid -> its thread's track
	std::unordered_map<int64_t, uint32_t> state_ids_;  // tid -> its state track
	const NameTable *names_ = nullptr;
	ExportClock clock_;
	std::string out_, scratch_;
	bool origin_set_ = false, head_written_ = false;
	int64_t origin_ = 0;
	uint32_t next_track_ = 0;
	std::unordered_map<uint64_t, uint32_t> ids_;    // the model's track uuids
	std::unordered_map<int64_t, uint32_t> cpu_ids_; // CPU -> its track
	std::vector<Column> columns_;                   // by track id
	std::vector<uint32_t> touched_;                 // tracks with events in this chunk, in order
	size_t pending_ = 0;                            // bytes of the chunk's columns
	size_t event_start_ = 0;                        // the column's size before the event's kind
	std::unordered_map<KindKey, uint32_t, KindHash> kinds_;
	std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> strings_;
	size_t intern_bytes_ = 0;
	std::string strs_, kinds_json_, tracks_; // described since the last chunk, each item with a ',' after
};

} // namespace

ExportCounts export_html(EventWalk &walk, const ExportOptions &options, int fd, const std::string &what)
{
	std::vector<int64_t> tracked;
	for (const auto &trace : walk.set().traces())
		for (const int64_t pid : tracked_processes(trace->cls))
			tracked.push_back(pid);
	HtmlSink sink(fd, what, options, std::move(tracked));
	const ExportCounts counts = export_events(walk, options, sink);
	sink.close(counts);
	return counts;
}

} // namespace tracery::analysis
