"""Shared by the relay's tests (relay_test, relay_live_test, relay_daemon_test, live_daemon_test): a real
tracery-relayd on loopback on ports it picks itself (--port 0 --live-port 0, read from its log) or a given sender
port (start_relayd); Relay, one for a test (stopped, restarted, its log and session directories read);
RelaydTestCase, a relay for a whole test class writing under a temporary directory that also holds the traces the
test makes (make_traces), its log lines, and before and after each test a check that the relay still runs and
that its log holds no sanitizer report (TRACERY_SANITIZE builds write them there); RelayBesideDaemon, for a
daemontest.DaemonTestCase, a Relay of each test's own (self.relay, self.url) and the same check of the daemon's and
the relay's logs after it."""
import glob
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from tracetest import program


def start_relayd(output, log_path, port=0, args=()):
    """Starts tracery-relayd --port PORT --live-port 0 --viewer-port 0 --output OUTPUT (port 0: one the system picks;
    the authenticated viewer port is opened with --auth-keys only) and args, its
    stderr to log_path; returns (its process, the sender port, the live viewers' port, the open log file)."""
    log = open(log_path, "w+")
    proc = subprocess.Popen([program("src", "relay", "tracery-relayd"), "--port", str(port), "--live-port", "0",
                             "--viewer-port", "0", "--output", output, *args], stderr=log)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log_path) as f:
            text = f.read()
        sender = re.search(r"listening on 127\.0\.0\.1:(\d+),", text)
        viewers = re.search(r"live viewers on 127\.0\.0\.1:(\d+)", text)
        if sender and viewers:
            return proc, int(sender.group(1)), int(viewers.group(1)), log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    log.close()
    with open(log_path) as f:
        raise AssertionError(f"tracery-relayd did not start: {f.read()}")


def ties_sorted(lines):
    """lines with each run of lines of one timestamp sorted: babeltrace2 prints events of equal time from
    different streams in the order they reach it, which live may differ from the whole trace's."""
    out, run, stamp = [], [], None
    for line in lines:
        this = line[:line.find("]") + 1]
        if this != stamp:
            out += sorted(run)
            run, stamp = [], this
        run.append(line)
    return out + sorted(run)


class Relay:
    """A tracery-relayd in the foreground, writing under TMP/NAME (for one test; RelaydTestCase has one for a
    whole class), its log in TMP."""

    def __init__(self, tmp, port=0, name="relay", args=()):
        self.output = os.path.join(tmp, name)
        self.log_path = os.path.join(tmp, f"{name}-{time.time_ns()}.log")
        self.proc, self.port, self.live_port, self.log = start_relayd(self.output, self.log_path, port, args)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, *texts, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(all(t in line for t in texts) for line in self.text().splitlines()):
                return
            time.sleep(0.05)
        raise AssertionError(f"no relay log line with {texts!r}:\n{self.text()}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.log.close()

    def sessions(self, name):
        """The relay's directories of session `name`, oldest first."""
        return sorted(glob.glob(os.path.join(self.output, "*", name + "-*")), key=os.path.getmtime)

class RelaydTestCase(unittest.TestCase):
    prefix = "tracery-relay-test-"

    @classmethod
    def make_traces(cls):
        """Makes the test's traces under cls.tmp (before the relay starts)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=cls.prefix)
        cls.make_traces()
        cls.output = os.path.join(cls.tmp, "relay")
        cls.log_path = os.path.join(cls.tmp, "relayd.log")
        cls.relayd, cls.port, cls.live_port, cls.log = start_relayd(cls.output, cls.log_path)

    @classmethod
    def tearDownClass(cls):
        cls.relayd.terminate()
        cls.relayd.wait(timeout=10)
        cls.log.close()
        if not os.environ.get("TRACERY_KEEP_TRACE"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertIsNone(self.relayd.poll(), "tracery-relayd is not running")

    def tearDown(self):
        self.assertIsNone(self.relayd.poll(), "tracery-relayd stopped")
        self.assertFalse([l for l in self.log_lines() if "runtime error" in l or "Sanitizer" in l])

    def log_lines(self):
        with open(self.log_path) as f:
            return f.read().splitlines()

    def wait_log(self, *texts):
        """The log lines holding every one of texts, once there is one (15 s at most)."""
        deadline = time.time() + 15
        while time.time() < deadline:
            lines = [l for l in self.log_lines() if all(t in l for t in texts)]
            if lines:
                return lines
            time.sleep(0.05)
        self.fail(f"no log line with {texts!r}:\n" + "\n".join(self.log_lines()))


class RelayBesideDaemon:
    """Mixin before daemontest.DaemonTestCase: a Relay for each test under its daemon's temporary directory
    (self.relay, its sender URL self.url), and after the test no sanitizer report in the daemon's or the relay's
    log."""

    def setUp(self):
        super().setUp()
        self.relay = Relay(self.d.tmp)
        self.addCleanup(lambda: self.relay.stop())  # the one running at the end (a test may start another)
        self.url = f"net://127.0.0.1:{self.relay.port}"

    def tearDown(self):
        for text in (self.d.log(), self.relay.text()):
            self.assertFalse([l for l in text.splitlines() if "runtime error" in l or "Sanitizer" in l], text)
        super().tearDown()
