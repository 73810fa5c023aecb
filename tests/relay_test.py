"""relay_test: a real tracery-relayd on loopback receiving a real trace (made
by tracery-bench in daemonless mode) from relay-send (tests/apps/relay_send.cpp,
which sends through control::relay::RelayConnection). Checks that babeltrace2
prints the relay's copy exactly as the original, that each stream's index
(LTTng's format) lists every packet with its offset, sizes and timestamps,
and that hostile or vanishing senders leave the relay running, log one line
each, and leave what was written readable."""
import os
import select
import shutil
import socket
import struct
import subprocess
import time
import unittest

from relaytest import RelaydTestCase
from tracetest import program, run_traced

MAGIC = 0x594C5254
HELLO, TRACE, METADATA, STREAM, PACKET, BYE = 1, 3, 4, 5, 6, 9
SYNC, SYNC_REPLY = 10, 11
TRACE_PATH = "ust/uid/1000/64-bit"


def frame(kind, body, version=1, magic=MAGIC):
    return struct.pack("<IHHI", magic, version, kind, len(body)) + body


def string(s):
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def hello(host, session, live_period_ns=0, flags=None):
    """HELLO of minor 0 (no flags), or of minor 1 with flags (1: a live session served on the plain port)."""
    return frame(HELLO, struct.pack("<HHQQ", 1, 0 if flags is None else 1, int(time.time() * 1e9), live_period_ns)
                 + string(host) + string(session) + (b"" if flags is None else struct.pack("<I", flags)))


