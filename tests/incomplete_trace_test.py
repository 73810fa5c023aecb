"""Traces that hold less than was traced, read by every verb that reads a
trace directory.

A stream file whose last packet is cut short (a crash in the middle of a
write, a copy that stopped): `tracery view`, `stats`, `analyze`, `export`
(each format) and `query` all read the events before the cut, the same
number, name the file and the offset where they stop, and exit 1.

A session daemon killed with SIGKILL while a program traces: the events
still in the program's buffers never reach the disk, and the user trace is a
metadata file without stream files. `tracery view` says so, naming the
directory, and prints the other traces given."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import shutil
import unittest

from daemontest import DaemonTestCase, read_line
from tracetest import program, run_traced

CUT = re.compile(r"tracery: (\S+): at offset (\d+): the packet there declares \d+ bytes but only \d+ remain\n")


def tracery(*args):
    return subprocess.run([program("src", "cli", "tracery"), *args], capture_output=True, text=True, timeout=120)


class CutPacketTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-cut-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.trace = os.path.join(self.tmp, "t")
        # Two traces in the directory, merged by every verb: two threads
        # writing bench:ev, and emit:tick/emit:other pairs (for a latency);
        # small sub-buffers, many packets.
        bench = os.path.join(self.trace, "bench")
        run_traced([program("bench", "tracery-bench"), "20000", "2", "ev"], bench, {"TRACERY_SUBBUF_SIZE": "16k"})
        run_traced([program("tests", "daemon-emitter"), "count", "5000"], os.path.join(self.trace, "emit"),
                   {"TRACERY_SUBBUF_SIZE": "16k"})
        streams = [os.path.join(bench, f) for f in os.listdir(bench) if f != "metadata"]
        self.stream = max(streams, key=os.path.getsize)
        self.whole = tracery("view", self.trace)
        self.assertEqual(self.whole.returncode, 0, self.whole.stderr)
        size = os.path.getsize(self.stream)
        os.truncate(self.stream, size - 1000)  # the last packet (16 KiB) cut short

    def check_stop(self, p, verb):
        """The exit status and the last lines of stderr: the file and the offset where the reading stopped,
        after the warning with the fix; returns the offset."""
        self.assertEqual(p.returncode, 1, f"{verb}: {p.stderr}")
        m = CUT.search(p.stderr)
        self.assertIsNotNone(m, f"{verb}: {p.stderr}")
        self.assertEqual(m.group(1), self.stream, verb)
        self.assertTrue(p.stderr.endswith(m.group(0)), f"{verb}: the error is the last line: {p.stderr}")
        offset = int(m.group(2))
        self.assertIn(f"warning: {self.stream}: at offset {offset}, ", p.stderr, verb)
        self.assertIn(f"`truncate -s {offset} {self.stream}`", p.stderr, verb)
        return offset

    def test_every_verb_reads_what_precedes_the_cut(self):
        view = tracery("view", self.trace)
        offset = self.check_stop(view, "view")
        events = len(view.stdout.splitlines())
        self.assertGreater(events, 0)
        self.assertLess(events, len(self.whole.stdout.splitlines()))
        self.assertEqual(view.stdout, self.whole.stdout[:len(view.stdout)], "the same lines, up to the cut")

        stats = tracery("stats", "--json", self.trace)
        self.assertEqual(self.check_stop(stats, "stats"), offset)
        report = json.loads(stats.stdout)
        self.assertEqual(report["total"][0]["count"], events)
        self.assertEqual(sum(e["count"] for e in report["per_event"]), events)

        latency = tracery("analyze", "latency", "--json", "--begin", "emit:tick", "--end", "emit:other", self.trace)
        self.assertEqual(self.check_stop(latency, "analyze latency"), offset)
        self.assertEqual(json.loads(latency.stdout)["kind"], "latency")

        out = os.path.join(self.tmp, "chrome.json")
        chrome = tracery("export", "--format", "chrome-json", self.trace, out)
        self.assertEqual(self.check_stop(chrome, "export chrome-json"), offset)
        self.assertIn(f"tracery: {events} events written to {out}\n", chrome.stderr)
        with open(out) as f:
            instants = [e for e in json.load(f)["traceEvents"] if e.get("name") in ("bench:ev", "emit:tick", "emit:other")]
        self.assertEqual(len(instants), events)

        db = os.path.join(self.tmp, "t.db")
        sqlite = tracery("export", "--format", "sqlite", self.trace, db)
        self.assertEqual(self.check_stop(sqlite, "export sqlite"), offset)
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("SELECT count(*) FROM events").fetchone()[0], events)

        perfetto = tracery("export", "--format", "perfetto", self.trace, os.path.join(self.tmp, "t.pftrace"))
        self.assertEqual(self.check_stop(perfetto, "export perfetto"), offset)
        self.assertIn(f"tracery: {events} events written to ", perfetto.stderr)

        query = tracery("query", "--csv", self.trace, "SELECT count(*) AS n FROM events")
        self.assertEqual(self.check_stop(query, "query"), offset)
        self.assertEqual(query.stdout.split(), ["n", str(events)])


class DaemonKilledTest(DaemonTestCase):
    def test_view_names_the_user_trace_the_crash_left_without_streams(self):
        self.d.start_daemon()
        done = self.session("done", events=("emit:tick",))
        self.d.tracery("start", "done")
        self.d.run([program("tests", "daemon-emitter"), "count", "50"])
        self.d.tracery("stop", "done")
        crashed = self.session("crashed", events=("emit:tick",))
        self.d.tracery("start", "crashed")
        # 100 events in a sub-buffer far from full: nothing is written until it is flushed.
        emitter = self.d.spawn([program("tests", "daemon-emitter"), "hold", "100"])
        self.assertEqual(read_line(emitter, "done"), ["100"])
        self.d.kill_daemon(signal.SIGKILL)
        self.assertEqual(sorted(os.listdir(crashed)), ["metadata"])

        p = self.d.tracery("view", done, crashed)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 50)
        self.assertTrue(all(" emit:tick: " in line for line in lines), lines[0])
        self.assertEqual(p.stderr,
                         f"tracery: warning: {crashed} has a metadata file but no stream file: none of its "
                         "programs' events reached the disk (their buffers were never flushed, as when the session "
                         "daemon is killed while they trace, or no traced program ran); the other traces are shown\n")
        # The program goes on without its daemon, and says nothing on its stderr.
        emitter.kill()
        _, err = emitter.communicate(timeout=30)
        self.assertEqual(err, "")


if __name__ == "__main__":
    unittest.main()
