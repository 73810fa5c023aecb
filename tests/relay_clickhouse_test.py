"""relay_clickhouse_test: `tracery-relayd --clickhouse URL` against Debian's clickhouse-server started on loopback
in a temporary directory (tests/clickhousetest.py; skipped when it is not installed). Two traceryd stream a session
each to one relay: each session's events in ClickHouse (told apart by host, session and load) are what its daemon
emitted, what `tracery stats` counts in the relay's disk copy, and what the streams rows say; a server that goes
away mid-session: the events after it counted as refused in the relay's log, the relay still serving, the disk copy
whole; a queue too small for any packet: each packet the relay wrote counted as dropped from the sink; a server that
is down when the relay starts: a clear error."""
import json
import os
import re
import shutil
import subprocess
import time
import unittest

from clickhousetest import SERVER, SKIP, ClickHouse, free_port
from daemontest import DaemonEnv
from relaytest import Relay
from tracetest import program


def ch_json(server, sql):
    return [json.loads(line) for line in server.query(sql + " FORMAT JSONEachRow").splitlines()]


def stats_events(env, path):
    """`tracery stats` of a trace: its events."""
    stats = json.loads(env.tracery("stats", "--json", path).stdout)
    return sum(r["count"] for r in stats["per_event"])


class Sender:
    """A traceryd of its own sending session `name` to the relay."""

    def __init__(self, test, name, relay):
        self.d = DaemonEnv(prefix="tracery-relay-ch-")
        test.addCleanup(self.d.cleanup)
        self.d.start_daemon()
        self.name, self.relay = name, relay
        self.d.tracery("create", name, "--set-url", f"net://127.0.0.1:{relay.port}")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", name)

    def emit(self, n):
        """n rounds of daemon-emitter (2 n events), then the session stopped: all its packets sent."""
        self.d.tracery("start", self.name)
        out = self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        assert f"done {n}" in out, out
        self.d.tracery("stop", self.name)

    def end(self):
        """The session destroyed; the relay's line of its end in ClickHouse: (its directory, the line)."""
        self.d.tracery("destroy", self.name)
        self.relay.wait_log(f"/{self.name}-", "ended with BYE")
        dirs = self.relay.sessions(self.name)
        assert len(dirs) == 1, dirs
        rel = os.path.relpath(dirs[0], self.relay.output)
        self.relay.wait_log(f"{rel}: ClickHouse sink: ", "events inserted", timeout=60)
        line = [l for l in self.relay.text().splitlines() if f"{rel}: ClickHouse sink: " in l and "inserted" in l]
        return dirs[0], line[0]


