// analysis/export/chrome_json_export.cpp — the Chrome JSON sink of the export
// model (see chrome_json_export.hpp).
#include "analysis/export/chrome_json_export.hpp"

#include "analysis/export/output_file.hpp"
#include "analysis/output/json_text.hpp"

#include <unordered_map>

namespace tracery::analysis {

namespace {

// ns as µs with three decimals.
void append_us(std::string &o, int64_t ns)
{
	if (ns < 0) {
		o += '-';
		ns = ns == INT64_MIN ? INT64_MAX : -ns;
	}
	append_decimal(o, ns / 1000);
	const auto frac = static_cast<int>(ns % 1000);
	o += '.';
	o += static_cast<char>('0' + frac / 100);
	o += static_cast<char>('0' + frac / 10 % 10);
	o += static_cast<char>('0' + frac % 10);
}

class ChromeJsonSink final : public ExportSink {
public:
	ChromeJsonSink(int fd, std::string what) : fd_(fd), what_(std::move(what)) {}

	void start(const ExportClock &, const NameTable &names) override
	{
		names_ = &names;
		out_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
		metadata("process_name", kChromeCpuPid, kChromeCpuPid, "CPUs");
	}

	void track(const TrackInfo &t) override
	{
		Row r{t.pid, t.tid};
		switch (t.kind) {
		case TrackKind::process:
			metadata("process_name", t.pid, t.pid, t.name);
			break;
		case TrackKind::thread:
			metadata("thread_name", t.pid, t.tid, t.name);
			break;
		case TrackKind::cpu:
			r = cpu_row(t.cpu);
			break;
		case TrackKind::trace:
			r = {kChromeCpuTid * 2 + static_cast<int64_t>(t.uuid & 0xffff), 0};
			r.tid = r.pid;
			metadata("process_name", r.pid, r.pid, t.name);
			break;
		case TrackKind::counter:
			if (!t.parent)
				r = {kChromeCpuPid, kChromeCpuPid};
			counter_names_[t.uuid] = std::string(t.name);
			break;
		case TrackKind::syscalls:
			break;
		case TrackKind::
			lock: // a row of its own in the process (a tid past any real one), its holds nested there
			r.tid = kChromeCpuTid * 3 + static_cast<int64_t>(t.uuid & 0xffffff);
			metadata("thread_name", r.pid, r.tid,
			         std::string(t.name) + " held by " + std::to_string(t.tid));
			break;
		}
		rows_[t.uuid] = r;
	}

	void event(const ExportEvent &e) override
	{
		const Row &r = rows_[e.track];
		const char *ph = e.phase == Phase::begin ? "B" : e.phase == Phase::end ? "E" : "i";
		head(ph, (*names_)[e.name], (*names_)[e.category], e.ts, r);
		if (e.phase == Phase::instant)
			out_ += ",\"s\":\"t\"";
		out_ += ",\"args\":{";
		bool first = true;
		for (const ShownField &sf : *e.fields) {
			if (!first)
				out_ += ',';
			first = false;
			append_json_string(out_, (*names_)[sf.name]);
			out_ += ':';
			const FieldValue v = field_value_of(*e.item, sf, scratch_);
			switch (v.type) {
			case ShownField::i64:
				append_json_number(out_, v.i);
				break;
			case ShownField::u64:
				append_json_number(out_, v.u);
				break;
			case ShownField::f64:
				append_json_number(out_, v.f);
				break;
			case ShownField::compound:
				out_ += v.s; // JSON already
				break;
			default:
				append_json_string(out_, v.s);
				break;
			}
		}
		out_ += "}}";
		if (e.counter_track) {
			const Row &cr = rows_[e.counter_track];
			head("C", counter_names_[e.counter_track], (*names_)[e.category], e.ts, cr);
			out_ += ",\"args\":{\"value\":";
			if (e.counter_double)
				append_json_number(out_, e.counter_value);
			else
				append_json_number(out_, e.counter_int);
			out_ += "}}";
		}
		maybe_flush();
	}

