"""view_live_test: `tracery view --live net://...` against a real tracery-relayd (tests/relaytest.py's
fixture) while relay-send --live (tests/apps/relay_send.cpp) sends traces made by tracery-bench in
daemonless mode, paced, with beacons every period.

Checks: every event printed while the sender is still sending, the output byte for byte `tracery view`'s
of the source traces (also two traces traced at the same time, on two CPUs, merged) and babeltrace2's
(-i lttng-live) of the same trace sent again as another session, and of the same session read at once by
both (a third viewer killed midway disturbs neither); the discarded-events warnings on stderr the same but
for the trace's name and the stream's (the relay's path in the session, not the source's directory);
an idle stream (beacons only) does not hold back the busy one; --names, --fields and --filter as view's;
a session that is not there gives an error listing those that are; the relay going away mid-session
ends the view with an error and exit status 1 after the events it had; a reader of the output that
goes away ends it quietly."""
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import unittest

from relaytest import RelaydTestCase, ties_sorted
from tracetest import program, run_traced

PERIOD_MS = 200
SMALL = {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "128"}


def tracery_view(*args):
    p = subprocess.run([program("src", "cli", "tracery"), "view", *args], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def warnings_without_names(stderr):
    """The discarded-items warnings without the trace's and the stream's names."""
    return [re.sub(r'in trace "[^"]*" (.*) within stream "[^"]*"', r"in trace \1 within stream", l)
            for l in stderr.splitlines() if l.startswith("WARNING")]


class Run:
    """A live viewer (tracery view --live or babeltrace2) read line by line, with the time of each."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines, self.err = [], []
        self.readers = [threading.Thread(target=self._read), threading.Thread(target=self._read_err)]
        for r in self.readers:
            r.start()

    def _read(self):
        for line in iter(self.p.stdout.readline, ""):
            self.lines.append(line)

    def _read_err(self):
        self.err.append(self.p.stderr.read())

    def wait(self, timeout=60):
        try:
            code = self.p.wait(timeout=timeout)
        finally:
            self.p.kill()
            for r in self.readers:
                r.join()
            self.p.stdout.close()
            self.p.stderr.close()
        return code, "".join(self.lines), "".join(self.err)


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class ViewLiveTest(RelaydTestCase):
    prefix = "tracery-view-live-test-"

    @classmethod
    def make_traces(cls):
        cls.trace = os.path.join(cls.tmp, "first")
        run_traced([program("bench", "tracery-bench"), "20000", "2", "ev"], cls.trace, SMALL)
        # Two programs traced at the same time on two CPUs (20,000 events a second each, for a
        # second): their events interleave.
        cls.a, cls.b = os.path.join(cls.tmp, "a"), os.path.join(cls.tmp, "b")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRACERY_")}
        procs = [subprocess.Popen(["taskset", "-c", cpu, program("bench", "tracery-bench"), "20000", "1", "ev", "20000"],
                                  env={**env, **SMALL, "TRACERY_OUTPUT": d}, stdout=subprocess.DEVNULL)
                 for cpu, d in (("0", cls.a), ("1", cls.b))]
        for p in procs:
            assert p.wait(timeout=300) == 0

    def start_sender(self, session, *extra, trace=None, port=None):
        """relay-send --live --wait-go: its packets wait for go()."""
        p = subprocess.Popen([program("tests", "relay-send"), "127.0.0.1", str(port or self.port),
                              trace or self.trace, "testhost", session, "--live", str(PERIOD_MS), "--wait-go",
                              "--public-live",
                              *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.assertTrue(p.stdout.readline().strip(), "relay-send gave no session path")
        return p

    @staticmethod
    def go(sender):
        sender.stdin.write("go\n")
        sender.stdin.close()

    def close_sender(self, sender, check=True):
        code = sender.wait(timeout=120)
        err = sender.stderr.read()
        for f in (sender.stdout, sender.stderr):
            f.close()
        if check:
            self.assertEqual(code, 0, err)

    def live_view(self, session, *args, port=None):
        return Run([program("src", "cli", "tracery"), "view", "--live",
                    f"net://localhost:{port or self.live_port}/host/testhost/{session}", *args])

    def watch(self, session, *extra, view_args=(), trace=None, babeltrace2=False):
        """Sends a live session and views it to its end: (exit code, stdout, stderr, lines printed before
        the sender was done)."""
        sender = self.start_sender(session, *extra, trace=trace)
        if babeltrace2:
            run = Run(["babeltrace2", "-i", "lttng-live", f"net://localhost:{self.live_port}/host/testhost/{session}"])
        else:
            run = self.live_view(session, *view_args)
        self.wait_log(f"attached to testhost/{session} (session ")
        self.go(sender)
        self.close_sender(sender)
        before_end = len(run.lines)
        code, out, err = run.wait()
        return code, out, err, before_end

    def test_prints_every_event_as_view_does(self):
        code, out, err, before_end = self.watch("whole", "--interval", "5")
        self.assertEqual(code, 0, err)
        disk = tracery_view(self.trace)
        self.assertGreater(len(out.splitlines()), 10000)
        self.assertEqual(out, disk.stdout)
        # Printed as it came, not at the end.
        self.assertGreater(before_end, len(out.splitlines()) // 2)
        self.assertEqual(warnings_without_names(err), warnings_without_names(disk.stderr))
        self.assertEqual(len(warnings_without_names(err)), len([l for l in err.splitlines() if l]), err)
        # babeltrace2 as the live viewer of the same trace sent again: the same lines (events of equal time
        # in different streams in the order they reached it).
        code, bt_out, bt_err, _ = self.watch("whole-bt", "--interval", "5", babeltrace2=True)
        self.assertEqual(code, 0, bt_err)
        self.assertEqual(ties_sorted(out.splitlines()), ties_sorted(bt_out.splitlines()))

    def test_viewers_side_by_side(self):
        # babeltrace2 and tracery view --live on one session at once, with a third viewer killed midway:
        # each has its own position, so both print every event, the same lines, and the one that vanished
        # disturbs neither.
        sender = self.start_sender("shared", "--interval", "5")
        bt = Run(["babeltrace2", "-i", "lttng-live", f"net://localhost:{self.live_port}/host/testhost/shared"])
        ours = self.live_view("shared")
        doomed = self.live_view("shared")
        for n in (1, 2, 3):
            self.wait_log("attached to testhost/shared (session ", f"{n} of 16 viewers")
        self.go(sender)
        deadline = time.time() + 30
        while len(doomed.lines) < 1000 and time.time() < deadline:
            time.sleep(0.01)
        doomed.p.kill()
        self.assertEqual(doomed.wait()[0], -signal.SIGKILL)
        self.close_sender(sender)
        code, out, err = ours.wait()
        self.assertEqual(code, 0, err)
        bt_code, bt_out, bt_err = bt.wait()
        self.assertEqual(bt_code, 0, bt_err)
        self.assertEqual(out, tracery_view(self.trace).stdout)
        self.assertGreater(len(out.splitlines()), 10000)
        self.assertEqual(ties_sorted(out.splitlines()), ties_sorted(bt_out.splitlines()))
        self.assertGreaterEqual(len(doomed.lines), 1000)
        self.assertEqual(len(self.wait_log("viewer 127.0.0.1:", "attached to testhost/shared")), 3)

    def test_interleaved_traces_as_view(self):
        # Both declared at once, their packets sent in the order of their beginnings: the merge puts
        # the events of the two streams in order, each waiting for the other's next packet or beacon.
        # (babeltrace2 2.0 -i lttng-live on such a session fails now and then, "Message's timestamp
        # is less than lttng-live's message iterator's last returned timestamp": not compared here.)
        extra = ("--interval", "3", "--second-trace", self.b, "ust/pid/b", "--together")
        code, out, err, _ = self.watch("pair", *extra, trace=self.a)
        self.assertEqual(code, 0, err)
        disk = tracery_view(self.a, self.b)
        self.assertEqual(out, disk.stdout)
        cpus = re.findall(r"cpu_id = (\d+)", out)
        self.assertEqual(len(cpus), 40000)
        self.assertGreater(sum(1 for x, y in zip(cpus, cpus[1:]) if x != y), 10)  # interleaved

    def test_idle_stream_does_not_stall_the_busy_one(self):
        code, out, err, before_end = self.watch("idle", "--interval", "5", "--idle-stream")
        self.assertEqual(code, 0, err)
        self.assertEqual(out, tracery_view(self.trace).stdout)
        # Without the idle stream's INACTIVE replies nothing would print before it closes at the end.
        self.assertGreater(before_end, len(out.splitlines()) // 2)

    def test_names_fields_and_filter(self):
        options = ("--names", "bench:*", "--fields", "a", "--filter", "a % 7 == 3")
        code, out, err, _ = self.watch("options", "--interval", "2", view_args=options)
        self.assertEqual(code, 0, err)
        disk = tracery_view(self.trace, *options)
        self.assertGreater(len(out.splitlines()), 1000)
        self.assertEqual(out, disk.stdout)

    def test_session_not_found_lists_those_there(self):
        sender = self.start_sender("present")
        try:
            p = subprocess.run([program("src", "cli", "tracery"), "view", "--live",
                                f"net://127.0.0.1:{self.live_port}/host/testhost/absent"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertEqual(p.stdout, "")
            self.assertIn("no live session testhost/absent on the relay", p.stderr)
            self.assertIn("it has:\n  testhost/present (", p.stderr)
        finally:
            sender.kill()
            sender.wait()
            for f in (sender.stdin, sender.stdout, sender.stderr):
                f.close()

    def test_bad_url(self):
        for url, said in (("http://x/host/h/s", "is not a live URL"), ("net://x", "names no session"),
                          ("net://x:0/host/h/s", "port '0'")):
            p = subprocess.run([program("src", "cli", "tracery"), "view", "--live", url], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 1, url)
            self.assertIn(said, p.stderr)

    def test_relay_going_away_ends_with_an_error(self):
        # A relay of its own, killed while the session is sent and viewed.
        output = os.path.join(self.tmp, "doomed")
        log = os.path.join(self.tmp, "doomed.log")
        with open(log, "w") as logf:
            relayd = subprocess.Popen([program("src", "relay", "tracery-relayd"), "--port", "0", "--live-port", "0",
                                       "--output", output], stderr=logf)
        try:
            deadline = time.time() + 10
            ports = None
            while not ports and time.time() < deadline:
                with open(log) as f:
                    text = f.read()
                m = re.search(r"listening on 127\.0\.0\.1:(\d+),", text)
                n = re.search(r"live viewers on 127\.0\.0\.1:(\d+)", text)
                ports = (int(m.group(1)), int(n.group(1))) if m and n else None
                time.sleep(0.05)
            self.assertTrue(ports, "the second tracery-relayd did not start")
            sender = self.start_sender("doomed", "--interval", "5", port=ports[0])
            run = self.live_view("doomed", port=ports[1])
            deadline = time.time() + 15
            while time.time() < deadline:
                with open(log) as f:
                    if "attached to testhost/doomed" in f.read():
                        break
                time.sleep(0.05)
            self.go(sender)
            deadline = time.time() + 30
            while len(run.lines) < 2000 and time.time() < deadline:
                time.sleep(0.01)
            relayd.kill()
            relayd.wait()
            code, out, err = run.wait()
            self.close_sender(sender, check=False)
        finally:
            relayd.kill()
            relayd.wait()
        self.assertEqual(code, 1, err)
        self.assertIn("tracery: the relay localhost:", err)
        self.assertIn("went away", err)
        lines = out.splitlines()
        self.assertGreaterEqual(len(lines), 2000)
        disk = tracery_view(self.trace).stdout.splitlines()
        self.assertLess(len(lines), len(disk))
        self.assertEqual(lines, disk[:len(lines)])

    def test_closed_output_and_interrupt_end_quietly(self):
        sender = self.start_sender("head", "--interval", "5")
        run = self.live_view("head")
        self.wait_log("attached to testhost/head (session ")
        self.go(sender)
        deadline = time.time() + 30
        while len(run.lines) < 100 and time.time() < deadline:
            time.sleep(0.01)
        run.p.send_signal(signal.SIGINT)
        code, _, err = run.wait()
        self.assertEqual((code, err), (0, ""))
        self.close_sender(sender)
        # The relay saw the viewer go; a reader closing the pipe (| head) ends the next one quietly.
        sender = self.start_sender("head2", "--interval", "5")
        p = subprocess.Popen(f"{program('src', 'cli', 'tracery')} view --live "
                             f"net://localhost:{self.live_port}/host/testhost/head2 | head -3",
                             shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.wait_log("attached to testhost/head2 (session ")
        self.go(sender)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual((len(out.splitlines()), err), (3, ""))
        self.close_sender(sender)


if __name__ == "__main__":
    unittest.main()
