"""relay_limits_test: what tracery-relayd holds from senders stays within its memory budget, a sender stalled
in the middle of a frame is closed at its deadline, and a full disk holds its senders instead of closing them. A real tracery-relayd (--memory-budget 64M --frame-timeout 2)
and 150 senders that each say HELLO, then send a PACKET of 16 MiB all but its last byte (2.4 GiB in all if the
relay took it): the relay's peak resident memory (VmHWM) stays under the budget plus a fixed overhead, it says
that its budget is reached, every stalled sender is closed by the deadline (one log line each, never before two
seconds after its frame began), and a sender that comes meanwhile (relay-send with a real trace) gets its whole
session written and readable by babeltrace2.

A relay writing to a small tmpfs (root only) that fills while relay-send sends a real trace: the sender is told
(NOTICE write_failed, with the path and the error), its connection stays open and no other session directory
appears, the log says it once; once space is freed the writes resume (NOTICE write_resumed), every packet is
written once, whole, with its index entry, and babeltrace2 prints the copy as the original. A sender that leaves
while the disk is full: at the relay's end, the log counts the packets and bytes not written per stream, and
with those written they are all the packets it sent."""
import glob
import os
import re
import selectors
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from relay_test import packets_of, read_index
from relaytest import Relay
from tracetest import program, run_traced

MAGIC = 0x594C5254
HELLO, TRACE, METADATA, STREAM, PACKET = 1, 3, 4, 5, 6
MiB = 1024 * 1024
BUDGET = 64 * MiB
# What the relay holds besides the budget: its code and libraries (4 MiB), the loop's read buffer, each
# sender's connection and writer thread, the allocator's slack (measured: 6 MiB in all).
OVERHEAD = 24 * MiB
STALLED = 150
DEADLINE_S = 2
PACKET_BODY = 4 + 8 * 8 + 16 * MiB  # stream id, eight index fields, 16 MiB of packet


def frame_header(kind, length):
    return struct.pack("<IHHI", MAGIC, 1, kind, length)


def string(s):
    return struct.pack("<H", len(s)) + s.encode()


def frame(kind, body):
    return frame_header(kind, len(body)) + body


def hello(host, session):
    body = struct.pack("<HHQQ", 1, 0, int(time.time() * 1e9), 0) + string(host) + string(session)
    return frame_header(HELLO, len(body)) + body


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def no_sanitizer_report(test, relay):
    """The relay's log holds no sanitizer report (TRACERY_SANITIZE builds write them there)."""
    test.assertFalse([l for l in relay.text().splitlines() if "runtime error" in l or "Sanitizer" in l])


