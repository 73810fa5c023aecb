// analysis/export/proto_writer_test.cpp — the hand-written protobuf encoding
// (ProtoWriter, and the Perfetto sink's packets) against libprotobuf's
// classes generated from the same .proto: libprotobuf parses what we write
// into the values we wrote, and writes the very same bytes again.
#include <gtest/gtest.h>

#include <string>

#include "analysis/export/perfetto_export.hpp"
#include "analysis/export/proto/perfetto_trace.pb.h"
#include "analysis/export/proto_writer.hpp"

namespace {

namespace pb = tracery::perfetto;
using tracery::analysis::ProtoWriter;

std::string bytes_of(const ProtoWriter &w) { return {reinterpret_cast<const char *>(w.data()), w.size()}; }

TEST(ProtoWriter, ScalarsAsLibprotobuf)
{
	for (const int64_t v : {int64_t{0}, int64_t{1}, int64_t{127}, int64_t{128}, int64_t{-1}, INT64_MIN, INT64_MAX,
	                        int64_t{1} << 35, int64_t{-300}}) {
		ProtoWriter w;
		w.int64(2, v); // ThreadDescriptor.tid
		w.int32(1, v); // ThreadDescriptor.pid: truncated to 32 bits
		pb::ThreadDescriptor ours;
		ASSERT_TRUE(ours.ParseFromString(bytes_of(w))) << v;
		EXPECT_EQ(ours.tid(), v);
		EXPECT_EQ(ours.pid(), static_cast<int32_t>(static_cast<uint32_t>(v)));
		pb::ThreadDescriptor theirs;
		theirs.set_pid(static_cast<int32_t>(static_cast<uint32_t>(v)));
		theirs.set_tid(v);
		// field order: libprotobuf writes by number (pid 1, then tid 2)
		ProtoWriter ordered;
		ordered.int32(1, v);
		ordered.int64(2, v);
		EXPECT_EQ(bytes_of(ordered), theirs.SerializeAsString()) << v;
	}
	for (const double d : {0.0, -1.5, 1e300, 5e-324}) {
		ProtoWriter w;
		w.uint(3, UINT64_MAX);
		w.dbl(5, d);
		pb::DebugAnnotation theirs;
		theirs.set_uint_value(UINT64_MAX);
		theirs.set_double_value(d);
		EXPECT_EQ(bytes_of(w), theirs.SerializeAsString());
	}
}

TEST(ProtoWriter, StringsAreMadeValidUtf8)
{
	ProtoWriter w;
	w.string(6, std::string("ok\xff\xc3\xa9\x01", 6));
	pb::DebugAnnotation a;
	ASSERT_TRUE(a.ParseFromString(bytes_of(w)));
	EXPECT_EQ(a.string_value(), std::string("ok?\xc3\xa9\x01", 6));
}

TEST(ProtoWriter, NestedMessagesOfEverySize)
{
	// lengths of 0, 127 (one byte), 128 and 20000 (the content moved)
	for (const size_t n : {size_t{0}, size_t{125}, size_t{126}, size_t{20000}, size_t{3} << 20}) {
		ProtoWriter w;
		const size_t packet = w.begin(1);
		w.uint(8, 42);
		w.uint(10, 7);
		const size_t d = w.begin(60);
		w.string(2, std::string(n, 'x'));
		w.end(d);
		w.end(packet);
		pb::Trace theirs;
		pb::TracePacket *p = theirs.add_packet();
		p->set_timestamp(42);
		p->mutable_track_descriptor()->set_name(std::string(n, 'x'));
		p->set_trusted_packet_sequence_id(7);
		EXPECT_EQ(bytes_of(w), theirs.SerializeAsString()) << n;
	}
}

// The sink's packets, with no trace behind them (events without fields).
TEST(PerfettoSink, PacketsAsLibprotobufWritesThem)
{
	using namespace tracery::analysis;
	PerfettoSink sink(-1, "test");
	NameTable names;
	const uint32_t tick = names.id("app:tick"), call = names.id("read");
	ExportClock clock;
	clock.id = ExportClock::monotonic;
	clock.realtime_offset_ns = 1700000000000000000;
	sink.start(clock, names);
	TrackInfo t;
	t.uuid = 77;
	t.kind = TrackKind::thread;
	t.pid = 10;
	t.tid = 11;
	t.name = "web";
	sink.track(t);
	const std::vector<ShownField> none;
	ExportEvent e;
	e.ts = 1000;
	e.track = 77;
	e.name = tick;
	e.fields = &none;
	e.counter_track = 78;
	e.counter_int = -5;
	sink.event(e);
	e.ts = 1001;
	e.name = call;
	e.phase = Phase::begin;
	e.counter_track = 0;
	sink.event(e);
	SchedSwitchEvent s;
	s.ts = 1002;
	s.cpu = 3;
	s.prev_comm = "web";
	s.prev_tid = 11;
	s.prev_prio = 120;
	s.prev_state = 1;
	s.next_comm = "swapper/3";
	s.next_tid = 0;
	s.next_prio = 120;
	sink.sched_switch(s);
	SchedWakeEvent k;
	k.ts = 1003;
	k.cpu = 3;
	k.comm = "db";
	k.tid = 21;
	k.prio = 120;
	k.target_cpu = 1;
	sink.sched_wake(k);
	sink.finish();

	const std::string ours(sink.pending());
	pb::Trace trace;
	ASSERT_TRUE(trace.ParseFromString(ours));
	EXPECT_EQ(trace.SerializeAsString(), ours); // the same bytes as libprotobuf's
	ASSERT_EQ(trace.packet_size(), 5);
	const pb::TracePacket &first = trace.packet(0);
	ASSERT_TRUE(first.has_clock_snapshot());
	EXPECT_EQ(first.sequence_flags(), 1u);
	EXPECT_EQ(first.trace_packet_defaults().timestamp_clock_id(), 3u);
	EXPECT_EQ(first.clock_snapshot().primary_trace_clock(), 3u);
	EXPECT_EQ(trace.packet(1).track_descriptor().thread().thread_name(), "web");
	const pb::TracePacket &instant = trace.packet(2);
	EXPECT_EQ(instant.timestamp(), 1000u);
	EXPECT_EQ(instant.sequence_flags(), 2u);
	EXPECT_EQ(instant.trusted_packet_sequence_id(), kPerfettoSequence);
	EXPECT_EQ(instant.track_event().type(), 3u);
	EXPECT_EQ(instant.track_event().track_uuid(), 77u);
	EXPECT_EQ(instant.track_event().name_iid(), tick + 1u);
	ASSERT_EQ(instant.interned_data().event_names_size(), 1);
	EXPECT_EQ(instant.interned_data().event_names(0).name(), "app:tick");
	EXPECT_EQ(instant.track_event().extra_counter_values(0), -5);
	EXPECT_EQ(instant.track_event().extra_counter_track_uuids(0), 78u);
	EXPECT_EQ(trace.packet(3).track_event().type(), 1u);
	const pb::FtraceEventBundle &b = trace.packet(4).ftrace_events();
	EXPECT_EQ(b.cpu(), 3u);
	ASSERT_EQ(b.event_size(), 2);
	EXPECT_EQ(b.event(0).sched_switch().next_comm(), "swapper/3");
	EXPECT_EQ(b.event(0).pid(), 11u);
	EXPECT_EQ(b.event(1).sched_waking().target_cpu(), 1);
	EXPECT_EQ(b.event(1).timestamp(), 1003u);
}

} // namespace
