#!/usr/bin/env python3
"""Channels whose emitters wait for space (enable-channel --blocking-timeout),
through a real traceryd: two threads emitting at full speed into a small
buffer lose nothing with --blocking-timeout=inf (every event is in the trace,
the waits are counted in status), where the same channel without it loses
events; a signal handler never waits (its events are dropped and counted
instead); the option is refused where it cannot apply."""
import re
import unittest

from daemontest import DaemonTestCase
from tracetest import FlatTrace, program

THREADS = 2
EVENTS = 60_000  # per thread
SMALL = ["--subbuf-size", "4k", "--num-subbuf", "2"]


def lost(stop_output):
    m = re.search(r"channel chan: (\d+) events? lost", stop_output)
    if not m:
        raise AssertionError(f"no lost count in {stop_output!r}")
    return int(m.group(1))


def blocking_line(status):
    """(timeout, waits, seconds) from status' blocking line of the channel."""
    m = re.search(r"blocking timeout: (\S+(?: us)?); (\d+) events? waited for space, ([\d.]+) s in all", status)
    if not m:
        raise AssertionError(f"no blocking line in {status!r}")
    return m.group(1), int(m.group(2)), float(m.group(3))


class Blocking(DaemonTestCase):
    def emit(self, path, channel_args, *argv):
        self.session("s", channel_args=channel_args, events=("blocking:*",))
        self.d.tracery("start")
        self.d.run([program("tests", "blocking-emitter"), *argv])
        return lost(self.d.tracery("stop").stdout)

    def test_two_threads_waiting_without_limit_lose_nothing(self):
        self.d.start_daemon()
        path = self.out("s")
        dropped = self.emit(path, SMALL + ["--blocking-timeout=inf"], "threads", str(THREADS), str(EVENTS))
        self.assertEqual(dropped, 0)
        timeout, waits, seconds = blocking_line(self.d.tracery("status").stdout)
        self.assertEqual(timeout, "inf")
        self.assertGreater(waits, 0)  # 8 KiB per CPU cannot hold 120,000 events: they waited
        self.assertGreater(seconds, 0)
        trace = FlatTrace(path)
        self.assertEqual(trace.discarded, 0)
        seen = {t: [] for t in range(THREADS)}
        for e in trace.named("blocking:seq"):
            seen[e["fields"]["thread"]].append(e["fields"]["i"])
        for t in range(THREADS):
            self.assertEqual(seen[t], list(range(EVENTS)), f"thread {t}")

    def test_the_same_channel_without_waiting_loses_events(self):
        self.d.start_daemon()
        path = self.out("s")
        dropped = self.emit(path, SMALL, "threads", str(THREADS), str(EVENTS))
        self.assertGreater(dropped, 0)
        self.assertNotIn("blocking timeout", self.d.tracery("status").stdout)
        trace = FlatTrace(path)
        self.assertEqual(len(trace.events) + trace.discarded, THREADS * EVENTS)

    def test_a_signal_handler_never_waits(self):
        self.d.start_daemon()
        # The buffer must fill while the handler emits, which a consumer that keeps up on an idle CPU may
        # prevent: a few tries, each a session of its own.
        for attempt in range(3):
            name = f"s{attempt}"
            path = self.session(name, channel_args=SMALL + ["--blocking-timeout=inf"], events=("blocking:*",))
            self.d.tracery("start", name)
            self.d.run([program("tests", "blocking-emitter"), "signal", str(EVENTS)])
            dropped = lost(self.d.tracery("stop", name).stdout)
            _, waits, _ = blocking_line(self.d.tracery("status", name).stdout)
            self.assertEqual(waits, 0)
            trace = FlatTrace(path)
            self.assertEqual(len(trace.events) + trace.discarded, EVENTS)
            if dropped:
                return
        self.fail("the buffer never filled while the signal handler emitted")

    def test_a_limit_is_shown_and_the_option_refused_where_it_cannot_apply(self):
        self.d.start_daemon()
        self.d.tracery("create", "s", "--output", self.out("s"))
        self.d.tracery("enable-channel", "-u", "chan", "--blocking-timeout=20ms")
        self.assertEqual(blocking_line(self.d.tracery("status").stdout)[:2], ("20000 us", 0))
        for args, says in [(["--overwrite", "--blocking-timeout=inf"], "for discard channels"),
                           (["-k", "--blocking-timeout=inf"], "for user space channels"),
                           (["--blocking-timeout=soon"], "bad --blocking-timeout 'soon'"),
                           (["--blocking-timeout=-5"], "bad --blocking-timeout '-5'"),
                           (["--blocking-timeout=25h"], "bad --blocking-timeout '25h'")]:
            proc = self.d.tracery("enable-channel", "-u" if "-k" not in args else "-k", "other",
                                  *[a for a in args if a != "-k"], check=False)
            self.assertNotEqual(proc.returncode, 0, args)
            self.assertIn(says, proc.stderr, args)


if __name__ == "__main__":
    unittest.main()
