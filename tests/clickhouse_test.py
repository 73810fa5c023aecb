"""`tracery export --format clickhouse` and `tracery query --clickhouse` (docs/sql.md) against Debian's
clickhouse-server started on loopback in a temporary directory (tests/clickhousetest.py; skipped when it is not
installed): on the forged trace of analyze_test.py (a foreign CTF trace, losses known), the events per name equal
`tracery stats` and babeltrace2's, payloads babeltrace2's, streams and lost the SQLite export's; the same queries
print the same text from SQLite and from ClickHouse; two loads share the tables, told apart by their load; the
errors: a server that is down, one that never answers, a table with other columns, a refused insert (its rows counted as not delivered);
two servers as the two shards of a Distributed table, whose query returns the sum of both. As root with tracefs, a
kernel trace recorded through the daemon: counts as stats and babeltrace2, and system-call latency per process
from `slices` printed identically by `query` on SQLite and on ClickHouse."""
import collections
import json
import os
import re
import shutil
import socket
import tempfile
import time
import unittest

from analyze_test import forge
from clickhousetest import SERVER, SKIP, ClickHouse, free_port
from daemontest import DaemonEnv
from export_test import run_kernel_workload
from sql_test import HAVE_BT2, counts_by_name, tracery
from tracetest import Trace

SPANS = ("--span", "app:begin,app:end", "--span", "app:begin,app:end,req")


def ch_query(server, sql, *options):
    return json.loads(tracery("query", "--json", "--clickhouse", server.url(), *options, sql).stdout)


def export(server, *args, check=True):
    return tracery("export", "--format", "clickhouse", "--url", server.url(), *args, check=check)


