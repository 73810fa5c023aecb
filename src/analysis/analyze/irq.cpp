// analysis/analyze/irq.cpp — `tracery analyze irq`: how long hard IRQ handlers
// (irq_handler_entry/exit) and soft IRQs (softirq_entry/exit) ran, per IRQ
// line and per soft IRQ vector, from the entry to the exit on the same CPU.
#include "analysis/analyze/analyses.hpp"

#include <stdexcept>

namespace tracery::analysis {

namespace reader = ctf::reader;

namespace {

// The kernel's soft IRQ vectors (include/linux/interrupt.h).
std::string softirq_name(int64_t vec)
{
	static const char *const names[] = {"HI",       "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
	                                    "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU"};
	if (vec >= 0 && vec < static_cast<int64_t>(std::size(names)))
		return names[vec];
	return "vector " + std::to_string(vec);
}

} // namespace

IrqStats::IrqStats(Narrowing narrowing) : narrowing_(std::move(narrowing))
{
	if (narrowing_.options().by_task())
		throw std::invalid_argument("an IRQ runs for no process or thread: analyze irq is narrowed by --begin, "
		                            "--end and --cpu, not --pid, --tid or --procname");
}

void IrqStats::on_irq_entry(int64_t ns, int64_t cpu, int64_t irq, std::string_view name)
{
	seen_ = true;
	hard_open_[cpu] = {irq, ns};
	Line &l = hard_[irq];
	if (l.name.empty())
		l.name = name;
}

void IrqStats::on_irq_exit(int64_t ns, int64_t cpu, int64_t irq)
{
	seen_ = true;
	const auto o = hard_open_.find(cpu);
	if (o == hard_open_.end() || o->second.id != irq)
		return;
	if (counted(ns, cpu)) {
		hard_[irq].d.add(ns - o->second.ns);
		hard_all_.add(ns - o->second.ns);
	}
	hard_open_.erase(o);
}

void IrqStats::on_softirq_entry(int64_t ns, int64_t cpu, int64_t vec)
{
	seen_ = true;
	soft_open_[cpu] = {vec, ns};
}

void IrqStats::on_softirq_exit(int64_t ns, int64_t cpu, int64_t vec)
{
	seen_ = true;
	const auto o = soft_open_.find(cpu);
	if (o == soft_open_.end() || o->second.id != vec)
		return;
	if (counted(ns, cpu)) {
		Line &l = soft_[vec];
		l.name = softirq_name(vec);
		l.d.add(ns - o->second.ns);
		soft_all_.add(ns - o->second.ns);
	}
	soft_open_.erase(o);
}

Report IrqStats::report(int64_t begin, int64_t end)
{
	Report r = Report::ranged("irq", narrowing_.clamp(begin), narrowing_.clamp(end));
	for (auto [lines, key, title] :
	     {std::tuple{&hard_, "hard", "Hard IRQ handlers"}, std::tuple{&soft_, "soft", "Soft IRQs"}}) {
		Table &t = r.tables.emplace_back();
		t.key = key;
		t.title = title;
		t.columns = {{lines == &hard_ ? "irq" : "vec", lines == &hard_ ? "IRQ" : "Vector", Format::integer},
		             {"name", "Name", Format::text}};
		summary_columns(t.columns);
		t.top_by = "count";
		for (auto &[id, line] : *lines) {
			if (!line.d.count())
				continue;
			std::vector<Cell> &row = t.rows.emplace_back();
			row = {id, line.name};
			summary_cells(line.d.summary(), row);
		}
	}
	r.tables.push_back(histogram_table("hard_histogram", "Hard IRQ handler durations", hard_all_));
	r.tables.push_back(histogram_table("soft_histogram", "Soft IRQ durations", soft_all_));
	return r;
}

Report analyze_irq(EventWalk &walk, const Narrowing &narrowing)
{
	ClassCache<KernelEvent> cache;
	CpuOf cpu_of;
	IrqStats irq(narrowing);
	TimeRange range;
	for_each_event(walk, range, [&](const reader::Item &event) {
		const reader::Item *it = &event;
		irq.begin(range.first);
		const KernelEvent &f = cache.get(*it, [&] { return KernelEvent::of(*it); });
		const bool hard = f.kind == KernelEvent::irq_entry || f.kind == KernelEvent::irq_exit;
		if (!hard && f.kind != KernelEvent::softirq_entry && f.kind != KernelEvent::softirq_exit)
			return;
		const auto cpu = cpu_of(*it);
		const auto id = int_field(*it, hard ? f.irq : f.vec);
		if (!cpu || !id)
			return;
		switch (f.kind) {
		case KernelEvent::irq_entry:
			irq.on_irq_entry(it->ns, *cpu, *id, text_field(*it, f.comm));
			break;
		case KernelEvent::irq_exit:
			irq.on_irq_exit(it->ns, *cpu, *id);
			break;
		case KernelEvent::softirq_entry:
			irq.on_softirq_entry(it->ns, *cpu, *id);
			break;
		default:
			irq.on_softirq_exit(it->ns, *cpu, *id);
			break;
		}
	});
	if (!irq.any())
		throw std::runtime_error(
			"the trace has no irq_handler_entry/exit or softirq_entry/exit event, which irq "
			"needs: record a kernel trace with `tracery enable-event -k "
			"'irq_handler_*,softirq_*'`");
	return irq.report(range.first, range.last);
}

} // namespace tracery::analysis
