"""relay_limits_test: what tracery-relayd holds from senders stays within its memory budget, and a sender stalled
in the middle of a frame is closed at its deadline. A real tracery-relayd (--memory-budget 64M --frame-timeout 2)
and 150 senders that each say HELLO, then send a PACKET of 16 MiB all but its last byte (2.4 GiB in all if the
relay took it): the relay's peak resident memory (VmHWM) stays under the budget plus a fixed overhead, it says
that its budget is reached, every stalled sender is closed by the deadline (one log line each, never before two
seconds after its frame began), and a sender that comes meanwhile (relay-send with a real trace) gets its whole
session written and readable by babeltrace2."""
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

from relaytest import Relay
from tracetest import program, run_traced

MAGIC = 0x594C5254
HELLO, PACKET = 1, 6
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


def hello(host, session):
    def string(s):
        return struct.pack("<H", len(s)) + s.encode()
    body = struct.pack("<HHQQ", 1, 0, int(time.time() * 1e9), 0) + string(host) + string(session)
    return frame_header(HELLO, len(body)) + body


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


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
        self.relay = Relay(self.tmp, args=["--memory-budget", "64M", "--frame-timeout", str(DEADLINE_S)])

    def tearDown(self):
        self.relay.stop()
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


if __name__ == "__main__":
    unittest.main()