class Stalled:
    """A sender that says HELLO, then sends a 16 MiB PACKET all but its last byte, as fast as the relay takes it."""

    def __init__(self, port, n):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        self.sock.setblocking(False)
        self.head = hello("stalled", f"s{n}") + frame_header(PACKET, PACKET_BODY)
        self.left = PACKET_BODY - 1
        self.started = None  # when its PACKET's header was sent whole
        self.closed = None  # when the relay closed it

    def push(self, zeros):
        """Sends what the socket takes; False once the relay closed the connection."""
        try:
            while self.head:
                self.head = self.head[self.sock.send(self.head):]
            if self.started is None:
                self.started = time.monotonic()
            while self.left:
                self.left -= self.sock.send(zeros[:min(self.left, len(zeros))])
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class StalledSendersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-relay-limits-")
        # All the senders come from one address, which the per-sender limit of open sessions would stop
        # first: raised, so that the budget is what holds them.
        self.relay = Relay(self.tmp, args=["--memory-budget", "64M", "--frame-timeout", str(DEADLINE_S),
                                           "--max-sessions-per-sender", "1000"])

    def tearDown(self):
        self.relay.stop()
        no_sanitizer_report(self, self.relay)
        if not os.environ.get("TRACERY_KEEP_TRACE"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def test_stalled_senders_stay_within_the_budget_and_are_closed_at_their_deadline(self):
        trace = os.path.join(self.tmp, "original")
        run_traced([program("bench", "tracery-bench"), "5000", "1", "ev"], trace,
                   {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "64"})
        baseline = status_kib(self.relay.proc.pid, "VmRSS") * 1024

        senders = [Stalled(self.relay.port, n) for n in range(STALLED)]
        zeros = memoryview(bytes(256 * 1024))
        sel = selectors.DefaultSelector()
        for s in senders:
            sel.register(s.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, s)
        attack = time.monotonic()
        legit = None
        while len(sel.get_map()) and time.monotonic() - attack < 30:
            for key, events in sel.select(timeout=0.2):
                s = key.data
                gone = False
                if events & selectors.EVENT_READ:  # HELLO_REPLY, then the end
                    try:
                        gone = not s.sock.recv(4096)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except ConnectionResetError:
                        gone = True
                if not gone and events & selectors.EVENT_WRITE:
                    gone = not s.push(zeros)
                if gone:
                    s.closed = time.monotonic()
                    sel.unregister(s.sock)
                    s.sock.close()
            # Once the budget is reached, a sender with a real trace.
            if legit is None and "memory budget reached" in self.relay.text():
                legit = subprocess.Popen([program("tests", "relay-send"), "127.0.0.1", str(self.relay.port), trace,
                                          "legit", "meanwhile"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
        self.assertFalse(sel.get_map(), f"{len(sel.get_map())} stalled senders still connected after 30 s")
        peak = status_kib(self.relay.proc.pid, "VmHWM") * 1024

        sent = sum(PACKET_BODY - 1 - s.left for s in senders)
        self.assertGreater(sent, BUDGET, "the senders sent less than the budget: nothing was held back")
        if not os.environ.get("TRACERY_SANITIZE"):  # a sanitizer's allocator holds freed memory for a while
            self.assertLess(peak, BUDGET + OVERHEAD,
                            f"peak RSS {peak / MiB:.1f} MiB (at start {baseline / MiB:.1f} MiB), senders sent "
                            f"{sent / MiB:.0f} MiB")
        self.assertIsNotNone(legit, "the relay never said its budget was reached:\n" + self.relay.text())

        for s in senders:
            self.assertIsNotNone(s.started)
            self.assertGreaterEqual(s.closed - s.started, DEADLINE_S - 0.05)
        closings = re.findall(r"a frame not whole 2000 ms after its header \((\d+) of its (\d+) bytes came\)",
                              self.relay.text())
        self.assertEqual(len(closings), STALLED, self.relay.text())
        for came, size in closings:
            self.assertEqual(int(size), PACKET_BODY)
            self.assertLess(int(came), PACKET_BODY)

        out, err = legit.communicate(timeout=60)
        self.assertEqual(legit.returncode, 0, err)
        copy = os.path.join(self.relay.output, out.strip(), "ust/uid/1000/64-bit")
        self.relay.wait_log(f"({out.strip()})", "ended with BYE")
        original = subprocess.run(["babeltrace2", trace], capture_output=True, text=True, timeout=120)
        relayed = subprocess.run(["babeltrace2", copy], capture_output=True, text=True, timeout=120)
        self.assertEqual(relayed.returncode, 0, relayed.stderr)
        self.assertEqual(relayed.stdout, original.stdout)
        self.assertEqual(relayed.stdout.count("bench:ev"), 5000)


class TmpfsDisk:
    """A tmpfs of `size` mounted at `path` (made), filled but for `room` bytes by a file that free() removes."""

    def __init__(self, path, size, room):
        os.mkdir(path)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tracery-relay-test", path], check=True)
        self.path = path
        self.filler = os.path.join(path, "filler")
        st = os.statvfs(path)
        with open(self.filler, "wb") as f:
            f.write(bytes(st.f_bavail * st.f_frsize - room))

    def free(self):
        os.unlink(self.filler)

    def umount(self):
        subprocess.run(["umount", self.path], check=True)


@unittest.skipIf(os.geteuid() != 0, "mounting a tmpfs needs root")
@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class FullDiskTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-relay-disk-")
        # The relay writes on the tmpfs (TMP/disk); its log is in TMP.
        self.disk = TmpfsDisk(os.path.join(self.tmp, "disk"), "2m", 96 * 1024)
        self.relay = Relay(self.tmp, name="disk")

    def tearDown(self):
        try:
            self.relay.stop()
            no_sanitizer_report(self, self.relay)
        finally:
            self.disk.umount()
            if not os.environ.get("TRACERY_KEEP_TRACE"):
                shutil.rmtree(self.tmp, ignore_errors=True)

    def refusals(self):
        return [l for l in self.relay.text().splitlines() if "the disk refuses this session's writes" in l]

    def test_full_disk_holds_the_sender_and_writes_resume(self):
        trace = os.path.join(self.tmp, "original")
        run_traced([program("bench", "tracery-bench"), "20000", "1", "ev"], trace,
                   {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "128"})
        sender = subprocess.Popen([program("tests", "relay-send"), "127.0.0.1", str(self.relay.port), trace,
                                   "testhost", "full", "--notices"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        try:
            self.relay.wait_log("the disk refuses this session's writes")
            time.sleep(1.6)  # three more tries
            self.assertIsNone(sender.poll(), "the sender ended while the disk was full")
            self.assertEqual(len(self.refusals()), 1, self.relay.text())
            self.assertIn("No space left on device", self.refusals()[0])
            self.assertEqual(len(os.listdir(os.path.join(self.disk.path, "testhost"))), 1)
            self.disk.free()
            out, err = sender.communicate(timeout=60)
        finally:
            if sender.poll() is None:
                sender.kill()
                sender.wait()
        self.assertEqual(sender.returncode, 0, err)  # and the relay wrote every packet sent (relay-send checks)
        self.relay.wait_log(f"({out.strip()})", "ended with BYE")
        text = self.relay.text()
        self.assertEqual(len(self.refusals()), 1, text)
        self.assertEqual(text.count("the disk takes this session's writes again"), 1, text)
        self.assertNotIn("closed", text)
        self.assertEqual(glob.glob(os.path.join(self.disk.path, "testhost", "*")),
                         [os.path.join(self.disk.path, out.strip())])

        notices = re.findall(r"relay-send: notice (\d): (.*)", err)
        self.assertEqual([kind for kind, _ in notices], ["3", "4"], err)
        copy = os.path.join(self.disk.path, out.strip(), "ust/uid/1000/64-bit")
        self.assertIn(f"({copy}/", notices[0][1])
        self.assertIn("No space left on device", notices[0][1])

        streams = sorted(f for f in os.listdir(trace) if f != "metadata")
        for name in streams:
            _, entries = read_index(os.path.join(copy, "index", name + ".idx"))
            self.assertEqual(entries, packets_of(os.path.join(copy, name)), name)
            self.assertEqual(len(entries), len(packets_of(os.path.join(trace, name))), name)
        original = subprocess.run(["babeltrace2", trace], capture_output=True, text=True, timeout=120)
        relayed = subprocess.run(["babeltrace2", copy], capture_output=True, text=True, timeout=120)
        self.assertEqual(relayed.returncode, 0, relayed.stderr)
        self.assertEqual(relayed.stdout, original.stdout)

    def test_what_a_full_disk_kept_from_a_sender_gone_is_counted_at_the_end(self):
        packet_size = 8192
        sent = {"a_0": 40, "b_0": 25}
        s = socket.create_connection(("127.0.0.1", self.relay.port), timeout=10)
        s.sendall(hello("testhost", "gone"))
        s.recv(4096)  # HELLO_REPLY
        s.sendall(frame(TRACE, struct.pack("<I", 1) + string("t")) + frame(METADATA, struct.pack("<I", 1) + b"x" * 100))
        for n, (name, count) in enumerate(sent.items()):
            s.sendall(frame(STREAM, struct.pack("<II", n + 1, 1) + string(name)))
            for seq in range(count):
                index = struct.pack("<I8Q", n + 1, packet_size * 8, packet_size * 8, seq, seq, 0, 0, n, seq)
                s.sendall(frame(PACKET, index + bytes([seq % 256]) * packet_size))
        self.relay.wait_log("the disk refuses this session's writes")
        s.close()
        time.sleep(1.2)  # two more tries
        self.assertEqual(len(self.refusals()), 1)
        self.relay.stop()
        lost = [l for l in self.relay.text().splitlines() if "as the relay stops, not written" in l]
        self.assertEqual(len(lost), 1, self.relay.text())
        self.assertIn("No space left on device", lost[0])
        session = glob.glob(os.path.join(self.disk.path, "testhost", "gone-*"))[0]
        # What the relay read of it (the rest never left the socket's buffers): written whole, or counted.
        not_written_in_all = 0
        for name, count in sent.items():
            path = os.path.join(session, "t", name)
            written = 0
            if os.path.exists(path):
                written = len(read_index(os.path.join(session, "t", "index", name + ".idx"))[1])
                self.assertEqual(os.path.getsize(path), written * packet_size)
            m = re.search(rf" (\d+) packets \(([^)]*)\) of t/{name};", lost[0])
            not_written = int(m.group(1)) if m else 0
            if m:
                self.assertEqual(m.group(2), f"{not_written * packet_size // 1024} KiB")
            self.assertLessEqual(written + not_written, count, lost[0])
            not_written_in_all += not_written
        self.assertGreater(not_written_in_all, 0, lost[0])


if __name__ == "__main__":
    unittest.main()