	void sched_switch(const SchedSwitchEvent &e) override
	{
		const Row r = cpu_row(e.cpu);
		int64_t &since = last_switch_.try_emplace(e.cpu, INT64_MIN).first->second;
		if (since == INT64_MIN) {
			head("i", "sched_switch", "sched", e.ts, r);
			out_ += ",\"s\":\"t\"";
		} else {
			head("X", e.prev_comm.empty() ? std::string_view("?") : e.prev_comm, "sched", since, r);
			out_ += ",\"dur\":";
			append_us(out_,
			          static_cast<int64_t>(static_cast<uint64_t>(e.ts) - static_cast<uint64_t>(since)));
		}
		since = e.ts;
		out_ += ",\"args\":{\"prev_comm\":";
		append_json_string(out_, e.prev_comm);
		for (const auto &[k, v] :
		     {std::pair{",\"prev_tid\":", e.prev_tid}, std::pair{",\"prev_prio\":", e.prev_prio},
		      std::pair{",\"prev_state\":", e.prev_state}}) {
			out_ += k;
			append_decimal(out_, v);
		}
		out_ += ",\"next_comm\":";
		append_json_string(out_, e.next_comm);
		for (const auto &[k, v] :
		     {std::pair{",\"next_tid\":", e.next_tid}, std::pair{",\"next_prio\":", e.next_prio}}) {
			out_ += k;
			append_decimal(out_, v);
		}
		out_ += "}}";
		maybe_flush();
	}

	void sched_wake(const SchedWakeEvent &e) override
	{
		const char *name = e.kind == SchedWakeEvent::waking   ? "sched_waking"
		                   : e.kind == SchedWakeEvent::wakeup ? "sched_wakeup"
		                                                      : "sched_wakeup_new";
		head("i", name, "sched", e.ts, cpu_row(e.cpu));
		out_ += ",\"s\":\"t\",\"args\":{\"comm\":";
		append_json_string(out_, e.comm);
		out_ += ",\"tid\":";
		append_decimal(out_, e.tid);
		out_ += ",\"prio\":";
		append_decimal(out_, e.prio);
		out_ += ",\"target_cpu\":";
		append_decimal(out_, e.target_cpu);
		out_ += "}}";
		maybe_flush();
	}

	void finish() override
	{
		out_ += "\n]}\n";
		write_all(fd_, out_.data(), out_.size(), what_);
		out_.clear();
	}

private:
	struct Row {
		int64_t pid = 0, tid = 0;
	};

	Row cpu_row(int64_t cpu)
	{
		if (cpus_named_.try_emplace(cpu, true).second)
			metadata("thread_name", kChromeCpuPid, kChromeCpuTid + cpu, "CPU " + std::to_string(cpu));
		return {kChromeCpuPid, kChromeCpuTid + cpu};
	}

	// Before each entry: one a line.
	void next_entry()
	{
		out_ += first_ ? "\n" : ",\n";
		first_ = false;
	}

	// An entry's start: {"ph":PH,"name":NAME[,"cat":CAT,"ts":TS],"pid":PID,"tid":TID (no ts when cat is null).
	void head(const char *ph, std::string_view name, const std::string_view *cat, int64_t ts, const Row &r)
	{
		next_entry();
		out_ += "{\"ph\":\"";
		out_ += ph;
		out_ += "\",\"name\":";
		append_json_string(out_, name);
		if (cat) {
			out_ += ",\"cat\":";
			append_json_string(out_, *cat);
			out_ += ",\"ts\":";
			append_us(out_, ts);
		}
		for (const auto &[key, v] : {std::pair{",\"pid\":", r.pid}, std::pair{",\"tid\":", r.tid}}) {
			out_ += key;
			append_decimal(out_, v);
		}
	}
	void head(const char *ph, std::string_view name, std::string_view cat, int64_t ts, const Row &r)
	{
		head(ph, name, &cat, ts, r);
	}

	void metadata(const char *what, int64_t pid, int64_t tid, std::string_view name)
	{
		head("M", what, nullptr, 0, {pid, tid});
		out_ += ",\"args\":{\"name\":";
		append_json_string(out_, name);
		out_ += "}}";
	}

	void maybe_flush()
	{
		if (out_.size() >= (size_t{1} << 20)) {
			write_all(fd_, out_.data(), out_.size(), what_);
			out_.clear();
		}
	}

	int fd_;
	std::string what_;
	const NameTable *names_ = nullptr;
	bool first_ = true;
	std::string out_, scratch_;
	std::unordered_map<uint64_t, Row> rows_;
	std::unordered_map<uint64_t, std::string> counter_names_;
	std::unordered_map<int64_t, bool> cpus_named_;
	std::unordered_map<int64_t, int64_t> last_switch_;
};

} // namespace

ExportCounts export_chrome_json(EventWalk &walk, const ExportOptions &options, int fd, const std::string &what)
{
	ChromeJsonSink sink(fd, what);
	return export_events(walk, options, sink);
}

} // namespace tracery::analysis
