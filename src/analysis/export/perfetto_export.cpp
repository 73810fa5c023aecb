// analysis/export/perfetto_export.cpp — the Perfetto sink of the export model (see
// perfetto_export.hpp). The packets of each event (track events, ftrace
// events) are encoded by hand with ProtoWriter, in field-number order as
// libprotobuf writes them; the rare ones (the first packet, track
// descriptors) are built with the classes protoc generates from
// proto/perfetto_trace.proto. Field numbers below are that file's.
#include "analysis/export/perfetto_export.hpp"

#include <map>

#include "analysis/export/proto/perfetto_trace.pb.h"
#include "analysis/export/proto_writer.hpp"

namespace tracery::analysis {

namespace pb = tracery::perfetto;

namespace {

// Field numbers (proto/perfetto_trace.proto).
namespace f {
constexpr uint32_t trace_packet = 1;
// TracePacket
constexpr uint32_t ftrace_events = 1, timestamp = 8, sequence_id = 10, track_event = 11, interned_data = 12,
		   sequence_flags = 13;
// InternedData, InternedName
constexpr uint32_t event_names = 2, annotation_names = 3, iid = 1, name = 2;
// TrackEvent
constexpr uint32_t annotations = 4, type = 9, name_iid = 10, track_uuid = 11, extra_counter_values = 12,
		   extra_counter_uuids = 31, extra_double_uuids = 45, extra_double_values = 46;
// DebugAnnotation
constexpr uint32_t a_name_iid = 1, a_uint = 3, a_int = 4, a_double = 5, a_string = 6;
// FtraceEventBundle, FtraceEvent
constexpr uint32_t b_cpu = 1, b_event = 2, e_timestamp = 1, e_pid = 2, e_sched_switch = 4, e_sched_wakeup = 17,
		   e_sched_waking = 20, e_sched_wakeup_new = 114;
} // namespace f

constexpr uint32_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;
constexpr size_t kBundleBytes = 32 * 1024; // a CPU's scheduler events per packet, at most (about)

} // namespace

struct PerfettoSink::Impl {
	Impl(int fd_, std::string what_, size_t flush_at_) : fd(fd_), what(std::move(what_)), flush_at(flush_at_) {}
	int fd;
	std::string what;
	size_t flush_at;
	ProtoWriter out;
	const NameTable *names = nullptr;
	std::vector<bool> event_name_sent, annotation_name_sent;
	std::vector<uint32_t> new_event_names, new_annotation_names; // of the packet being written
	uint32_t last_name = UINT32_MAX;                             // of the last event
	const std::vector<ShownField> *last_fields = nullptr;
	std::string scratch;
	struct Bundle {
		ProtoWriter events; // FtraceEventBundle.event fields
	};
	std::map<int64_t, Bundle> cpus;

	void maybe_flush()
	{
		if (fd >= 0 && out.size() >= flush_at) {
			write_all(fd, out.data(), out.size(), what);
			out.clear();
		}
	}

	void message_packet(const pb::TracePacket &p)
	{
		scratch.clear();
		p.SerializeToString(&scratch);
		out.bytes(f::trace_packet, scratch.data(), scratch.size());
		maybe_flush();
	}

	// The iid of name id (0 is not an iid).
	static uint64_t iid(uint32_t id) { return uint64_t{id} + 1; }

	void note(uint32_t id, std::vector<bool> &sent, std::vector<uint32_t> &fresh)
	{
		if (id >= sent.size())
			sent.resize(id + 1 + id / 2, false);
		if (!sent[id]) {
			sent[id] = true;
			fresh.push_back(id);
		}
	}

	void interned(const std::vector<uint32_t> &ids, uint32_t field)
	{
		for (const uint32_t id : ids) {
			const size_t m = out.begin(field);
			out.uint(f::iid, iid(id));
			out.string(f::name, (*names)[id]);
			out.end(m);
		}
	}

