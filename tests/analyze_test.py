"""`tracery stats` and `tracery analyze latency` on user traces: a trace forged by hand (tests/ctf_forge.py) whose
events, sizes, times and losses are known exactly (two streams, begin/end spans per thread and by a request id,
a gap in packet_seq_num, events_discarded growing), and a daemonless trace of a real program whose event counts
babeltrace2's counter (`-c sink.utils.counter`) gives; the text and JSON forms; the errors of bad arguments and of
a damaged trace (file and offset); stats and latency narrowed (--begin/--end or --from/--to, --pid/--tid/--procname,
--cpu), --sort, --top, durations in the unit that fits them (or --fixed-units), linear histograms (--buckets,
--bucket-width, --min, --max). The kernel analyses are checked against lttng-analyses in daemon_kernel_test.py."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import uuid

from ctf_forge import BitWriter
from tracetest import program, run_traced

HAVE_BT2 = shutil.which("babeltrace2") is not None

METADATA = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace {
	major = 1; minor = 8;
	uuid = "UUID";
	byte_order = le;
	packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; uint64_t stream_instance_id; };
};
env { hostname = "forge"; domain = "ust"; tracer_name = "forge"; };
clock { name = "mono"; freq = 1000000000; offset_s = 1700000000; absolute = true; };
typealias integer { size = 64; align = 8; signed = false; map = clock.mono.value; } := uint64_clock_t;
stream {
	id = 0;
	packet.context := struct {
		uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;
		uint64_t content_size; uint64_t packet_size;
		uint64_t packet_seq_num; uint64_t events_discarded; uint32_t cpu_id;
	};
	event.header := struct { uint32_t id; uint64_clock_t timestamp; };
	event.context := struct { int32_t _vpid; int32_t _vtid; string _procname; };
};
event { name = "app:begin"; id = 1; stream_id = 0; fields := struct { uint32_t _req; }; };
event { name = "app:end"; id = 2; stream_id = 0; fields := struct { uint32_t _req; string _status; }; };
event { name = "app:tick"; id = 3; stream_id = 0; fields := struct { }; };
"""

# Per stream (instance = CPU): packets of (seq, discarded so far, events); an event is (id, time, vtid, req).
# Thread 11 (process 10, "web") on CPU 0: request 1 1000..1400 and, nested, request 2 1100..1150. Thread 21
# (process 20, "db") on CPU 1: request 3 1050..1950. Request 4 begins on CPU 0 (thread 11) at 1300 and ends on
# CPU 1 (thread 21) at 1700: paired by thread and by --match req, the spans differ.
STREAMS = {
    0: [(0, 0, [(1, 1000, 11, 1), (1, 1100, 11, 2), (2, 1150, 11, 2), (3, 1200, 11, 0)]),
        (1, 0, [(1, 1300, 11, 4), (2, 1400, 11, 1)])],
    1: [(0, 0, [(1, 1050, 21, 3), (3, 1060, 21, 0)]),
        (2, 3, [(2, 1700, 21, 4), (2, 1950, 21, 3)])],  # packet 1 lost; 3 events discarded before
}
PROCESS = {11: (10, "web"), 21: (20, "db")}