@unittest.skipUnless(SERVER, SKIP)
class ForgedTraceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-clickhouse-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.trace = os.path.join(self.tmp, "forged")
        self.sizes = forge(self.trace)
        self.ch = ClickHouse()
        self.addCleanup(self.ch.stop)
        p = export(self.ch, *SPANS, self.trace)
        self.assertEqual(p.stdout, "")
        m = re.fullmatch(r"tracery: 10 events \((\d+) rows in all\) sent to (\S+), load = '([0-9a-f]{32})'\n",
                         p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertEqual(m.group(2), self.ch.url())
        self.load = m.group(3)
        self.db = os.path.join(self.tmp, "forged.db")
        tracery("export", "--format", "sqlite", *SPANS, self.trace, self.db)

    def test_counts_as_stats_and_babeltrace2(self):
        ours = counts_by_name(self.db)
        ch = {r["name"]: r["n"] for r in ch_query(self.ch, "SELECT name, count(*) AS n FROM events GROUP BY name")}
        self.assertEqual(ch, {name: n for name, (n, _) in self.sizes.items()})
        self.assertEqual(ch, ours)
        stats = json.loads(tracery("stats", "--json", self.trace).stdout)
        self.assertEqual(ch, {r["name"]: r["count"] for r in stats["per_event"]})
        if HAVE_BT2:
            self.assertEqual(ch, dict(collections.Counter(e["name"] for e in Trace(self.trace).events)))
            bt = sorted((e["ts"], e["name"], json.dumps(e["payload"], sort_keys=True)) for e in Trace(self.trace).events)
            rows = ch_query(self.ch, "SELECT ts, name, payload FROM events")
            self.assertEqual(sorted((r["ts"], r["name"], json.dumps(json.loads(r["payload"]), sort_keys=True))
                                    for r in rows), bt)
        # the identity columns: the trace's env hostname, one load
        ident = ch_query(self.ch, "SELECT host, load, trace, count(*) AS n FROM events GROUP BY host, load, trace")
        self.assertEqual([(r["host"], r["load"], r["n"]) for r in ident], [("forge", self.load, 10)])
        ctx = ch_query(self.ch, "SELECT context FROM events WHERE name = 'app:end' ORDER BY ts LIMIT 1")
        self.assertEqual(json.loads(ctx[0]["context"]), {"vpid": 10, "vtid": 11, "procname": "web"})

    def test_same_text_as_sqlite(self):
        for sql in ("SELECT kind, name, count(*) AS n, min(dur) AS lo, max(dur) AS hi, avg(dur) AS mean FROM slices "
                    "GROUP BY kind, name ORDER BY kind, name",
                    "SELECT id, trace, path, stream_class, instance, events FROM streams ORDER BY id",
                    "SELECT stream, ts, end_ts, events, packets FROM lost ORDER BY ts, events",
                    "SELECT tid, pid, name, start_ts, end_ts FROM threads ORDER BY tid",
                    "SELECT pid, ppid, name, threads FROM processes ORDER BY pid",
                    "SELECT id, ts, dur, span_key, tid FROM slices ORDER BY id"):
            for option in ((), ("--csv",), ("--json",)):
                sqlite = tracery("query", *option, self.db, sql).stdout
                ch = tracery("query", *option, "--clickhouse", self.ch.url(), sql).stdout
                self.assertEqual(ch, sqlite, sql)
                self.assertGreater(len(sqlite.splitlines()), 1 if option != ("--json",) else 0, sql)
        lost = ch_query(self.ch, "SELECT sum(events) AS e, sum(packets) AS p FROM lost")
        self.assertEqual((lost[0]["e"], lost[0]["p"]), (3, 1))

    def test_loads_share_the_tables(self):
        p = export(self.ch, self.trace)
        second = re.search(r"load = '([0-9a-f]{32})'", p.stderr).group(1)
        self.assertNotEqual(second, self.load)
        per_load = {r["load"]: r["n"] for r in ch_query(self.ch, "SELECT load, count(*) AS n FROM events GROUP BY load")}
        self.assertEqual(per_load, {self.load: 10, second: 10})
        spans = {r["load"]: r["n"] for r in ch_query(self.ch, "SELECT load, count(*) AS n FROM slices GROUP BY load")}
        self.assertEqual(spans, {self.load: 7})  # the second load had no --span
        # a prefix makes tables of its own
        export(self.ch, "--table-prefix", "other_", self.trace)
        self.assertEqual(ch_query(self.ch, "SELECT count(*) AS n FROM other_events"), [{"n": 10}])

    def test_errors(self):
        # nothing listens on that port
        down = tracery("export", "--format", "clickhouse", "--url", f"http://127.0.0.1:{free_port()}/default",
                       self.trace, check=False)
        self.assertEqual(down.returncode, 1)
        self.assertIn("cannot reach ClickHouse at http://127.0.0.1:", down.stderr)
        self.assertIn("is clickhouse-server running", down.stderr)
        q = tracery("query", "--clickhouse", f"http://127.0.0.1:{free_port()}/default", "SELECT 1", check=False)
        self.assertEqual(q.returncode, 1)
        self.assertIn("cannot reach ClickHouse", q.stderr)
        # a server that accepts the connection and never answers: given up after --timeout
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen()
            url = f"http://127.0.0.1:{silent.getsockname()[1]}/default"
            start = time.monotonic()
            q = tracery("query", "--clickhouse", url, "--timeout", "1", "SELECT 1", check=False)
            e = tracery("export", "--format", "clickhouse", "--url", url, "--timeout", "1", self.trace, check=False)
            self.assertLess(time.monotonic() - start, 30)
        for p in (q, e):
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"ClickHouse at {url} sent nothing for 1 s: no answer", p.stderr)
        # a table of that name with other columns
        self.ch.query("CREATE TABLE x_lost (a Int64) ENGINE = MergeTree() ORDER BY a")
        p = export(self.ch, "--table-prefix", "x_", self.trace, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("ClickHouse table default.x_lost exists with other columns: it has (a Int64), the export "
                      "writes (host String,", p.stderr)
        self.assertIn("give another --table-prefix, or drop the table", p.stderr)
        # a refused insert: an events "table" with the right columns that takes no rows (a view)
        self.ch.query("CREATE VIEW y_events AS SELECT host, session, load, trace, ts, name, cpu, pid, tid, context, "
                      "payload FROM events")
        p = export(self.ch, "--table-prefix", "y_", self.trace, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"refused the statement \(HTTP 5\d\d\): Code: 48, .*"
                                   r"Method write is not supported by storage View")
        m = re.search(r"not delivered: (\d+) rows \(a batch of 10 for y_events", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertGreaterEqual(int(m.group(1)), 10)
        self.assertIn("delivered: 0 events", p.stderr)
        # a bad URL, a bad statement
        bad = tracery("export", "--format", "clickhouse", "--url", "ftp://x/db", self.trace, check=False)
        self.assertIn("not an http:// URL", bad.stderr)
        q = tracery("query", "--clickhouse", self.ch.url(), "SELECT nothing FROM nowhere", check=False)
        self.assertEqual(q.returncode, 1)
        self.assertIn("Code: 60", q.stderr)
        self.assertIn("in the query: SELECT nothing FROM nowhere", q.stderr)


@unittest.skipUnless(SERVER, SKIP)
class TwoShardsTest(unittest.TestCase):
    def test_distributed_sum_of_both(self):
        tmp = tempfile.mkdtemp(prefix="tracery-clickhouse-shards-")
        self.addCleanup(shutil.rmtree, tmp, True)
        trace = os.path.join(tmp, "forged")
        forge(trace)
        ports = [free_port(), free_port()]
        cluster = {"two": [("127.0.0.1", p) for p in ports]}
        shards = []
        for port in ports:
            shards.append(ClickHouse(cluster, tcp_port=port))
            self.addCleanup(shards[-1].stop)
        # each machine loads its own shard: one load into the first, two into the second
        export(shards[0], "--cluster", "two", *SPANS, trace)
        export(shards[1], "--cluster", "two", *SPANS, trace)
        export(shards[1], "--cluster", "two", trace)
        local = [int(s.query("SELECT count() FROM events_local")) for s in shards]
        self.assertEqual(local, [10, 20])
        for s in shards:
            self.assertEqual(ch_query(s, "SELECT count(*) AS n FROM events"), [{"n": 30}])
            self.assertEqual(ch_query(s, "SELECT count(*) AS n FROM slices"), [{"n": 14}])
        engines = shards[0].query("SELECT name, engine FROM system.tables WHERE database = 'default' AND "
                                  "name LIKE 'events%' ORDER BY name")
        self.assertEqual(engines, "events\tDistributed\nevents_local\tMergeTree\n")
        unknown = export(shards[0], "--cluster", "nine", trace, check=False)
        self.assertIn("has no such cluster in its remote_servers", unknown.stderr)


@unittest.skipUnless(SERVER, SKIP)
class KernelTraceTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/events"):
            self.skipTest("kernel tracing needs root and tracefs; skipped")
        if not HAVE_BT2:
            self.skipTest("babeltrace2 is not installed")
        self.d = DaemonEnv(prefix="tracery-clickhouse-daemon-")
        self.addCleanup(self.d.cleanup)
        self.d.start_daemon()
        self.ch = ClickHouse()
        self.addCleanup(self.ch.stop)

    def test_kernel_trace(self):
        t = self.d.tracery
        path = os.path.join(self.d.tmp, "k")
        t("create", "k", "--output", path)
        t("enable-channel", "-k", "channel0", "--subbuf-size", "1M", "--num-subbuf", "4", "-s", "k")
        t("enable-event", "-k", "--syscall", "-a", "-s", "k")
        t("enable-event", "-k", "sched_*", "-s", "k")
        t("enable-event", "-u", "-a", "-s", "k")
        run_kernel_workload(self.d, "k", 100, timeout=60, track=True)
        db = os.path.join(self.d.tmp, "k.db")
        tracery("export", "--format", "sqlite", path, db)
        export(self.ch, path)
        ch = {r["name"]: r["n"] for r in ch_query(self.ch, "SELECT name, count(*) AS n FROM events GROUP BY name")}
        self.assertEqual(ch, counts_by_name(db))
        self.assertEqual(ch_query(self.ch, "SELECT DISTINCT host, session FROM events"),
                         [{"host": socket.gethostname(), "session": "k"}])
        self.assertEqual(ch, dict(collections.Counter(e["name"] for e in Trace(path).events)))
        self.assertGreaterEqual(ch.get("syscall_exit_getpid", 0), 100)
        latency = ("SELECT pid, name, count(*) AS calls, min(dur) AS lo, max(dur) AS hi, sum(dur) AS total, "
                   "avg(dur) AS mean FROM slices WHERE kind = 'syscall' GROUP BY pid, name "
                   "ORDER BY coalesce(pid, -1), name")
        sqlite = tracery("query", db, latency).stdout
        self.assertEqual(tracery("query", "--clickhouse", self.ch.url(), latency).stdout, sqlite)
        self.assertIn("getpid", sqlite)
        states = "SELECT state, count(*) AS n, sum(dur) AS total FROM thread_state GROUP BY state ORDER BY state"
        self.assertEqual(tracery("query", "--clickhouse", self.ch.url(), states).stdout,
                         tracery("query", db, states).stdout)


if __name__ == "__main__":
    unittest.main()