def babeltrace2(path):
    p = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def read_index(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, major, minor, size = struct.unpack(">IIII", data[:16])
    entries = []
    for at in range(16, len(data) - size + 1, size):
        entries.append(struct.unpack(">9Q", data[at:at + size]))
    return (magic, major, minor, size, len(data)), entries


def packets_of(path):
    """(offset, packet bits, content bits, ts begin, ts end, discarded, class, instance, seq) of each
    packet of a Tracery stream file (ctf/packet.hpp)."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = [], 0
    while at + 84 <= len(data):
        sid, inst, tb, te, content, size, seq, disc = struct.unpack_from("<IQQQQQQQ", data, at + 20)
        out.append((at, size, content, tb, te, disc, sid, inst, seq))
        at += size // 8
    return out


@unittest.skipIf(shutil.which("babeltrace2") is None, "babeltrace2 is not installed")
class RelayTest(RelaydTestCase):
    @classmethod
    def make_traces(cls):
        cls.trace = os.path.join(cls.tmp, "original")
        # Small sub-buffers: many packets per stream; 128 of them hold all 20,000 events (about 330 KB) whether
        # or not the consumer keeps up.
        run_traced([program("bench", "tracery-bench"), "20000", "1", "ev"], cls.trace,
                   {"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "128"})

    def send(self, session, *extra, check=True):
        p = subprocess.run([program("tests", "relay-send"), "127.0.0.1", str(self.port), self.trace, "testhost", session,
                            *extra], capture_output=True, text=True, timeout=120)
        if check:
            self.assertEqual(p.returncode, 0, p.stderr)
        if not extra:
            # The relay reads on after the sender is gone: its log says when it is done.
            self.wait_log(f"({p.stdout.strip()})", "ended with BYE")
        return os.path.join(self.output, p.stdout.strip(), TRACE_PATH)

    def streams(self):
        return sorted(f for f in os.listdir(self.trace) if f != "metadata")

    def test_copy_reads_as_the_original(self):
        copy = self.send("whole")
        self.assertRegex(copy, r"/testhost/whole-\d{8}-\d{6}/")
        code, out, err = babeltrace2(self.trace)
        self.assertEqual(code, 0, err)
        code2, out2, err2 = babeltrace2(copy)
        self.assertEqual(code2, 0, err2)
        # babeltrace2 says nothing of either, or (when the recording lost events on a loaded machine) warns of
        # the same losses in both: the copy carries the original's discarded-event counts.
        self.assertEqual(err2.replace(copy, "TRACE"), err.replace(self.trace, "TRACE"))
        self.assertGreater(out.count("bench:ev"), 1000)
        self.assertEqual(out2, out)
        for name in self.streams():
            with open(os.path.join(self.trace, name), "rb") as a, open(os.path.join(copy, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        with open(os.path.join(self.trace, "metadata"), "rb") as a, open(os.path.join(copy, "metadata"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_index_lists_every_packet(self):
        copy = self.send("indexed")
        total = 0
        for name in self.streams():
            header, entries = read_index(os.path.join(copy, "index", name + ".idx"))
            expected = packets_of(os.path.join(self.trace, name))
            self.assertEqual(header, (0xC1F1DCC1, 1, 1, 72, 16 + 72 * len(expected)))
            self.assertEqual(entries, expected)
            total += len(entries)
        self.assertGreater(total, 10)

    def test_same_session_name_twice_gets_its_own_directory(self):
        a = self.send("twice")
        b = self.send("twice")
        self.assertNotEqual(a, b)
        self.assertEqual(babeltrace2(a)[1], babeltrace2(b)[1])

    def test_malformed_frames_close_only_that_connection(self):
        cases = [
            ("garbage", b"GET / HTTP/1.0\r\n\r\n", "bad magic"),
            ("version", frame(BYE, b"", version=9), "protocol version 9"),
            ("oversized", struct.pack("<IHHI", MAGIC, 1, PACKET, 0xFFFFFFFF), "over the maximum"),
            ("before-hello", frame(TRACE, struct.pack("<I", 1) + string("kernel")), "TRACE before HELLO"),
            ("traversal", hello("testhost", "evil") + frame(TRACE, struct.pack("<I", 1) + string("../../escape")),
             "TRACE: the path is not a relative path"),
            ("absolute", hello("testhost", "evil2") + frame(TRACE, struct.pack("<I", 1) + string("/tmp/x")),
             "TRACE: the path is not a relative path"),
            ("unknown-stream", hello("testhost", "evil3") + frame(PACKET, struct.pack("<I8Q", 5, 64, 64, 0, 0, 0, 0, 0, 0)
                                                                 + bytes(8)), "PACKET of unknown stream 5"),
            ("packet-size", hello("testhost", "evil4") + frame(PACKET, struct.pack("<I8Q", 5, 64, 64, 0, 0, 0, 0, 0, 0)
                                                               + bytes(7)), "PACKET: 7 bytes for a packet of 8"),
            ("second-hello", hello("testhost", "evil5") + hello("testhost", "evil5"), "a second HELLO"),
        ]
        for name, data, logged in cases:
            with self.subTest(name):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                port = s.getsockname()[1]
                s.sendall(data)
                # The relay closes the connection: EOF after any HELLO reply.
                got = b""
                while True:
                    r, _, _ = select.select([s], [], [], 10)
                    self.assertTrue(r, "the relay did not close the connection")
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
                s.close()
                self.wait_log(f":{port}", logged)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escape")))
        self.assertFalse(any("escape" in d for _, ds, _ in os.walk(self.output) for d in ds))
        # Still serving.
        code, out, err = babeltrace2(self.send("after-hostile"))
        self.assertEqual(code, 0, err)

    def test_vanished_sender_leaves_whole_packets(self):
        n = 5
        copy = self.send("vanished", "--vanish-after", str(n), "--half-frame")
        # Its connection's end is logged after every frame it sent was applied.
        self.wait_log("/vanished-", "closed without BYE, in the middle of a frame")
        entries = []
        for name in self.streams():
            path = os.path.join(copy, name)
            if not os.path.exists(path):
                continue
            _, e = read_index(os.path.join(copy, "index", name + ".idx"))
            self.assertEqual(os.path.getsize(path), sum(x[1] // 8 for x in e))
            self.assertEqual(e, packets_of(os.path.join(self.trace, name))[:len(e)])
            entries += e
        self.assertEqual(len(entries), n)
        code, out, err = babeltrace2(copy)
        self.assertEqual(code, 0, err)
        original = set(babeltrace2(self.trace)[1].splitlines())
        got = out.splitlines()
        self.assertGreater(len(got), 0)
        self.assertTrue(all(l.split(") ", 1)[1] in {o.split(") ", 1)[1] for o in original} for l in got))

    def test_killed_sender_leaves_what_it_sent_readable(self):
        n = 3
        p = subprocess.Popen([program("tests", "relay-send"), "127.0.0.1", str(self.port), self.trace, "testhost",
                              "killed", "--stall-after", str(n)], stdout=subprocess.PIPE, text=True)
        try:
            copy = os.path.join(self.output, p.stdout.readline().strip(), TRACE_PATH)
            index = os.path.join(copy, "index", self.streams()[0] + ".idx")
            deadline = time.time() + 10
            while (not os.path.exists(index) or os.path.getsize(index) < 16 + 72 * n) and time.time() < deadline:
                time.sleep(0.05)
        finally:
            p.kill()
            p.wait()
            p.stdout.close()
        self.wait_log("/killed-", "closed without BYE")
        _, entries = read_index(index)
        self.assertEqual(len(entries), n)
        code, out, err = babeltrace2(copy)
        self.assertEqual(code, 0, err)
        self.assertGreater(out.count("bench:ev"), 0)

    def test_silent_sender_does_not_block_others(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(hello("testhost", "slow")[:7])  # half a header, then nothing
        try:
            code, out, err = babeltrace2(self.send("beside-a-slow-one"))
            self.assertEqual(code, 0, err)
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