def forge(path, u=uuid.UUID("3c8a0d8e-2a4b-4c1d-9e7f-0a1b2c3d4e5f")):
    """Writes the trace; returns {event name: (count, bytes)}."""
    os.makedirs(path)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write(METADATA.replace("UUID", str(u)))
    sizes = {}
    for cpu, packets in STREAMS.items():
        data = b""
        for seq, discarded, events in packets:
            def prefix(w, content, size):
                w.int(0xC1FC1FC1, 32)
                w.raw(u.bytes)
                w.int(0, 32)
                w.int(cpu, 64)
                w.int(events[0][1], 64)
                w.int(events[-1][1], 64)
                w.int(content, 64)
                w.int(size, 64)
                w.int(seq, 64)
                w.int(discarded, 64)
                w.int(cpu, 32)
            body = BitWriter(False)
            prefix(body, 0, 0)
            for eid, t, vtid, req in events:
                start = body.nbits()
                body.int(eid, 32)
                body.int(t, 64)
                pid, name = PROCESS[vtid]
                body.int(pid, 32)
                body.int(vtid, 32)
                body.string(name)
                if eid != 3:
                    body.int(req, 32)
                if eid == 2:
                    body.string("ok")
                name = {1: "app:begin", 2: "app:end", 3: "app:tick"}[eid]
                n, b = sizes.get(name, (0, 0))
                sizes[name] = (n + 1, b + (body.nbits() - start) // 8)
            content = body.nbits()
            size = content + 256
            final = BitWriter(False)
            prefix(final, content, size)
            final.bits += body.bits[final.nbits():] + [0] * (size - content)
            data += final.to_bytes()
        with open(os.path.join(path, f"stream_{cpu}"), "wb") as f:
            f.write(data)
    return sizes


def tracery(*args, check=True):
    p = subprocess.run([program("src", "cli", "tracery"), *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"tracery {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def rows(report, table, key):
    return {row[key]: row for row in report[table]}


class AnalyzeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-analyze-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.trace = os.path.join(self.tmp, "forged")
        self.sizes = forge(self.trace)

    def test_stats_json_of_names_that_are_not_utf8(self):
        # A procname of a byte that is not UTF-8: the JSON stays valid, the byte a replacement character.
        stream = os.path.join(self.trace, "stream_0")
        with open(stream, "r+b") as f:
            data = f.read()
            f.seek(0)
            f.write(data.replace(b"web\0", b"w\xffb\0"))
        p = tracery("stats", "--json", self.trace)
        names = {r["procname"] for r in json.loads(p.stdout)["per_process"]}
        self.assertEqual(names, {"w\ufffdb", "db"})

    def test_stats_of_the_forged_trace(self):
        p = tracery("stats", "--json", self.trace)
        self.assertEqual(p.stderr, "")  # no progress bar in a pipe
        s = json.loads(p.stdout)
        self.assertEqual((s["begin_ns"], s["end_ns"]), (1700000000 * 10**9 + 1000, 1700000000 * 10**9 + 1950))
        per_event = rows(s, "per_event", "name")
        for name, (count, size) in self.sizes.items():
            self.assertEqual((per_event[name]["count"], per_event[name]["bytes"]), (count, size), name)
        self.assertEqual(per_event["app:end"]["first_ns"] - 1700000000 * 10**9, 1150)
        self.assertEqual(per_event["app:end"]["last_ns"] - 1700000000 * 10**9, 1950)
        self.assertAlmostEqual(per_event["app:begin"]["rate"], 4 / 950e-9)
        self.assertEqual(s["total"][0]["count"], 10)
        self.assertEqual(s["total"][0]["streams"], 2)
        per_cpu = rows(s, "per_cpu", "cpu")
        self.assertEqual({c: r["count"] for c, r in per_cpu.items()}, {0: 6, 1: 4})
        # CPU 1's events of thread 21 (process 20, "db") include the end of request 4
        per_process = rows(s, "per_process", "pid")
        self.assertEqual({p: (r["procname"], r["count"]) for p, r in per_process.items()},
                         {10: ("web", 6), 20: ("db", 4)})
        lost = {r["stream"].rsplit("/", 1)[1]: (r["discarded_events"], r["discarded_packets"]) for r in s["lost"]}
        self.assertEqual(lost, {"stream_1": (3, 1)})

        text = tracery("stats", self.trace).stdout
        self.assertRegex(text, r"\napp:begin +4 +[0-9.]+ +111 ")
        self.assertIn("Lost events per stream", text)

    def test_stats_narrowed(self):
        def narrowed(*options):
            s = json.loads(tracery("stats", "--json", *options, self.trace).stdout)
            return s["total"][0]["count"], {r["name"]: r["count"] for r in s["per_event"]}, s

        # thread 11 (process 10, "web") has CPU 0's 6 events, thread 21 (process 20, "db") CPU 1's 4
        for options in (["--pid", "20"], ["--tid", "21"], ["--procname", "db"], ["--cpu", "1"],
                        ["--pid", "10,20", "--procname", "db,other"]):
            total, per_event, s = narrowed(*options)
            self.assertEqual((total, per_event), (4, {"app:begin": 1, "app:tick": 1, "app:end": 2}), options)
            self.assertEqual([r["pid"] for r in s["per_process"]], [20], options)
        self.assertEqual(narrowed("--pid", "20", "--cpu", "0")[0], 0)
        # from 1100 to 1400 ns after the clock's offset: CPU 0's events but its first
        total, per_event, s = narrowed("--begin", "1700000000.0000011", "--end", "1700000000000001400")
        self.assertEqual((total, per_event), (5, {"app:begin": 2, "app:end": 2, "app:tick": 1}))
        self.assertEqual((s["begin_ns"], s["end_ns"]), (1700000000 * 10**9 + 1100, 1700000000 * 10**9 + 1400))
        # the losses are the streams', whatever the narrowing
        self.assertEqual(len(s["lost"]), 1)
        text = tracery("stats", "--procname", "db", self.trace).stdout
        self.assertRegex(text, r"\napp:end +2 ")
        self.assertNotIn("web", text)

    def test_top(self):
        s = json.loads(tracery("stats", "--json", "--top", "1", self.trace).stdout)
        self.assertEqual([r["count"] for r in s["per_event"]], [4])  # app:begin and app:end have 4, app:tick 2
        self.assertEqual([(r["pid"], r["count"]) for r in s["per_process"]], [(10, 6)])
        self.assertEqual([(r["cpu"], r["count"]) for r in s["per_cpu"]], [(0, 6)])
        self.assertEqual(s["total"][0]["count"], 10)  # totals stay whole
        self.assertIn("Per event name: the 1 largest by Count (of 3).", s["notes"])
        self.assertIn("Per process: the 1 largest by Count (of 2).", s["notes"])
        s = json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--top", "1",
                               "--json", self.trace).stdout)
        self.assertEqual([(r["pid"], r["count"]) for r in s["per_process"]], [(10, 2)])
        text = tracery("stats", "--top", "2", "--procname", "db", self.trace).stdout
        self.assertIn("Per event name: the 2 largest by Count (of 3).", text)
        self.assertRegex(text, r"\napp:end +2 ")
        p = tracery("stats", "--top", "0", self.trace, check=False)
        self.assertEqual(p.returncode, 2)

    def test_latency_narrowed(self):
        def narrowed(*options):
            s = json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--json",
                                   *options, self.trace).stdout)
            return s["all"][0]["count"], s["all"][0]["total_ns"], s

        # by thread: 11 (process 10, "web", CPU 0) ends 50 at 1150 and 100 at 1400; 21 (20, "db", CPU 1) 650 at 1700
        self.assertEqual(narrowed()[:2], (3, 800))
        for options in (["--pid", "20"], ["--tid", "21"], ["--procname", "db"], ["--cpu", "1"]):
            count, total, s = narrowed(*options)
            self.assertEqual((count, total), (1, 650), options)
            self.assertEqual([r["pid"] for r in s["per_process"]], [20], options)
        self.assertEqual(narrowed("--pid", "10")[:2], (2, 150))
        self.assertEqual(narrowed("--pid", "10", "--cpu", "1")[:2], (0, 0))
        # the spans that end from 1200 to 1500 ns after the clock's offset: 1400's
        count, total, s = narrowed("--from", "1700000000.0000012", "--to", "1700000000000001500")
        self.assertEqual((count, total), (1, 100))
        self.assertEqual((s["begin_ns"], s["end_ns"]), (1700000000 * 10**9 + 1200, 1700000000 * 10**9 + 1500))
        self.assertEqual(sum(r["count"] for r in s["histogram"]), 1)

    def test_narrowing_that_an_analysis_cannot_honour_is_refused(self):
        p = tracery("analyze", "irq", "--pid", "10", self.trace, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("an IRQ runs for no process or thread", p.stderr)
        p = tracery("stats", "--begin", "noon", self.trace, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read the --begin time 'noon'", p.stderr)
        p = tracery("stats", "--cpu", "one", self.trace, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--cpu", p.stderr)

    @unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed")
    def test_stats_counts_as_babeltrace2s_counter(self):
        out = os.path.join(self.tmp, "workload")
        run_traced([program("tests", "signal-stress"), "2", "3000"], out)
        for path in (out, self.trace):
            bt = subprocess.run(["babeltrace2", "-c", "sink.utils.counter", path], capture_output=True, text=True,
                                timeout=300)
            self.assertEqual(bt.returncode, 0, bt.stderr)
            events = int(re.search(r"(\d+) Event messages?\n", bt.stdout).group(1))
            s = json.loads(tracery("stats", "--json", path).stdout)
            self.assertEqual(s["total"][0]["count"], events, path)
            self.assertEqual(sum(r["count"] for r in s["per_event"]), events)
            self.assertGreater(events, 0)

    def test_latency_per_thread(self):
        s = json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--json",
                               self.trace).stdout)
        # By thread, the innermost open span ends first. Thread 11: begins at 1000 and 1100, ends at 1150 (50),
        # begins at 1300, ends at 1400 (100): 1000's stays open. Thread 21: begins at 1050, ends at 1700 (650), and
        # 1950 ends nothing.
        allrow = s["all"][0]
        self.assertEqual((allrow["count"], allrow["min_ns"], allrow["max_ns"]), (3, 50, 650))
        per_process = rows(s, "per_process", "pid")
        self.assertEqual((per_process[10]["count"], per_process[10]["max_ns"], per_process[10]["procname"]),
                         (2, 100, "web"))
        self.assertEqual((per_process[20]["count"], per_process[20]["min_ns"]), (1, 650))
        self.assertEqual(sum(r["count"] for r in s["histogram"]), 3)
        self.assertTrue(any("1 span(s) begun and not ended" in n for n in s["notes"]), s["notes"])
        self.assertTrue(any("1 end event(s) without a begin" in n for n in s["notes"]), s["notes"])

    def test_latency_matched_by_field(self):
        s = json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match", "req",
                               "--json", self.trace).stdout)
        # req 1: 400, req 2: 50, req 3: 900, req 4: 400
        allrow = s["all"][0]
        self.assertEqual((allrow["count"], allrow["min_ns"], allrow["max_ns"], allrow["mean_ns"]),
                         (4, 50, 900, 437.5))
        self.assertEqual((allrow["p50_ns"], allrow["p99_ns"]), (400, 900))
        self.assertEqual(s["notes"], [])
        text = tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match", "req",
                       self.trace).stdout
        self.assertIn("app:begin to app:end", text)
        # count, min, mean, max in the units that fit them; --fixed-units: all in µs
        self.assertRegex(text, r"\n +4 +50 ns +437\.5 ns +900 ns ")
        text = tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match", "req",
                       "--fixed-units", self.trace).stdout
        self.assertIn("Min (µs)", text)
        self.assertRegex(text, r"\n +4 +0\.050 +0\.438 +0\.900 ")

    def test_sort(self):
        def latency(*options):
            return json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--json",
                                      *options, self.trace).stdout)

        # per process: 10 ("web": 50 and 100) and 20 ("db": 650), in process order by default
        self.assertEqual([r["pid"] for r in latency()["per_process"]], [10, 20])
        self.assertEqual([r["pid"] for r in latency("--sort", "max")["per_process"]], [20, 10])
        self.assertEqual([r["pid"] for r in latency("--sort", "count")["per_process"]], [10, 20])
        self.assertEqual([r["pid"] for r in latency("--sort", "name")["per_process"]], [20, 10])
        s = latency("--sort", "name", "--top", "1")
        self.assertEqual([r["pid"] for r in s["per_process"]], [20])
        self.assertIn("Per process: the 1 first by Name (of 2).", s["notes"])
        # stats: per process by count (10 has 6 events, 20 has 4), by name ("db" first)
        s = json.loads(tracery("stats", "--json", "--sort", "name", self.trace).stdout)
        self.assertEqual([r["pid"] for r in s["per_process"]], [20, 10])
        self.assertEqual([r["name"] for r in s["per_event"]], ["app:begin", "app:end", "app:tick"])
        p = tracery("stats", "--sort", "latency", self.trace, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no table of stats has a column 'latency' (--sort): give name or one of", p.stderr)

    def test_linear_histograms(self):
        def histogram(*options):
            s = json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match",
                                   "req", "--json", *options, self.trace).stdout)
            return [(r["lo_ns"], r["hi_ns"], r["count"]) for r in s["histogram"]], s["notes"]

        # req 2: 50, req 1 and 4: 400, req 3: 900. By default log2 buckets.
        self.assertEqual(histogram()[0], [(32, 64, 1), (64, 128, 0), (128, 256, 0), (256, 512, 2), (512, 1024, 1)])
        # 2 buckets from 50 to 900: 425 ns wide
        self.assertEqual(histogram("--buckets", "2")[0], [(50, 475, 3), (475, 900, 1)])
        self.assertEqual(histogram("--bucket-width", "500", "--min", "0")[0], [(0, 500, 3), (500, 1000, 1)])
        self.assertEqual(histogram("--bucket-width", "1us", "--min", "0ns")[0], [(0, 1000, 4)])
        buckets, notes = histogram("--bucket-width", "100", "--min", "100", "--max", "500")
        self.assertEqual(buckets, [(100, 200, 0), (200, 300, 0), (300, 400, 0), (400, 500, 2)])
        self.assertIn("app:begin to app:end: 1 value(s) below 100 ns and 1 above 500 ns (--min, --max) not in the "
                      "histogram", notes)
        text = tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match", "req",
                       "--buckets", "2", self.trace).stdout
        self.assertRegex(text, r"\n *50 ns +475 ns +3 +#{40}\n *475 ns +900 ns +1 +#{14}\n")
        for options, message in ((["--bucket-width", "5 parsecs"], "--bucket-width takes a duration"),
                                 (["--bucket-width", "1", "--buckets", "2"], "not both"),
                                 (["--min", "2us", "--max", "1us"], "--min is above --max")):
            p = tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", *options, self.trace,
                        check=False)
            self.assertNotEqual(p.returncode, 0, options)
            self.assertIn(message, p.stderr, options)

    def test_bad_arguments_name_themselves(self):
        p = tracery("analyze", "latency", "--begin", "app:nope", "--end", "app:end", self.trace, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no event named 'app:nope' in the trace (--begin); its events are: app:begin app:end app:tick",
                      p.stderr)
        p = tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match", "nofield",
                    self.trace, check=False)
        self.assertIn("has no field 'nofield' (--match)", p.stderr)
        p = tracery("analyze", "latency", "--end", "app:end", self.trace, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--begin is required; see `tracery analyze latency --help`", p.stderr)
        p = tracery("analyze", "cpu-top", self.trace, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown analysis 'cpu-top': give cputop, syscalls, schedlat, irq, latency, locks or calls", p.stderr)
        # a user trace has no kernel events: each kernel analysis says what to record
        for kind, what in (("cputop", "sched_switch"), ("syscalls", "--syscall"), ("schedlat", "sched_switch"),
                           ("irq", "irq_handler_")):
            p = tracery("analyze", kind, self.trace, check=False)
            self.assertEqual(p.returncode, 1, kind)
            self.assertIn("tracery enable-event -k", p.stderr, kind)
            self.assertIn(what, p.stderr, kind)

    def test_damaged_trace_names_the_file_and_offset(self):
        stream = os.path.join(self.trace, "stream_1")
        size = os.path.getsize(stream)
        with open(stream, "r+b") as f:
            f.truncate(size - 300)  # the last packet cut short
        for args in (["stats"], ["analyze", "latency", "--begin", "app:begin", "--end", "app:end"]):
            p = tracery(*args, self.trace, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertRegex(p.stderr, re.escape(stream) + r": at offset \d+: ")


if __name__ == "__main__":
    unittest.main()
