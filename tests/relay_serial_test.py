"""relay_serial_test: a session sent over a serial line (`tracery create --set-url serial://DEVICE`) to
`tracery-relayd --serial DEVICE`. The line is two pseudo-terminals and a thread of the test copying bytes between
their masters, which can also add noise or drop everything for a while (the cable pulled, then put back). Checks
that the relay's copy is byte for byte the local copy (--local-copy) and babeltrace2 reads the same; that noise on
the line (a false marker with a lying length too) is skipped and counted with nothing lost; that the relay opens
its line again after it hung up and came back (a USB adapter replugged), its sender connecting again; and that a
line pulled mid-session loses frames the relay's end counts and reports, after which the sender connects again
into a new directory: every packet the relay wrote is whole and one of the local copy's, and the packets missing are no
more than the sender counts as sent and not confirmed. With the relay's --auth-keys, a sender without a key is
refused over the line and one with a key authenticated; TLS over a line is refused."""
import os
import re
import secrets
import select
import subprocess
import threading
import time
import tty
import unittest

from daemontest import DaemonTestCase
from relay_daemon_test import count_events, relay_counts
from relay_test import packets_of
from relaytest import Relay
from tracetest import program

MARKER = bytes([0xA5, 0x5A, ord("T"), ord("s")])


class Cable:
    """Two pseudo-terminals joined by a thread: what one's master reads, the other's gets (both ways). The
    slaves are the two ends' devices (kept open here so that a device outlives its user's close). A side may be
    unplugged (its pseudo-terminal closed: its device hangs up and goes away) and plugged again as a new one."""

    def __init__(self):
        self.masters, self.slaves, self.devices = [None, None], [None, None], [None, None]
        for side in range(2):
            self.plug_new(side)
        self.lock = threading.Lock()
        self.pulled = False
        self.dropped = 0  # bytes lost while pulled or unplugged
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def plug_new(self, side):
        """A new pseudo-terminal for `side`; its device."""
        master, slave = os.openpty()
        tty.setraw(slave)
        self.masters[side], self.slaves[side], self.devices[side] = master, slave, os.ttyname(slave)
        return self.devices[side]

    def unplug(self, side):
        with self.lock:
            os.close(self.masters[side])
            os.close(self.slaves[side])
            self.masters[side] = self.slaves[side] = None

    def run(self):
        while not self.stopping:
            with self.lock:
                fds = [fd for fd in self.masters if fd is not None]
            try:
                ready, _, _ = select.select(fds, [], [], 0.1)
            except (OSError, ValueError):
                continue  # a side unplugged meanwhile
            for fd in ready:
                with self.lock:
                    if fd not in self.masters:
                        continue
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        continue
                    other = self.masters[1 - self.masters.index(fd)]
                    if self.pulled or other is None:
                        self.dropped += len(data)
                        continue
                    os.write(other, data)

    def inject(self, side, data):
        """Bytes that arrive on device `side` as if from the line."""
        with self.lock:
            os.write(self.masters[side], data)

    def pull(self):
        with self.lock:
            self.pulled = True

    def plug(self):
        with self.lock:
            self.pulled = False

    def close(self):
        self.stopping = True
        self.thread.join(timeout=5)
        for fd in self.masters + self.slaves:
            if fd is not None:
                os.close(fd)


