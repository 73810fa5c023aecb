"""A channel's timers and on/off state against a real traceryd: a switch timer
puts a slow program's single event in the trace while the session runs (a
channel without one still holds it in its buffer); triggers on a channel's
buffer usage fire when a sample crosses their threshold and again only after
a sample went back (`tracery watch` prints them), one on a session's consumed
size fires once; disable-channel keeps a channel's events out of the trace
while the session runs, enable-channel brings them back; a saved session keeps
its timers, its disabled channel, its rotation schedule and its triggers."""
import json
import os
import time
import unittest

from daemontest import DaemonTestCase, go, read_line
from tracetest import Trace, program

APP = program("tests", "request-app")


def burst(n, ms=1):
    """request-app's argument for a burst of n requests of `ms` milliseconds."""
    return ",".join([str(ms)] * n)


class ChannelMonitor(DaemonTestCase):
    def fired(self, name):
        """How many times list-triggers says the trigger fired."""
        lines = self.d.tracery("list-triggers").stdout.splitlines()
        start = lines.index(f"- name: {name}")
        for line in lines[start + 1:]:
            if line.startswith("  fired: "):
                return int(line.split()[1].rstrip(","))
        raise AssertionError(f"no count of {name}")

    def ids(self, path):
        return [e["payload"]["id"] for e in Trace(path).events if e["name"] == "app:request"]

    def test_switch_timer_writes_a_slow_stream(self):
        self.d.start_daemon()
        path = self.out("slow")
        self.d.tracery("create", "slow", "--output", path)
        self.d.tracery("enable-channel", "-u", "timed", "-s", "slow", "--switch-timer=100ms")
        self.d.tracery("enable-channel", "-u", "untimed", "-s", "slow")
        for ch in ("timed", "untimed"):
            self.d.tracery("enable-event", "-u", "app:request", "-s", "slow", "-c", ch)
        self.d.tracery("start", "slow")
        status = self.d.tracery("status", "slow").stdout
        self.assertIn("    switch timer: 100 ms; monitor timer: 1 s\n", status)
        app = self.d.spawn([APP, "5"])
        read_line(app, "ready")
        go(app)
        read_line(app, "burst")

        def timed_events():
            names = [f for f in os.listdir(path) if f.startswith("timed_")]
            return names and self.ids(path) == [0]
        # The trace while the session runs: the timed channel's one event, none of the other's.
        self.wait_for("the event of the timed channel", timed_events)
        self.assertFalse([f for f in os.listdir(path) if f.startswith("untimed_")],
                         "a channel without a switch timer keeps its partial sub-buffer")
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)
        self.d.tracery("stop", "slow")
        self.assertEqual(self.ids(path), [0, 0], "both channels once stopped")

    def test_buffer_usage_triggers_fire_on_crossing(self):
        if (os.cpu_count() or 1) < 2:
            self.skipTest("the emptiest stream is another CPU's")
        self.d.start_daemon()
        # Discard mode, drained by the daemon's consumer: what stays in the
        # buffer is the open sub-buffer, which the consumer cannot take until
        # it is full (64 KiB of a 128 KiB buffer).
        self.session("usage", events=("app:request",),
                     channel_args=("--subbuf-size=64k", "--num-subbuf=2", "--monitor-timer=10ms"))
        self.d.tracery("start", "usage")
        base = ["--session=usage", "--channel=chan", "--domain=user"]
        self.d.tracery("add-trigger", "--condition=channel-buffer-usage-ge", *base, "--threshold-ratio=0.1",
                       "--action=notify", "--id=full")
        self.d.tracery("add-trigger", "--condition=channel-buffer-usage-le", *base, "--threshold-size=8k",
                       "--action=notify", "--id=empty")
        self.d.tracery("add-trigger", "--condition=session-consumed-size-ge", "--session=usage",
                       "--threshold-size=64k", "--action=notify", "--id=consumed")
        watcher = self.watch()

        def next_notification():
            return self.read_notifications(watcher, 1)[0]

        def run(n, first=False):
            """A program's burst of n requests into the user's buffer (the same for every program)."""
            # On one CPU: each CPU has a stream of its own, and the conditions are on one stream.
            app = self.d.spawn(["taskset", "-c", "0", APP, burst(n)])
            read_line(app, "ready")
            if first:  # its buffer made and sampled empty before it writes
                self.assertEqual(next_notification()["trigger"], "empty")
            go(app)
            read_line(app, "burst")
            app.stdin.close()
            self.assertEqual(app.wait(timeout=30), 0)

        # Over a tenth of the buffer, in the open sub-buffer.
        run(700, first=True)
        full = next_notification()
        self.assertEqual(full["trigger"], "full")

        def usage():
            """What the buffer holds now: a trigger added meets its condition at its first sample."""
            self.d.tracery("add-trigger", "--condition=channel-buffer-usage-ge", *base, "--threshold-size=1",
                           "--action=notify", "--id=probe")
            n = next_notification()
            self.d.tracery("remove-trigger", "probe")
            self.assertEqual(n["trigger"], "probe")
            return n["captures"]["buffer_usage_bytes"]
        used = usage()
        self.assertGreater(used, 13 * 1024)
        self.assertLess(used, 64 * 1024)
        size = used / 700  # of one request
        # Past the sub-buffer's end by some 40 requests: the consumer takes it, what stays is small.
        run(int((64 * 1024 - used) / size) + 40)
        # The emptiest stream (another CPU's, idle) stayed under 8k all along: "empty" does not fire again.
        self.assertEqual(next_notification()["captures"], {"session": "usage", "consumed_bytes": 64 * 1024})
        # Over a tenth again.
        self.assertLess(usage(), 8 * 1024)
        run(int(20 * 1024 / size))
        again = next_notification()
        self.assertEqual(again["trigger"], "full")
        self.assertGreater(usage(), 13 * 1024)
        time.sleep(0.2)  # twenty samples more: nothing new
        self.assertEqual((self.fired("full"), self.fired("empty"), self.fired("consumed")), (2, 1, 1))
        got = self.notifications(watcher)
        self.assertEqual(got, [], "no other notification")
        for n in (full, again):
            c = n["captures"]
            self.assertEqual((n["event"], n["pid"], n["dropped"]), ("", 0, 0), n)
            self.assertEqual((c["session"], c["channel"], c["domain"], c["stream_bytes"]),
                             ("usage", "chan", "user", 128 * 1024), c)
            self.assertAlmostEqual(c["buffer_usage_ratio"], c["buffer_usage_bytes"] / (128 * 1024))
        status = self.d.tracery("list-triggers").stdout
        self.assertIn("  condition: channel-buffer-usage-ge\n    session: usage, channel: chan (domain: user)\n"
                      "    threshold: ratio 0.10\n", status)

    def test_disable_channel_while_tracing(self):
        self.d.start_daemon()
        path = self.session("onoff", events=("app:request",), channel_args=())
        self.d.tracery("start", "onoff")
        app = self.d.spawn([APP, burst(3), burst(3), burst(3)])
        read_line(app, "ready")
        go(app)
        read_line(app, "burst")
        self.assertEqual(self.d.tracery("disable-channel", "-u", "chan", "-s", "onoff").stdout,
                         "User space channel 'chan' disabled in session 'onoff'\n")
        self.assertIn("  channel chan [disabled]:", self.d.tracery("status", "onoff").stdout)
        go(app)
        read_line(app, "burst")
        self.assertIn("Channel 'chan' enabled", self.d.tracery("enable-channel", "-u", "chan", "-s", "onoff").stdout)
        self.assertNotIn("[disabled]", self.d.tracery("status", "onoff").stdout)
        go(app)
        read_line(app, "burst")
        app.stdin.close()
        self.assertEqual(app.wait(timeout=30), 0)
        self.d.tracery("stop", "onoff")
        self.assertEqual(self.ids(path), [0, 1, 2, 6, 7, 8], "the events before and after, none between")
        # Refusals, one line each.
        for args, why in [
            (("disable-channel", "-u", "nope", "-s", "onoff"), "no channel 'nope' in session 'onoff'"),
            (("enable-channel", "-u", "x", "-s", "onoff", "--switch-timer=1ms"), "bad --switch-timer '1000us'"),
        ]:
            r = self.d.tracery(*args, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(why, r.stderr)
        self.d.tracery("disable-channel", "-u", "chan", "-s", "onoff")
        r = self.d.tracery("enable-channel", "-u", "chan", "-s", "onoff", "--overwrite", check=False)
        self.assertIn("exists, disabled: enable it again with `tracery enable-channel chan` alone", r.stderr)

    def test_saved_session_keeps_timers_state_rotation_and_triggers(self):
        self.d.start_daemon()
        self.session("kept", events=("app:request",),
                     channel_args=("--switch-timer=250ms", "--monitor-timer=50ms"))
        self.d.tracery("disable-channel", "-u", "chan", "-s", "kept")
        self.d.tracery("enable-rotation", "-s", "kept", "--size=1M")
        self.d.tracery("add-trigger", "--condition=session-consumed-size-ge", "--session=kept",
                       "--threshold-size=1M", "--action=rotate-session", "kept", "--id=big")
        files = self.out("saved")
        self.d.tracery("save", "kept", "--output-path", files)
        with open(os.path.join(files, "kept.json")) as f:
            saved = json.load(f)
        self.assertEqual(saved["format"], 3)
        chan = saved["user"]["channels"][0]
        self.assertEqual((chan["switch_timer_us"], chan["monitor_timer_us"], chan["enabled"]),
                         (250000, 50000, False))
        self.assertEqual(saved["rotation"], {"size_bytes": 1 << 20})
        self.assertEqual([t["name"] for t in saved["triggers"]], ["big"])
        before = self.d.tracery("status", "kept").stdout
        self.d.tracery("destroy", "kept")
        # The trigger outlived the session: loading keeps the same one.
        self.d.tracery("load", "kept", "--input-path", files)
        after = self.d.tracery("status", "kept").stdout
        for line in ("  channel chan [disabled]:", "    switch timer: 250 ms; monitor timer: 50 ms"):
            self.assertIn(line, before)
            self.assertIn(line, after)
        self.d.tracery("destroy", "kept")
        self.d.tracery("remove-trigger", "big")
        self.d.tracery("load", "kept", "--input-path", files)
        self.assertIn("- name: big", self.d.tracery("list-triggers").stdout)


if __name__ == "__main__":
    unittest.main()
