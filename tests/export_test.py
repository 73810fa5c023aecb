"""`tracery export --format perfetto|chrome-json`: the Perfetto trace decodes with `protoc --decode` against the
project's .proto (src/analysis/export/proto/perfetto_trace.proto), and its packets have the structure Perfetto's trace
processor needs: the clock snapshot first, the sequence's incremental state cleared by its first packet, every track
uuid and interned name defined before its use, timestamps that never go back on a track (or a CPU's ftrace events),
one track event per user event, slices balanced per track, spans and counters where the command line asked. The
Chrome JSON parses and has one entry per event. On a trace forged by hand (tests/analyze_test.py's, whose spans are
known exactly) and, as root, on a kernel and user trace recorded through the daemon (sched_switch, sched_waking,
sched_wakeup, getpid system calls, the state dump)."""
import decimal
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from analyze_test import forge, tracery
from daemontest import DaemonEnv, go, read_line
from tracetest import program

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "analysis", "export", "proto")
HAVE_PROTOC = shutil.which("protoc") is not None
BASE = 1700000000 * 10**9  # the forged trace's clock offset (ns from the Epoch)


def decode(path):
    """The Trace in path as protoc --decode prints it, parsed: nested dicts of lists."""
    with open(path, "rb") as f:
        p = subprocess.run(["protoc", f"--proto_path={PROTO_DIR}", "--decode=tracery.perfetto.Trace",
                            "perfetto_trace.proto"], stdin=f, capture_output=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"protoc --decode failed: {p.stderr.decode()}")
    root = {}
    stack = [root]
    for line in p.stdout.decode().splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
        else:
            key, value = line.split(": ", 1)
            if value.startswith('"'):
                value = value[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1").decode("utf-8")
            elif re.fullmatch(r"-?\d+", value):
                value = int(value)
            elif value in ("true", "false"):
                value = value == "true"
            else:
                value = float(value)
            stack[-1].setdefault(key, []).append(value)
    return root.get("packet", [])


def one(msg, key, default=None):
    return msg[key][0] if key in msg else default


class Structure:
    """What a test checks of the packets, collected as it checks Perfetto's rules."""

    def __init__(self, test, packets):
        self.track_events = []  # (packet, track event)
        self.ftrace = {}  # cpu -> [ftrace events]
        self.tracks = {}  # uuid -> descriptor
        self.open = {}  # uuid -> open slices
        first = packets[0]
        test.assertIn("clock_snapshot", first, "the clock snapshot comes first")
        snap = one(first, "clock_snapshot")
        clocks = {one(c, "clock_id"): one(c, "timestamp") for c in snap["clocks"]}
        test.assertIn(6, clocks)  # BOOTTIME, the ftrace events' clock
        self.clock = one(snap, "primary_trace_clock")
        test.assertIn(self.clock, clocks)
        test.assertEqual(one(first, "trace_packet_defaults")["timestamp_clock_id"][0], self.clock)
        cleared = set()
        event_iids, annotation_iids = set(), set()
        last_ts = {}
        for i, p in enumerate(packets):
            seq = one(p, "trusted_packet_sequence_id")
            test.assertIsNotNone(seq, f"packet {i} has no sequence id")
            flags = one(p, "sequence_flags", 0)
            if seq not in cleared:
                test.assertTrue(flags & 1, f"packet {i} is its sequence's first and does not clear its state")
                cleared.add(seq)
            for names, iids in (("event_names", event_iids), ("debug_annotation_names", annotation_iids)):
                for n in one(p, "interned_data", {}).get(names, []):
                    iids.add(one(n, "iid"))
            if "track_descriptor" in p:
                d = one(p, "track_descriptor")
                uuid = one(d, "uuid")
                if "parent_uuid" in d:
                    test.assertIn(one(d, "parent_uuid"), self.tracks, f"packet {i}: parent before its child")
                self.tracks[uuid] = d
            if "track_event" in p:
                e = one(p, "track_event")
                test.assertTrue(flags & 2, f"packet {i} uses interned names without saying so")
                uuid = one(e, "track_uuid")
                test.assertIn(uuid, self.tracks, f"packet {i}: track {uuid} used before it is described")
                for c in e.get("extra_counter_track_uuids", []) + e.get("extra_double_counter_track_uuids", []):
                    test.assertIn("counter", self.tracks.get(c, {}), f"packet {i}: counter track {c} undescribed")
                test.assertIn(one(e, "name_iid"), event_iids, f"packet {i}: event name iid not interned before")
                for a in e.get("debug_annotations", []):
                    test.assertIn(one(a, "name_iid"), annotation_iids, f"packet {i}: annotation name not interned")
                ts = one(p, "timestamp")
                test.assertGreaterEqual(ts, last_ts.get(uuid, 0), f"packet {i}: time goes back on track {uuid}")
                last_ts[uuid] = ts
                kind = one(e, "type")
                if kind == 1:
                    self.open[uuid] = self.open.get(uuid, 0) + 1
                elif kind == 2:
                    test.assertGreater(self.open.get(uuid, 0), 0, f"packet {i}: a slice ends that never began")
                    self.open[uuid] -= 1
                self.track_events.append((p, e))
            if "ftrace_events" in p:
                b = one(p, "ftrace_events")
                cpu = one(b, "cpu")
                for ev in b.get("event", []):
                    ts = one(ev, "timestamp")
                    test.assertGreaterEqual(ts, last_ts.get(("cpu", cpu), 0), f"packet {i}: CPU {cpu} goes back")
                    last_ts[("cpu", cpu)] = ts
                    self.ftrace.setdefault(cpu, []).append(ev)
        self.names = {}
        for p in packets:
            for n in one(p, "interned_data", {}).get("event_names", []):
                self.names[one(n, "iid")] = one(n, "name")

    def events_named(self, name):
        return [(p, e) for p, e in self.track_events if self.names[one(e, "name_iid")] == name]


def chrome_entries(path):
    with open(path) as f:
        doc = json.load(f, parse_float=decimal.Decimal)  # µs from the Epoch with ns: more digits than a double's
    return doc["traceEvents"]


@unittest.skipUnless(HAVE_PROTOC, "protoc is not installed")
class ForgedExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-export-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.trace = os.path.join(self.tmp, "forged")
        forge(self.trace)

    def test_perfetto(self):
        out = os.path.join(self.tmp, "out.perfetto-trace")
        p = tracery("export", "--format", "perfetto", "--span", "app:begin,app:end", "--counter", "app:begin:req",
                    self.trace, out)
        self.assertIn("10 events written to", p.stderr)
        s = Structure(self, decode(out))
        self.assertEqual(s.clock, 1)  # the forged clock is no monotonic clock: ns from the Epoch (REALTIME)
        self.assertEqual(len(s.track_events), 10)  # one per event
        self.assertEqual(s.ftrace, {})
        threads = {one(d["thread"][0], "tid"): d["thread"][0] for d in s.tracks.values() if "thread" in d}
        self.assertEqual({t: (one(d, "pid"), one(d, "thread_name")) for t, d in threads.items()},
                         {11: (10, "web"), 21: (20, "db")})
        # spans per thread, innermost first: thread 11's begin at 1000 stays open, thread 21's end at 1950 is an
        # instant (nothing open)
        begins = s.events_named("app:begin")
        self.assertEqual([(one(p, "timestamp") - BASE, one(e, "type")) for p, e in begins],
                         [(1000, 1), (1050, 1), (1100, 1), (1150, 2), (1300, 1), (1400, 2), (1700, 2)])
        ends = s.events_named("app:end")
        self.assertEqual([(one(p, "timestamp") - BASE, one(e, "type")) for p, e in ends], [(1950, 3)])
        self.assertEqual(sorted(s.open.values()), [0, 1])
        # the fields as debug annotations, the counter on app:begin
        annotation_names = {}
        for p in decode(out):
            for n in one(p, "interned_data", {}).get("debug_annotations_names", []) + \
                    one(p, "interned_data", {}).get("debug_annotation_names", []):
                annotation_names[one(n, "iid")] = one(n, "name")
        p, e = ends[0]
        fields = {annotation_names[one(a, "name_iid")]: a for a in e["debug_annotations"]}
        self.assertEqual(one(fields["req"], "uint_value"), 3)
        self.assertEqual(one(fields["status"], "string_value"), "ok")
        counters = [one(e, "extra_counter_values") for p, e in s.track_events if "extra_counter_values" in e]
        self.assertEqual(counters, [1, 3, 2, 4])
        counter_tracks = [d for d in s.tracks.values() if "counter" in d]
        self.assertEqual({one(d, "name") for d in counter_tracks}, {"app:begin.req"})

    def test_chrome_json(self):
        out = os.path.join(self.tmp, "out.json")
        tracery("export", "--format", "chrome-json", "--span", "app:begin,app:end", "--counter", "app:begin:req",
                self.trace, out)
        entries = chrome_entries(out)
        events = [e for e in entries if e["ph"] not in ("M", "C")]
        self.assertEqual(len(events), 10)  # one per event
        self.assertEqual(len([e for e in entries if e["ph"] == "C"]), 4)  # one per app:begin, the counter
        self.assertEqual(sorted((e["ts"], e["ph"], e["tid"]) for e in events if e["name"] == "app:begin"),
                         [(decimal.Decimal(BASE + t) / 1000, ph, tid) for t, ph, tid in
                          [(1000, "B", 11), (1050, "B", 21), (1100, "B", 11), (1150, "E", 11), (1300, "B", 11),
                           (1400, "E", 11), (1700, "E", 21)]])
        end = [e for e in events if e["name"] == "app:end"][0]
        self.assertEqual((end["ph"], end["args"]), ("i", {"req": 3, "status": "ok"}))
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in entries if e["name"] == "thread_name"}
        self.assertEqual(names[(10, 11)], "web")
        self.assertEqual(names[(20, 21)], "db")

    def test_hostile_strings_stay_valid(self):
        # a procname of a quote, a control character and a byte that is not UTF-8
        with open(os.path.join(self.trace, "stream_0"), "r+b") as f:
            data = f.read()
            f.seek(0)
            f.write(data.replace(b"web\0", b'"\x01\xff\0'))
        out = os.path.join(self.tmp, "out.json")
        tracery("export", "--format", "chrome-json", self.trace, out)
        names = {e["tid"]: e["args"]["name"] for e in chrome_entries(out) if e["name"] == "thread_name"}
        self.assertEqual(names[11], '"\x01?')
        out = os.path.join(self.tmp, "out.perfetto-trace")
        tracery("export", "--format", "perfetto", self.trace, out)
        s = Structure(self, decode(out))
        names = {one(d["thread"][0], "tid"): one(d["thread"][0], "thread_name") for d in s.tracks.values()
                 if "thread" in d}
        self.assertEqual(names[11], '"\x01?')

    def test_bad_arguments(self):
        out = os.path.join(self.tmp, "x")
        for args, message in ((["--span", "app:nope,app:end"], "no event named 'app:nope' in the trace (--span)"),
                              (["--span", "app:begin"], "give the event that begins a span and the one"),
                              (["--counter", "app:end:status"], "has no integer or floating point field 'status'"),
                              (["--counter", "app:tick:nofield"], "has no integer or floating point field")):
            p = tracery("export", "--format", "perfetto", *args, self.trace, out, check=False)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn(message, p.stderr, args)
            self.assertFalse(os.path.exists(out), args)  # no half-written file
        p = tracery("export", "--format", "svg", self.trace, out, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("unknown format 'svg' (--format)", p.stderr)
        p = tracery("export", "--format", "perfetto", self.trace, check=False)  # no OUT: the trace would be it
        self.assertEqual(p.returncode, 1)
        self.assertIn("is a directory: give the file to write last", p.stderr)

    def test_damaged_trace_names_the_file_and_offset(self):
        stream = os.path.join(self.trace, "stream_1")
        with open(stream, "r+b") as f:
            f.truncate(os.path.getsize(stream) - 300)
        out = os.path.join(self.tmp, "x")
        p = tracery("export", "--format", "perfetto", self.trace, out, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, re.escape(stream) + r": at offset \d+: ")
        self.assertFalse(os.path.exists(out))


def record_kernel_workload(d):
    """Records, through the daemon of DaemonEnv d, a kernel and user trace of kernel-workload (200 getpid calls
    after a kw:before_getpid event each, 100 round trips between two threads); returns (its path, the pid)."""
    t = d.tracery
    path = os.path.join(d.tmp, "k")
    t("create", "k", "--output", path)
    t("enable-event", "-u", "kw:*", "-s", "k")
    t("add-context", "-u", "-s", "k", "-t", "vpid", "-t", "vtid", "-t", "procname")
    t("enable-event", "-k", "sched_switch,sched_waking,sched_wakeup,sched_process_fork,sched_process_exec",
      "-s", "k")
    t("enable-event", "-k", "--syscall", "getpid", "-s", "k")
    return path, run_kernel_workload(d, "k", 200)


def run_kernel_workload(d, session, calls, timeout=30, track=False):
    """Runs kernel-workload (calls getpid calls, 100 round trips) while session records; returns its pid.
    track: the session's kernel events only of the workload (a busy machine's others make a large trace), each
    with its thread."""
    p, pid = d.spawn_registered([program("tests", "kernel-workload"), str(calls), "100"])
    # The workload and a CPU-bound process share one CPU, which is then never idle: a kernel may not record
    # the switches away from the idle task, and a thread switched in unrecorded is not known to run there, so
    # its system calls would be nobody's (as daemon_kernel_test's LttngAnalysesTest explains).
    cpu = max(os.sched_getaffinity(0))
    hog = d.spawn([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
    os.sched_setaffinity(hog.pid, {cpu})
    os.sched_setaffinity(pid, {cpu})  # its main thread, and the thread it makes later
    if track:
        # A tracked session records a switch only when a tracked task is one of its two: the thread each event
        # comes with is the one certain attribution (src/kernel/README.md, "The missing switch")
        d.tracery("track", "-k", "--pid", str(pid), "-s", session)
        d.tracery("add-context", "-k", "-t", "tid", "-s", session)
    d.tracery("start", session)
    go(p)
    read_line(p, "done")
    hog.kill()
    hog.wait(timeout=30)
    p.wait(timeout=timeout)
    d.tracery("stop", session)
    return pid


@unittest.skipUnless(HAVE_PROTOC, "protoc is not installed")
class KernelExportTest(unittest.TestCase):
    """A kernel and user trace of kernel-workload: getpid calls after a kw:before_getpid event each, and round
    trips between two threads (context switches)."""

    def setUp(self):
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/events"):
            self.skipTest("kernel tracing needs root and tracefs; skipped")
        self.d = DaemonEnv(prefix="tracery-export-daemon-")
        self.addCleanup(self.d.cleanup)
        self.d.start_daemon()

    def test_kernel_and_user_trace(self):
        path, pid = record_kernel_workload(self.d)
        stats = json.loads(tracery("stats", "--json", path).stdout)
        per_event = {r["name"]: r["count"] for r in stats["per_event"]}
        total = stats["total"][0]["count"]

        out = os.path.join(self.d.tmp, "k.perfetto-trace")
        printed = tracery("export", "--format", "perfetto", "--counter", "kw:before_getpid:i", path, out).stderr
        self.assertIn(f"{total} events written to", printed)
        s = Structure(self, decode(out))
        self.assertEqual(s.clock, 3)  # CLOCK_MONOTONIC, the traces' clock
        sched = sum(per_event.get(n, 0) for n in ("sched_switch", "sched_waking", "sched_wakeup"))
        self.assertGreater(per_event["sched_switch"], 200)
        self.assertEqual(sum(len(v) for v in s.ftrace.values()), sched)
        self.assertEqual(len(s.track_events), total - sched)  # every other event once (no call left unfinished)
        self.assertEqual(len(s.events_named("kw:before_getpid")), 200)
        switches = [ev for evs in s.ftrace.values() for ev in evs if "sched_switch" in ev]
        self.assertEqual(len(switches), per_event["sched_switch"])
        comms = {one(one(ev, "sched_switch"), "next_comm") for ev in switches}
        self.assertTrue({"kw-ping", "kw-pong"} <= comms, comms)
        # getpid calls: slices on the workload's threads' system call tracks, balanced
        getpid = s.events_named("getpid")
        self.assertGreaterEqual(len([e for p, e in getpid if one(e, "type") == 1]), 200)
        for p, e in getpid:
            track = s.tracks[one(e, "track_uuid")]
            self.assertEqual(one(track, "name"), "syscalls")
            self.assertIn(one(track, "parent_uuid"), s.tracks)
        thread_of = {one(d, "uuid"): one(d["thread"][0], "tid") for d in s.tracks.values() if "thread" in d}
        self.assertIn(pid, thread_of.values())
        user = s.events_named("kw:before_getpid")
        self.assertEqual({thread_of[one(e, "track_uuid")] for p, e in user}, {pid})
        self.assertEqual([one(e, "extra_counter_values") for p, e in user], list(range(200)))

        out = os.path.join(self.d.tmp, "k.json")
        tracery("export", "--format", "chrome-json", path, out)
        entries = chrome_entries(out)
        self.assertEqual(len([e for e in entries if e["ph"] != "M"]), total)  # one per event
        cpu_rows = {e["tid"] for e in entries if e.get("cat") == "sched"}
        self.assertTrue(all(tid >= 1 << 30 for tid in cpu_rows))
        self.assertGreater(len([e for e in entries if e["ph"] == "X"]), 200)


if __name__ == "__main__":
    unittest.main()