def packets(path, stream):
    """The packets of a stream file of the relay's copy, as its index says (offset, size in bits)."""
    with open(os.path.join(path, "index", stream + ".idx"), "rb") as f:
        index = f.read()
    with open(os.path.join(path, stream), "rb") as f:
        data = f.read()
    out = []
    for at in range(16, len(index), 72):
        offset, size_bits = int.from_bytes(index[at:at + 8], "big"), int.from_bytes(index[at + 8:at + 16], "big")
        out.append(data[offset:offset + size_bits // 8])
    return out


class RelaySerialTest(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.cable = Cable()
        self.addCleanup(self.cable.close)
        sender_device, relay_device = self.cable.devices
        # The relay's device by a link, which a replugged line points elsewhere (a USB adapter's device
        # coming back).
        self.relay_line = os.path.join(self.d.tmp, "relay-line")
        os.symlink(relay_device, self.relay_line)
        self.relay = Relay(self.d.tmp, args=("--serial", self.relay_line, "--serial-baud", "921600",
                                             *self.relay_args(self.d.tmp)))
        self.addCleanup(lambda: self.relay.stop())
        self.relay.wait_log(f"serial line {self.relay_line} open at 921600 baud, 8N1, no flow control")
        self.url = f"serial://{sender_device}?baud=921600"
        self.d.start_daemon()

    def relay_args(self, tmp):
        """The relay's options besides the line's."""
        return ()

    def tearDown(self):
        for text in (self.d.log(), self.relay.text()):
            self.assertFalse([l for l in text.splitlines() if "runtime error" in l or "Sanitizer" in l], text)

    def wait_for(self, what, check, timeout=20):
        """DaemonTestCase.wait_for, with the relay's log and the sessions' status too when it fails."""
        try:
            return super().wait_for(what, check, timeout)
        except AssertionError as e:
            status = self.d.tracery("status", check=False)
            raise AssertionError(f"{e}\n--- relay log ---\n{self.relay.text()}--- status ---\n{status.stdout}"
                                 f"{status.stderr}") from None

    def wait_relay_log(self, pattern):
        deadline = time.time() + 15
        while not re.search(pattern, self.relay.text()):
            self.assertLess(time.time(), deadline, f"no relay log line matching {pattern!r}:\n{self.relay.text()}")
            time.sleep(0.05)

    def emit(self, n):
        out = self.d.run([program("tests", "daemon-emitter"), "count", str(n)])
        self.assertIn(f"done {n}", out)

    def create(self, name, *args):
        path = self.out(name)
        out = self.d.tracery("create", name, "--set-url", self.url, "--local-copy", "--output", path, *args).stdout
        self.assertIn(f"traces go to the relay at {self.url}", out)
        self.d.tracery("enable-channel", "-u", "chan", "-s", name, "--subbuf-size", "16k", "--num-subbuf", "8")
        self.d.tracery("enable-event", "-u", "emit:*", "-s", name, "-c", "chan")
        return path

    def end(self, name):
        stop = self.d.tracery("stop", name).stdout
        self.d.tracery("destroy", name)
        self.relay.wait_log(f"/{name}-", "ended with BYE")
        return stop

    def assert_same_files(self, local, copy):
        files = sorted(f for f in os.listdir(local) if os.path.isfile(os.path.join(local, f)))
        self.assertIn("metadata", files)
        self.assertGreater(len(files), 1)
        for f in files:
            with open(os.path.join(local, f), "rb") as x, open(os.path.join(copy, f), "rb") as y:
                self.assertEqual(x.read(), y.read(), f)

    def test_session_over_the_line_is_the_local_copy(self):
        local = self.create("line")
        self.d.tracery("start", "line")
        self.emit(5_000)
        stop = self.end("line")
        counts = relay_counts(stop)
        self.assertGreater(counts["sent"], 0, stop)
        self.assertEqual(counts["confirmed"], counts["sent"], stop)
        (copy,) = self.relay.sessions("line")
        copy = os.path.join(copy, "ust")
        self.assert_same_files(local, copy)
        self.assertEqual(count_events(local), count_events(copy))
        self.assertGreater(count_events(copy)["events"], 0)
        self.wait_relay_log(r"link session \w+ closed by the (sender|relay) \(0 frames corrupted, 0 bytes of noise")

    def test_noise_is_skipped_and_counted(self):
        local = self.create("noisy")
        self.relay.wait_log("link session", "opened")
        time.sleep(0.5)  # the link idle: the noise falls between frames
        noise = b"\x00\x11line noise\xff" * 10
        # A false marker whose length claims 1000 bytes: the frames after it are found again within those.
        false_frame = MARKER + bytes([3, 0]) + bytes(8) + (1000).to_bytes(2, "little") + b"junk"
        self.cable.inject(1, noise + false_frame)
        self.d.tracery("start", "noisy")
        self.emit(5_000)
        stop = self.end("noisy")
        counts = relay_counts(stop)
        self.assertEqual(counts["confirmed"], counts["sent"], stop)
        (copy,) = self.relay.sessions("noisy")
        self.assert_same_files(local, os.path.join(copy, "ust"))
        self.wait_relay_log(r"link session \w+ closed by the (sender|relay) \(1 frames corrupted, "
                         f"{len(noise) + len(false_frame)} bytes of noise skipped meanwhile\\)")

    def test_line_pulled_mid_session_loses_frames_counted(self):
        local = self.create("pulled")
        self.d.tracery("start", "pulled")
        self.emit(5_000)
        self.wait_for("the first packets confirmed",
                      lambda: relay_counts(self.d.tracery("status", "pulled").stdout).get("confirmed", 0) > 0)
        self.cable.pull()
        self.emit(5_000)
        self.wait_for("bytes lost on the pulled line", lambda: self.cable.dropped > 0)
        time.sleep(0.3)
        self.cable.plug()
        self.emit(5_000)
        self.wait_for("a second connection", lambda: "2 connections" in self.d.tracery("status", "pulled").stdout)
        self.emit(2_000)
        stop = self.end("pulled")
        counts = relay_counts(stop)
        self.assertEqual(counts["confirmed"] + counts["unconfirmed"], counts["sent"], stop)
        lost = re.search(r"link session \w+ lost (\d+) frames from the sender \(frame (\d+) came where (\d+) was due\)",
                         self.relay.text())
        self.assertIsNotNone(lost, self.relay.text())
        self.assertEqual(int(lost.group(1)), int(lost.group(2)) - int(lost.group(3)))
        self.assertGreater(int(lost.group(1)), 0)
        self.assertIn(f"lost the relay at {self.url}", self.d.log())
        self.assertIn("again: the session goes on in its directory", self.d.log())
        dirs = self.relay.sessions("pulled")
        self.assertGreaterEqual(len(dirs), 2, dirs)
        # Each directory readable alone; every packet the relay wrote is one of the local copy's, whole.
        local_packets, relay_packets = set(), set()
        for stream in sorted(f for f in os.listdir(local) if f.startswith("chan_")):
            with open(os.path.join(local, stream), "rb") as f:
                data = f.read()
            local_packets |= {data[at:at + size // 8] for at, size, *_ in packets_of(os.path.join(local, stream))}
            for copy in dirs:
                if os.path.exists(os.path.join(copy, "ust", stream)):
                    relay_packets |= set(packets(os.path.join(copy, "ust"), stream))
        self.assertTrue(relay_packets)
        self.assertLessEqual(relay_packets, local_packets)
        for copy in dirs:
            self.assertGreater(count_events(os.path.join(copy, "ust"))["events"], 0, copy)
        # The packets missing from the relay's copies are among those sent and not confirmed.
        missing = len(local_packets - relay_packets)
        self.assertGreater(missing, 0, stop)
        self.assertLessEqual(missing, counts["unconfirmed"] + counts["dropped"], stop)
        events = count_events(local)["events"]
        relayed = sum(count_events(os.path.join(c, "ust"))["events"] for c in dirs)
        self.assertLess(relayed, events)

    def test_relay_line_replugged(self):
        self.create("replug")
        self.d.tracery("start", "replug")
        self.emit(2_000)
        self.wait_for("the first packets confirmed",
                      lambda: relay_counts(self.d.tracery("status", "replug").stdout).get("confirmed", 0) > 0)
        self.cable.unplug(1)
        self.relay.wait_log(f"serial line {self.relay_line}: the line hung up; opening it again")
        self.relay.wait_log(f"serial line {self.relay_line}: ", "; trying again every 500 ms")
        new_device = self.cable.plug_new(1)
        os.symlink(new_device, self.relay_line + ".new")
        os.replace(self.relay_line + ".new", self.relay_line)
        self.wait_for("the line opened again", lambda: self.relay.text().count(f"serial line {self.relay_line} open at") == 2)
        # The sender's next frames belong to a session the relay's end does not hold: RESET, and it connects again.
        self.emit(2_000)
        self.wait_for("a second connection", lambda: "2 connections" in self.d.tracery("status", "replug").stdout)
        self.emit(2_000)
        stop = self.end("replug")
        counts = relay_counts(stop)
        self.assertEqual(counts["confirmed"] + counts["unconfirmed"], counts["sent"], stop)
        self.assertIn("the relay's end lost frames of this link", self.d.log())
        dirs = self.relay.sessions("replug")
        self.assertEqual(len(dirs), 2, dirs)
        for copy in dirs:
            self.assertGreater(count_events(os.path.join(copy, "ust"))["events"], 0, copy)

    def test_bad_urls_and_options(self):
        for url, want in (("serial://ttyS1", "the device is an absolute path"),
                          ("serial:///dev/ttyS1?baud=1234", "baud '1234' is not one of 9600")):
            r = self.d.tracery("create", "bad", "--set-url", url, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(f"bad --set-url '{url}'", r.stderr)
            self.assertIn(want, r.stderr)
        r = self.d.tracery("create", "none", "--set-url", "serial:///dev/null-device-absent", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/dev/null-device-absent: No such file or directory", r.stderr)


class RelaySerialAuthTest(RelaySerialTest):
    """The relay's keys over the line: the challenge-response is in the relay protocol's frames."""

    def relay_args(self, tmp):
        self.secret = secrets.token_hex(32)
        self.keys = os.path.join(tmp, "keys")
        with open(self.keys, "w") as f:
            f.write(f"bench-board {self.secret}\n")
        os.chmod(self.keys, 0o600)
        return ("--auth-keys", self.keys)

    def test_key_over_the_line(self):
        refused = self.d.tracery("create", "nokey", "--set-url", self.url, check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("this relay takes authenticated senders only", refused.stderr)
        ca = os.path.join(self.d.tmp, "ca.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", os.path.join(self.d.tmp, "ca.key"), "-out", ca, "-subj", "/CN=ca", "-days", "1"],
                       check=True, capture_output=True, timeout=60)
        tls = self.d.tracery("create", "tls", "--set-url", self.url, "--relay-key", self.keys, "--relay-ca", ca,
                             check=False)
        self.assertNotEqual(tls.returncode, 0)
        self.assertIn("TLS is not used over a serial line", tls.stderr)
        local = self.create("keyed", "--relay-key", self.keys)
        self.relay.wait_log("authenticated as key bench-board")
        self.d.tracery("start", "keyed")
        self.emit(2_000)
        self.end("keyed")
        (copy,) = self.relay.sessions("keyed")
        self.assert_same_files(local, os.path.join(copy, "ust"))

    # The line's own tests run once, in RelaySerialTest.
    test_session_over_the_line_is_the_local_copy = None
    test_noise_is_skipped_and_counted = None
    test_line_pulled_mid_session_loses_frames_counted = None
    test_bad_urls_and_options = None
    test_relay_line_replugged = None


if __name__ == "__main__":
    unittest.main()
