"""`tracery export --format sqlite` and `tracery query` (docs/sql.md): on the forged trace of analyze_test.py (times,
sizes, spans and losses known exactly), the per-event tables and the events view hold what `tracery stats` and
babeltrace2 read (counts per name, times, fields), the lost table the losses, the slices table the spans `tracery
analyze latency` pairs; the database opens in the sqlite3 shell; text, CSV and JSON output; a real program's
daemonless trace counted as babeltrace2 counts it; the errors of bad SQL, bad arguments and a damaged trace. As root
with tracefs, a kernel trace recorded through the daemon: counts as stats and babeltrace2, the system call slices
with the latencies of `tracery analyze syscalls --json`, thread states that tile each thread's time."""
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from analyze_test import forge
from daemontest import DaemonEnv
from export_test import run_kernel_workload
from tracetest import Trace, program, run_traced

HAVE_BT2 = shutil.which("babeltrace2") is not None
HAVE_SQLITE3 = shutil.which("sqlite3") is not None
EPOCH = 1700000000 * 10**9


def tracery(*args, check=True, env=None):
    p = subprocess.run([program("src", "cli", "tracery"), *args], capture_output=True, text=True, timeout=600,
                       env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"tracery {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def query(target, sql, *options):
    return json.loads(tracery("query", "--json", *options, target, sql).stdout)


def counts_by_name(target):
    return {r["name"]: r["n"] for r in query(target, "SELECT name, count(*) AS n FROM events GROUP BY name")}


class ForgedTraceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-sql-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.trace = os.path.join(self.tmp, "forged")
        self.sizes = forge(self.trace)
        self.db = os.path.join(self.tmp, "forged.db")
        p = tracery("export", "--format", "sqlite", "--span", "app:begin,app:end", "--span",
                    "app:begin,app:end,req", self.trace, self.db)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr, f"tracery: 10 events written to {self.db}\n")  # no progress bar in a pipe

    def test_counts_as_stats_and_babeltrace2(self):
        ours = counts_by_name(self.db)
        self.assertEqual(ours, {name: n for name, (n, _) in self.sizes.items()})
        stats = json.loads(tracery("stats", "--json", self.trace).stdout)
        self.assertEqual(ours, {r["name"]: r["count"] for r in stats["per_event"]})
        # the same, straight from the trace (a temporary database)
        self.assertEqual(counts_by_name(self.trace), ours)
        if HAVE_BT2:
            self.assertEqual(ours, dict(collections.Counter(e["name"] for e in Trace(self.trace).events)))

    def test_event_tables_hold_the_fields(self):
        rows = query(self.db, 'SELECT ts, cpu, pid, tid, vpid, vtid, procname, req, status FROM "app:end" ORDER BY ts')
        self.assertEqual([(r["ts"] - EPOCH, r["cpu"], r["pid"], r["tid"], r["procname"], r["req"], r["status"])
                          for r in rows],
                         [(1150, 0, 10, 11, "web", 2, "ok"), (1400, 0, 10, 11, "web", 1, "ok"),
                          (1700, 1, 20, 21, "db", 4, "ok"), (1950, 1, 20, 21, "db", 3, "ok")])
        self.assertEqual([(r["vpid"], r["vtid"]) for r in rows], [(r["pid"], r["tid"]) for r in rows])
        if HAVE_BT2:
            # every event's time and payload, as babeltrace2 reads them, in the view
            bt = sorted((e["ts"], e["name"], json.dumps(e["payload"], sort_keys=True)) for e in Trace(self.trace).events)
            view = query(self.db, "SELECT ts, name, payload FROM events")
            self.assertEqual(sorted((r["ts"], r["name"], json.dumps(json.loads(r["payload"]), sort_keys=True))
                                    for r in view), bt)
        classes = query(self.db, "SELECT name, table_name, events FROM event_classes ORDER BY name")
        self.assertEqual([(c["name"], c["table_name"], c["events"]) for c in classes],
                         [("app:begin", "app:begin", 4), ("app:end", "app:end", 4), ("app:tick", "app:tick", 2)])

    def test_streams_and_lost(self):
        lost = query(self.db, "SELECT s.path, l.ts, l.end_ts, l.events, l.packets FROM lost l "
                              "JOIN streams s ON s.id = l.stream ORDER BY l.ts, l.events")
        self.assertEqual({(os.path.basename(r["path"]), r["events"], r["packets"]) for r in lost},
                         {("stream_1", 3, 0), ("stream_1", 0, 1)})
        stats = json.loads(tracery("stats", "--json", self.trace).stdout)
        self.assertEqual({(r["stream"], r["discarded_events"], r["discarded_packets"]) for r in stats["lost"]},
                         {(os.path.join(self.trace, "stream_1"), 3, 1)})
        streams = query(self.db, "SELECT path, events FROM streams ORDER BY path")
        self.assertEqual([(os.path.basename(r["path"]), r["events"]) for r in streams],
                         [("stream_0", 6), ("stream_1", 4)])

    def test_span_slices_as_analyze_latency(self):
        by_thread = query(self.db, "SELECT dur, pid, tid, span_key FROM slices WHERE kind = 'span' AND "
                                   "name = 'app:begin to app:end' AND span_key = tid ORDER BY ts, dur")
        # per thread (analyze_test: 50 and 100 in thread 11, 650 in thread 21)
        self.assertEqual([(r["dur"], r["pid"], r["tid"]) for r in by_thread], [(650, 20, 21), (50, 10, 11),
                                                                                (100, 10, 11)])
        by_req = query(self.db, "SELECT span_key, dur FROM slices WHERE kind = 'span' AND span_key != tid "
                                "ORDER BY span_key")
        self.assertEqual([(r["span_key"], r["dur"]) for r in by_req], [("1", 400), ("2", 50), ("3", 900), ("4", 400)])
        lat = json.loads(tracery("analyze", "latency", "--begin", "app:begin", "--end", "app:end", "--match", "req",
                                 "--json", self.trace).stdout)
        self.assertEqual((lat["all"][0]["count"], lat["all"][0]["min_ns"], lat["all"][0]["max_ns"]),
                         (len(by_req), min(r["dur"] for r in by_req), max(r["dur"] for r in by_req)))
        threads = query(self.db, "SELECT tid, pid, name FROM threads ORDER BY tid")
        self.assertEqual([(r["tid"], r["pid"], r["name"]) for r in threads], [(11, 10, "web"), (21, 20, "db")])
        procs = query(self.db, "SELECT pid, name, threads FROM processes ORDER BY pid")
        self.assertEqual([(r["pid"], r["name"], r["threads"]) for r in procs], [(10, "web", 1), (20, "db", 1)])

    @unittest.skipUnless(HAVE_SQLITE3, "the sqlite3 shell is not installed")
    def test_opens_in_the_sqlite3_shell(self):
        p = subprocess.run(["sqlite3", "-bail", self.db,
                            "PRAGMA integrity_check; SELECT count(*) FROM events; "
                            "SELECT count(*) FROM \"app:tick\"; SELECT typeof(ts), typeof(req), typeof(status) "
                            "FROM \"app:end\" LIMIT 1;"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ok\n10\n2\ninteger|integer|text\n")
        schema = subprocess.run(["sqlite3", self.db, ".schema"], capture_output=True, text=True, timeout=60).stdout
        for table in ("slices", "thread_state", "threads", "processes", "streams", "lost", "event_classes"):
            self.assertIn(f"CREATE TABLE {table} ", schema)
        self.assertIn("CREATE VIEW events", schema)
        # only plain types (what DuckDB's sqlite scanner maps)
        types = set(re.findall(r'" (\w+)[,)]', schema)) | set(re.findall(r"\b(?:ts|cpu|pid|tid) (\w+)", schema))
        self.assertLessEqual(types, {"INTEGER", "REAL", "TEXT"})

    def test_outputs(self):
        sql = "SELECT name, count(*) AS n FROM events GROUP BY name ORDER BY name"
        text = tracery("query", self.db, sql).stdout
        self.assertEqual(text, "name       n\napp:begin  4\napp:end    4\napp:tick   2\n\n")
        csv = tracery("query", "--csv", self.db, sql).stdout
        self.assertEqual(csv, "name,n\napp:begin,4\napp:end,4\napp:tick,2\n")  # \r\n, read as text

    def test_errors(self):
        p = tracery("query", self.db, "SELECT nope FROM events", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, "tracery: SQLite: no such column: nope, in the query: SELECT nope FROM events\n")
        p = tracery("query", self.trace, "SELEC 1", check=False)
        self.assertIn('SQLite: near "SELEC": syntax error, in the query: SELEC 1', p.stderr)
        p = tracery("export", "--format", "sqlite", self.trace, self.db, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"'{self.db}' exists: give another OUT, or --force to replace it", p.stderr)
        self.assertEqual(tracery("export", "--format", "sqlite", "--force", self.trace, self.db).returncode, 0)
        p = tracery("export", "--format", "xls", self.trace, self.db, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("unknown format 'xls' (--format): give one of sqlite, perfetto, chrome-json", p.stderr)
        p = tracery("export", self.trace, self.db, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--format is required; see `tracery export --help`", p.stderr)
        out = os.path.join(self.tmp, "x.db")
        p = tracery("export", "--format", "sqlite", "--span", "app:begin", self.trace, out, check=False)
        self.assertIn("--span 'app:begin': give BEGIN,END or BEGIN,END,FIELD", p.stderr)
        p = tracery("export", "--format", "sqlite", "--span", "app:begin,app:nope", self.trace, out, check=False)
        self.assertIn("no event named 'app:nope' in the trace (--span app:begin,app:nope)", p.stderr)
        p = tracery("query", "--span", "app:begin,app:end,nofield", self.trace, "SELECT 1", check=False)
        self.assertIn("has no field 'nofield' (--span app:begin,app:end,nofield)", p.stderr)
        self.assertFalse(os.path.exists(out))
        p = tracery("export", "--format", "sqlite", self.trace, self.tmp, check=False)
        self.assertIn("is a directory: give the file to write last", p.stderr)

    def test_damaged_trace_names_the_file_and_offset(self):
        stream = os.path.join(self.trace, "stream_1")
        with open(stream, "r+b") as f:
            f.truncate(os.path.getsize(stream) - 300)
        out = os.path.join(self.tmp, "damaged.db")
        for args in (["export", "--format", "sqlite", self.trace, out], ["query", self.trace, "SELECT 1"]):
            p = tracery(*args, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertRegex(p.stderr, re.escape(stream) + r": at offset \d+: ")
        self.assertFalse(os.path.exists(out))  # no half-written database


@unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed")
class RealUserTraceTest(unittest.TestCase):
    def test_counts_of_a_real_program(self):
        tmp = tempfile.mkdtemp(prefix="tracery-sql-user-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "t")
        run_traced([program("tests", "all-types")], out)
        run_traced([program("tests", "signal-stress"), "2", "2000"], out)
        ours = counts_by_name(out)
        bt = dict(collections.Counter(e["name"] for e in Trace(out).events))
        self.assertEqual(ours, bt)
        stats = json.loads(tracery("stats", "--json", out).stdout)
        self.assertEqual(ours, {r["name"]: r["count"] for r in stats["per_event"]})
        # every field type of all-types is stored: the view's payload of each event is babeltrace2's, but for
        # what SQL and JSON cannot hold: unsigned 64-bit values past 2^63 - 1 (stored as their two's complement),
        # NaN and infinities (NULL, null), enumerations (their label), floats beyond 15 significant digits (SQLite's JSON writes 15)
        def same(ours, theirs):
            if isinstance(theirs, tuple):  # an enumeration: one of its labels (or its value when it has none)
                return ours in theirs[1] if theirs[1] else ours == str(theirs[0])
            if isinstance(theirs, float):
                if theirs != theirs or theirs in (float("inf"), float("-inf")):
                    return ours is None
                return ours == theirs or abs(ours - theirs) <= 1e-14 * abs(theirs)
            if isinstance(theirs, int) and not isinstance(theirs, bool) and theirs >= 2**63:
                return ours == theirs - 2**64
            return ours == theirs

        bt_events = sorted(((e["ts"], e["name"]), e["payload"]) for e in Trace(out).events
                           if e["name"].startswith("rt:"))
        view = query(out, "SELECT ts, name, payload FROM events WHERE name LIKE 'rt:%' ORDER BY ts, name")
        self.assertEqual([(r["ts"], r["name"]) for r in view], [k for k, _ in bt_events])
        for r, (key, payload) in zip(view, bt_events):
            ours = json.loads(r["payload"])
            self.assertEqual(sorted(ours), sorted(payload), key)
            for k, v in payload.items():
                self.assertTrue(same(ours[k], v), f"{key} {k}: {ours[k]!r} for {v!r}")
        # the table keeps the double itself
        self.assertIn(1.7976931348623157e308, [r["d"] for r in query(out, 'SELECT d FROM "rt:floats"')])


class KernelTraceTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/events"):
            self.skipTest("kernel tracing needs root and tracefs; skipped")
        if not HAVE_BT2:
            self.skipTest("babeltrace2 is not installed")
        self.d = DaemonEnv(prefix="tracery-sql-daemon-")
        self.addCleanup(self.d.cleanup)
        self.d.start_daemon()

    def test_kernel_trace(self):
        t = self.d.tracery
        path = os.path.join(self.d.tmp, "k")
        t("create", "k", "--output", path)
        t("enable-channel", "-k", "channel0", "--subbuf-size", "1M", "--num-subbuf", "4", "-s", "k")
        t("enable-event", "-k", "--syscall", "-a", "-s", "k")
        t("enable-event", "-k", "sched_*", "-s", "k")
        t("enable-event", "-u", "-a", "-s", "k")
        pid = run_kernel_workload(self.d, "k", 300, timeout=60, track=True)
        kernel = os.path.join(path, "kernel")
        db = os.path.join(self.d.tmp, "k.db")
        tracery("export", "--format", "sqlite", path, db)

        ours = counts_by_name(db)
        stats = json.loads(tracery("stats", "--json", path).stdout)
        # stats shows a system call's entry and exit as one call ("syscall NAME", under the entry's name), the
        # unpaired ones as rows of their own: the same events, the other names exactly
        per_event = {r["name"]: r["count"] for r in stats["per_event"]}
        calls = {n: c for n, c in per_event.items() if n.startswith("syscall ")}
        self.assertEqual(sum(c if n.endswith(")") else 2 * c for n, c in calls.items()),
                         sum(c for n, c in ours.items() if n.startswith(("syscall_entry_", "syscall_exit_"))))
        self.assertEqual({n: c for n, c in per_event.items() if n not in calls},
                         {n: c for n, c in ours.items() if not n.startswith(("syscall_entry_", "syscall_exit_"))})
        self.assertGreaterEqual(per_event.get("syscall getpid", 0), 300)
        self.assertEqual(ours, dict(collections.Counter(e["name"] for e in Trace(path).events)))
        self.assertGreater(ours.get("sched_switch", 0), 0)
        self.assertGreaterEqual(ours.get("syscall_exit_getpid", 0), 300)

        # system call slices: per thread and call, the count, shortest and longest of analyze syscalls
        an = json.loads(tracery("analyze", "syscalls", "--json", kernel).stdout)
        want = {(r["tid"], r["syscall"]): (r["count"], r["min_ns"], r["max_ns"]) for r in an["per_thread"]}
        kdb = os.path.join(self.d.tmp, "kernel.db")
        tracery("export", "--format", "sqlite", kernel, kdb)
        got = {(r["tid"], r["name"]): (r["n"], r["lo"], r["hi"]) for r in
               query(kdb, "SELECT tid, name, count(*) AS n, min(dur) AS lo, max(dur) AS hi FROM slices "
                          "WHERE kind = 'syscall' GROUP BY tid, name")}
        self.assertEqual({k: v for k, v in got.items() if want.get(k) != v},
                         {k: v for k, v in want.items() if got.get(k) != v})
        self.assertIn((pid, "getpid"), got)
        # getpid returns the pid
        rets = query(kdb, f"SELECT DISTINCT ret FROM slices WHERE name = 'getpid' AND tid = {pid}")
        self.assertEqual(rets, [{"ret": pid}])

        # thread states: per thread, intervals that follow each other without gaps or overlaps
        states = query(kdb, "SELECT tid, ts, dur, state, cpu FROM thread_state ORDER BY tid, ts")
        self.assertTrue(states)
        by_tid = collections.defaultdict(list)
        for s in states:
            self.assertIn(s["state"], ("running", "runnable", "blocked"))
            self.assertGreaterEqual(s["dur"], 0)
            self.assertEqual(s["cpu"] is not None, s["state"] == "running")
            by_tid[s["tid"]].append(s)
        for tid, rows in by_tid.items():
            gaps = [(a, b) for a, b in zip(rows, rows[1:]) if a["ts"] + a["dur"] != b["ts"]]
            if gaps:  # the thread's events, to see why (queried only then: a query per pair took 40 s)
                events = query(kdb, f"SELECT ts, name, cpu, tid, payload FROM events WHERE "
                                    f"payload LIKE '%{tid}%' OR tid = {tid} ORDER BY ts")
                self.fail(f"tid {tid}: a gap or an overlap between {gaps[0]}\n" + "\n".join(map(str, events)))
        threads = {r["tid"]: r for r in query(kdb, "SELECT tid, pid, name FROM threads")}
        self.assertIn(pid, threads)
        self.assertEqual(threads[pid]["pid"], pid)
        self.assertIn("running", {s["state"] for s in by_tid[pid]})
        t("destroy", "k")


if __name__ == "__main__":
    unittest.main()