	void flush_bundle(int64_t cpu, Bundle &b)
	{
		if (!b.events.size())
			return;
		const size_t packet = out.begin(f::trace_packet);
		const size_t bundle = out.begin(f::ftrace_events);
		out.uint(f::b_cpu, static_cast<uint64_t>(cpu));
		out.raw(b.events.data(), b.events.size());
		out.end(bundle);
		out.uint(f::sequence_id, kPerfettoSequence);
		out.end(packet);
		b.events.clear();
		maybe_flush();
	}

	Bundle &bundle(int64_t cpu)
	{
		Bundle &b = cpus[cpu];
		if (b.events.size() >= kBundleBytes)
			flush_bundle(cpu, b);
		return b;
	}
};

PerfettoSink::PerfettoSink(int fd, std::string what, size_t flush_at)
	: impl_(std::make_unique<Impl>(fd, std::move(what), flush_at))
{
}

PerfettoSink::~PerfettoSink() = default;

std::string_view PerfettoSink::pending() const
{
	return {reinterpret_cast<const char *>(impl_->out.data()), impl_->out.size()};
}

void PerfettoSink::start(const ExportClock &clock, const NameTable &names)
{
	impl_->names = &names;
	// The first packet: the clocks at one instant (0 on the export's
	// clock), the sequence's incremental state cleared, its default clock.
	// BOOTTIME, on which the UI places ftrace events, is taken as equal to
	// the export's clock: a trace does not record the time the machine spent
	// suspended.
	pb::TracePacket p;
	pb::ClockSnapshot *snap = p.mutable_clock_snapshot();
	const auto add = [&](uint32_t id, uint64_t ts) {
		pb::ClockSnapshot::Clock *c = snap->add_clocks();
		c->set_clock_id(id);
		c->set_timestamp(ts);
	};
	add(ExportClock::boottime, 0);
	add(clock.id, 0);
	if (clock.id == ExportClock::monotonic)
		add(ExportClock::realtime, static_cast<uint64_t>(clock.realtime_offset_ns));
	snap->set_primary_trace_clock(clock.id);
	p.set_trusted_packet_sequence_id(kPerfettoSequence);
	p.set_sequence_flags(kIncrementalStateCleared);
	p.mutable_trace_packet_defaults()->set_timestamp_clock_id(clock.id);
	p.set_first_packet_on_sequence(true);
	impl_->message_packet(p);
}

void PerfettoSink::track(const TrackInfo &t)
{
	pb::TracePacket p;
	pb::TrackDescriptor *d = p.mutable_track_descriptor();
	d->set_uuid(t.uuid);
	if (t.parent)
		d->set_parent_uuid(t.parent);
	const std::string name = base::sanitize_utf8(t.name);
	switch (t.kind) {
	case TrackKind::process: {
		pb::ProcessDescriptor *pd = d->mutable_process();
		pd->set_pid(static_cast<int32_t>(t.pid));
		if (!name.empty())
			pd->set_process_name(name);
		break;
	}
	case TrackKind::thread: {
		pb::ThreadDescriptor *td = d->mutable_thread();
		td->set_pid(static_cast<int32_t>(t.pid));
		td->set_tid(t.tid);
		if (!name.empty())
			td->set_thread_name(name);
		break;
	}
	case TrackKind::counter:
		d->mutable_counter();
		d->set_name(name);
		break;
	default:
		d->set_name(name);
		break;
	}
	p.set_trusted_packet_sequence_id(kPerfettoSequence);
	impl_->message_packet(p);
}

void PerfettoSink::event(const ExportEvent &e)
{
	Impl &m = *impl_;
	ProtoWriter &w = m.out;
	m.new_event_names.clear();
	m.new_annotation_names.clear();
	if (e.name != m.last_name || e.fields != m.last_fields) { // else all sent with the last event
		m.note(e.name, m.event_name_sent, m.new_event_names);
		for (const ShownField &sf : *e.fields)
			m.note(sf.name, m.annotation_name_sent, m.new_annotation_names);
		m.last_name = e.name;
		m.last_fields = e.fields;
	}

	const size_t packet = w.begin(f::trace_packet);
	w.uint(f::timestamp, static_cast<uint64_t>(e.ts));
	w.uint(f::sequence_id, kPerfettoSequence);
	const size_t te = w.begin(f::track_event);
	for (const ShownField &sf : *e.fields) {
		const size_t a = w.begin(f::annotations);
		w.uint(f::a_name_iid, Impl::iid(sf.name));
		const FieldValue v = field_value_of(*e.item, sf, m.scratch);
		switch (v.type) {
		case ShownField::i64:
			w.int64(f::a_int, v.i);
			break;
		case ShownField::u64:
			w.uint(f::a_uint, v.u);
			break;
		case ShownField::f64:
			w.dbl(f::a_double, v.f);
			break;
		default:
			w.string(f::a_string, v.s);
			break;
		}
		w.end(a);
	}
	w.uint(f::type, e.phase == Phase::begin ? 1 : e.phase == Phase::end ? 2 : 3);
	w.uint(f::name_iid, Impl::iid(e.name));
	w.uint(f::track_uuid, e.track);
	if (e.counter_track && !e.counter_double)
		w.int64(f::extra_counter_values, e.counter_int);
	if (e.counter_track && !e.counter_double)
		w.uint(f::extra_counter_uuids, e.counter_track);
	if (e.counter_track && e.counter_double) {
		w.uint(f::extra_double_uuids, e.counter_track);
		w.dbl(f::extra_double_values, e.counter_value);
	}
	w.end(te);
	if (!m.new_event_names.empty() || !m.new_annotation_names.empty()) {
		const size_t in = w.begin(f::interned_data);
		m.interned(m.new_event_names, f::event_names);
		m.interned(m.new_annotation_names, f::annotation_names);
		w.end(in);
	}
	w.uint(f::sequence_flags, kNeedsIncrementalState);
	w.end(packet);
	m.maybe_flush();
}

void PerfettoSink::sched_switch(const SchedSwitchEvent &e)
{
	ProtoWriter &w = impl_->bundle(e.cpu).events;
	const size_t ev = w.begin(f::b_event);
	w.uint(f::e_timestamp, static_cast<uint64_t>(e.ts));
	w.uint(f::e_pid, static_cast<uint32_t>(e.prev_tid));
	const size_t s = w.begin(f::e_sched_switch);
	w.string(1, e.prev_comm);
	w.int32(2, e.prev_tid);
	w.int32(3, e.prev_prio);
	w.int64(4, e.prev_state);
	w.string(5, e.next_comm);
	w.int32(6, e.next_tid);
	w.int32(7, e.next_prio);
	w.end(s);
	w.end(ev);
}

void PerfettoSink::sched_wake(const SchedWakeEvent &e)
{
	ProtoWriter &w = impl_->bundle(e.cpu).events;
	const size_t ev = w.begin(f::b_event);
	w.uint(f::e_timestamp, static_cast<uint64_t>(e.ts));
	w.uint(f::e_pid, static_cast<uint32_t>(e.current_tid));
	const uint32_t field = e.kind == SchedWakeEvent::waking   ? f::e_sched_waking
	                       : e.kind == SchedWakeEvent::wakeup ? f::e_sched_wakeup
	                                                          : f::e_sched_wakeup_new;
	const size_t s = w.begin(field);
	w.string(1, e.comm);
	w.int32(2, e.tid);
	w.int32(3, e.prio);
	w.int32(4, 1);
	w.int32(5, e.target_cpu);
	w.end(s);
	w.end(ev);
}

void PerfettoSink::finish()
{
	for (auto &[cpu, b] : impl_->cpus)
		impl_->flush_bundle(cpu, b);
	if (impl_->fd >= 0 && impl_->out.size()) {
		write_all(impl_->fd, impl_->out.data(), impl_->out.size(), impl_->what);
		impl_->out.clear();
	}
}

ExportCounts export_perfetto(EventWalk &walk, const ExportOptions &options, int fd, const std::string &what)
{
	PerfettoSink sink(fd, what);
	return export_events(walk, options, sink);
}

} // namespace tracery::analysis