@unittest.skipUnless(SERVER, SKIP)
@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayClickHouseTest(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tracery-relay-ch-{os.getpid()}")
        os.makedirs(self.tmp, exist_ok=True)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.ch = ClickHouse()
        self.addCleanup(self.ch.stop)

    def relay(self, *args):
        r = Relay(self.tmp, args=("--clickhouse", self.ch.url(), *args))
        self.addCleanup(r.stop)
        return r

    def test_two_daemons_counts_per_session(self):
        relay = self.relay("--table-prefix", "r_")
        a, b = Sender(self, "alpha", relay), Sender(self, "beta", relay)
        a.emit(3000)
        b.emit(5000)
        a.emit(1000)
        (dir_a, line_a), (dir_b, line_b) = a.end(), b.end()
        host = os.path.basename(os.path.dirname(dir_a))  # the HELLO's, which the relay's directory is named after
        self.assertEqual(host, os.path.basename(os.path.dirname(dir_b)))
        rows = ch_json(self.ch, "SELECT host, session, load, count() AS n FROM r_events GROUP BY host, session, load "
                                "ORDER BY session")
        self.assertEqual([(r["host"], r["session"], int(r["n"])) for r in rows],
                         [(host, "alpha", 8000), (host, "beta", 10000)])
        # as the disk copy and the relay's log say, one load each
        self.assertEqual(int(rows[0]["n"]), stats_events(a.d, dir_a))
        self.assertEqual(int(rows[1]["n"]), stats_events(b.d, dir_b))
        for row, line in ((rows[0], line_a), (rows[1], line_b)):
            self.assertIn(f"{row['n']} events inserted (load = '{row['load']}')", line)
            self.assertNotIn("refused", line)
            self.assertNotIn("dropped", line)
        # the streams rows count the same events; their paths are the disk copy's stream files
        streams = ch_json(self.ch, "SELECT session, sum(events) AS n, count() AS k FROM r_streams GROUP BY session "
                                   "ORDER BY session")
        self.assertEqual([(r["session"], int(r["n"])) for r in streams], [("alpha", 8000), ("beta", 10000)])
        paths = ch_json(self.ch, "SELECT path FROM r_streams WHERE session = 'alpha'")
        for p in paths:
            self.assertTrue(os.path.isfile(os.path.join(dir_a, p["path"])), p["path"])
        # the events' payloads decoded: each round an emit:tick and an emit:other tagged fizz when i % 3 == 0
        names = ch_json(self.ch, "SELECT name, count() AS n, countIf(visitParamExtractString(payload, 'tag') = "
                                 "'fizz') AS fizz FROM r_events WHERE session = 'beta' GROUP BY name ORDER BY name")
        self.assertEqual([(r["name"], int(r["n"]), int(r["fizz"])) for r in names],
                         [("emit:other", 5000, 1667), ("emit:tick", 5000, 0)])
        relay.stop()
        self.assertRegex(relay.text(), r"ClickHouse sink, in all: 18000 events inserted \(\d+ rows\), 0 events "
                                       r"refused or not taken by the server \(0 rows\), 0 of \d+ packets dropped")

    def test_server_gone_mid_session_counted(self):
        relay = self.relay()
        s = Sender(self, "gone", relay)
        s.emit(2000)
        # the first part in ClickHouse (the sink sends within a second)
        deadline = time.monotonic() + 60
        while int(self.ch.query("SELECT count() FROM events").strip() or 0) < 4000:
            self.assertLess(time.monotonic(), deadline, relay.text())
            time.sleep(0.2)
        self.ch.stop()
        s.emit(3000)
        relay.wait_log("ClickHouse sink: an insert failed", "cannot reach ClickHouse", timeout=60)
        path, line = s.end()
        self.assertIsNone(relay.proc.poll(), "tracery-relayd stopped")
        self.assertIn("4000 events inserted", line)
        self.assertIn("6000 refused or not taken by the server", line)
        self.assertEqual(stats_events(s.d, path), 10000)  # the disk copy whole
        relay.stop()
        self.assertRegex(relay.text(), r"in all: 4000 events inserted \(\d+ rows\), 6000 events refused")

    def test_queue_full_counted(self):
        # A queue of one byte takes no packet: each one the relay writes is dropped from the sink and counted.
        relay = self.relay("--clickhouse-queue", "1")
        s = Sender(self, "full", relay)
        s.emit(1000)
        path, line = s.end()
        relay.wait_log("/full-", "ClickHouse sink: its queue is full")
        written = int(re.search(r"/full-\S*\): ended with BYE, (\d+) packets", relay.text()).group(1))
        self.assertGreater(written, 0)
        self.assertIn("0 events inserted", line)
        self.assertIn(f", {written} packets dropped (the queue full)", line)
        self.assertEqual(stats_events(s.d, path), 2000)  # the disk copy whole
        self.assertEqual(self.ch.query("SELECT count() FROM events").strip(), "0")
        relay.stop()
        self.assertRegex(relay.text(), rf"in all: 0 events inserted .*, {written} of {written} packets dropped")


@unittest.skipUnless(SERVER, SKIP)
class RelayClickHouseDownTest(unittest.TestCase):
    def test_server_down_at_start(self):
        tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tracery-relay-ch-down-{os.getpid()}")
        os.makedirs(tmp, exist_ok=True)
        self.addCleanup(shutil.rmtree, tmp, True)
        url = f"http://127.0.0.1:{free_port()}/default"
        p = subprocess.run([program("src", "relay", "tracery-relayd"), "--port", "0", "--live-port", "0",
                            "--viewer-port", "0", "--output", tmp, "--clickhouse", url], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"tracery-relayd: cannot reach ClickHouse at {url}", p.stderr)
        bad = subprocess.run([program("src", "relay", "tracery-relayd"), "--output", tmp, "--table-prefix", "x"],
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--clickhouse", bad.stderr)


if __name__ == "__main__":
    unittest.main()
