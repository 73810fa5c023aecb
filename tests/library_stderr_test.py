"""libtracery says nothing on a traced program's stderr unless asked.

Programs traced under CPU load (two busy loops per CPU, as when the trace
clock's calibration is preempted) through the session daemon and without it:
their stderr stays empty and their events are all recorded. A diagnostic (a
bad TRACERY_CLOCK) goes nowhere by default, to stderr with
TRACERY_LOG=stderr, and to a file with TRACERY_LOG=FILE."""
import collections
import os
import subprocess
import sys
import unittest

from daemontest import DaemonTestCase
from tracetest import Trace, program, run_traced

BAD_CLOCK = ("tracery: ignoring TRACERY_CLOCK='rdtsc-please' (expected 'tsc', 'tsc-ordered' or 'vdso'); using "
             "the automatic clock choice\n")


class LibraryStderrTest(DaemonTestCase):
    def load(self, seconds):
        """Two busy loops per CPU for at most `seconds` (stopped at the end of the test)."""
        loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
        for _ in range(2 * os.cpu_count()):
            busy = subprocess.Popen([sys.executable, "-c", loop], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.addCleanup(busy.wait)
            self.addCleanup(busy.kill)

    def emit(self, n, env=None):
        """daemon-emitter count n with env: its stderr."""
        p = self.d.spawn([program("tests", "daemon-emitter"), "count", str(n)], stdin=subprocess.DEVNULL,
                         extra_env=env)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        return err

    def test_programs_under_load_write_nothing_on_stderr(self):
        self.d.start_daemon()
        path = self.session("s")
        self.d.tracery("start")
        self.load(8)
        runs = 10
        for run in range(runs):
            self.assertEqual(self.emit(50), "", f"run {run}")
        daemonless = os.path.join(self.d.tmp, "daemonless")
        for run in range(runs):
            out = os.path.join(daemonless, str(run))
            proc = run_traced([program("tests", "daemon-emitter"), "count", "50"], out)
            self.assertEqual(proc.stderr, "", f"daemonless run {run}")
            self.assertEqual(len(Trace(out).events), 100)
        self.d.tracery("stop")
        self.assertEqual(collections.Counter(e["name"] for e in Trace(path).events),
                         {"emit:tick": 50 * runs, "emit:other": 50 * runs})

    def test_a_diagnostic_goes_where_tracery_log_says(self):
        self.d.start_daemon()
        path = self.session("s")
        self.d.tracery("start")
        bad = {"TRACERY_CLOCK": "rdtsc-please"}
        self.assertEqual(self.emit(10, bad), "")
        self.assertEqual(self.emit(10, {**bad, "TRACERY_LOG": "stderr"}), BAD_CLOCK)
        log = os.path.join(self.d.tmp, "tracery.log")
        self.assertEqual(self.emit(10, {**bad, "TRACERY_LOG": log}), "")
        self.assertEqual(self.emit(10, {**bad, "TRACERY_LOG": log}), "")
        with open(log) as f:
            self.assertEqual(f.read(), BAD_CLOCK * 2)
        self.d.tracery("stop")
        self.assertEqual(len(Trace(path).events), 4 * 20)  # traced all the same


if __name__ == "__main__":
    unittest.main()
