"""A traced program's start under the session daemon: the events of its
constructors and of the first line of main are recorded in every run, with
per-user and per-process buffers, and a daemon that starts after the program
gets its events from then on (also one that starts at once, while the program
has not yet begun watching for a daemon)."""
import collections
import time
import unittest

from daemontest import DaemonTestCase, go, read_line
from tracetest import Trace, program

RUNS = 100


class EarlyEvents(DaemonTestCase):
    def check_every_run_recorded(self, channel_args):
        self.d.start_daemon()
        path = self.session("s", events=("early:*",), channel_args=channel_args)
        self.d.tracery("start")
        early = program("tests", "early-events")
        for _ in range(RUNS):
            self.d.run([early])
        self.d.tracery("stop")
        trace = Trace(path)
        self.assertEqual(trace.discarded, 0)
        by_pid = collections.defaultdict(list)
        for e in trace.events:
            by_pid[e["payload"]["pid"]].append(e["name"])
        self.assertEqual(len(by_pid), RUNS, self.d.log())
        missing = {pid: names for pid, names in by_pid.items() if names != ["early:ctor", "early:main"]}
        self.assertEqual(missing, {})

    def test_every_run_recorded_per_user_buffers(self):
        self.check_every_run_recorded(None)

    def test_every_run_recorded_per_process_buffers(self):
        self.check_every_run_recorded(["--buffers-pid"])


class LateDaemon(DaemonTestCase):
    def check_later_events_recorded(self, delay_s):
        """The program starts with no daemon; delay_s later the daemon starts and a session begins; the
        events the program emits once it is registered are recorded."""
        emitter = self.d.spawn([program("tests", "early-events"), "500"])
        pid = int(read_line(emitter, "ready")[0])
        time.sleep(delay_s)
        self.d.start_daemon()
        path = self.session("s", events=("early:*",))
        self.d.tracery("start")
        deadline = time.time() + 10
        while f"programs tracing into it: {pid}" not in self.d.tracery("status").stdout:
            self.assertLess(time.time(), deadline, self.d.log())
            time.sleep(0.02)
        go(emitter)
        self.assertEqual(read_line(emitter, "done"), ["500"])
        self.assertEqual(emitter.wait(timeout=30), 0)
        self.d.tracery("stop")
        trace = Trace(path)
        # Only the events after the registration: the constructor's and main's came before any daemon.
        self.assertEqual([e["payload"]["i"] for e in trace.events], list(range(500)))
        self.assertEqual({e["name"] for e in trace.events}, {"early:late"})

    def test_daemon_started_at_once(self):
        self.check_later_events_recorded(0)

    def test_daemon_started_a_while_later(self):
        self.check_later_events_recorded(0.5)


if __name__ == "__main__":
    unittest.main()
